# SPDX-License-Identifier: MIT
# Headless Chromium for the browser tests, sourced by them after they set
# WORK (a scratch folder they remove): finds the browser, defines chrome()
# with the flags a container or chroot needs, and exits 77 saying why when
# the browser is absent or cannot start here.
BROWSER=$(command -v chromium || command -v chromium-browser) || {
    echo "SKIP: chromium is not installed (apt-get install chromium)"
    exit 77
}
# A container's /dev/shm may be too small for the browser: it uses /tmp instead.
chrome() {
    "$BROWSER" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d -p "$WORK")" "$@" 2>"$WORK/chrome.err"
}
chrome --dump-dom about:blank >/dev/null || {
    echo "SKIP: $BROWSER cannot start here: $(grep -m 1 -i -e error -e fatal "$WORK/chrome.err" || tail -n 1 "$WORK/chrome.err")"
    exit 77
}
