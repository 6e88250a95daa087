#!/bin/sh
# SPDX-License-Identifier: MIT
# tutti-explain --html in a real browser: the pages of all-reduce and of
# broadcast, opened from their files in headless Chromium with no server,
# are driven through their own controls by tests/tools/explain-page-check.js,
# which checks every picture of every algorithm on 3, 8 and 16 ranks (no
# overlapping text, every arrow labelled, the ring a ring, trees by level,
# the butterfly's pairs); the page must load nothing from elsewhere, and a
# screenshot of it must not be blank. Skips (exit 77) where Chromium is
# absent or cannot start, saying why.
set -u
B=${TT_BUILDDIR:-.}
S=${TT_SRCDIR:-.}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
BROWSER=$(command -v chromium || command -v chromium-browser) || {
    echo "SKIP: chromium is not installed (apt-get install chromium)"
    exit 77
}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
# A container's /dev/shm may be too small for the browser: it uses /tmp instead.
chrome() {
    timeout 300 "$BROWSER" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d -p "$WORK")" "$@" 2>"$WORK/chrome.err"
}
chrome --dump-dom about:blank >/dev/null || {
    echo "SKIP: $BROWSER cannot start here: $(grep -m 1 -i -e error -e fatal "$WORK/chrome.err" || tail -n 1 "$WORK/chrome.err")"
    exit 77
}

for coll in allreduce broadcast; do
    "$B/tutti-explain" -C $coll --html "$WORK/$coll.html" 2>"$WORK/explain.err" || fail "tutti-explain -C $coll --html: $(cat "$WORK/explain.err")"
    grep -q 'src="http\|href="http\|<script src\|<link ' "$WORK/$coll.html" && fail "the $coll page loads something from elsewhere"
    # The checker goes in last, after the page's own scripts have drawn it.
    sed '$d' "$WORK/$coll.html" >"$WORK/$coll-check.html"
    { printf '<script>\n'; cat "$S/tests/tools/explain-page-check.js"; printf '</script></body></html>\n'; } >>"$WORK/$coll-check.html"
    chrome --dump-dom "file://$WORK/$coll-check.html" >"$WORK/$coll-dom.html" || fail "chromium could not load the $coll page"
    result=$(sed -n '/<pre id="check">/,/<\/pre>/p' "$WORK/$coll-dom.html" | sed 's/<[^>]*>//g')
    [ -n "$result" ] || fail "the check did not run on the $coll page: $(grep -m 3 -i error "$WORK/chrome.err")"
    echo "$coll: $(echo "$result" | head -n 1)"
    echo "$result" | grep -qx PASS || fail "$(echo "$result" | sed 1d)"
done

chrome --window-size=1400,1600 --screenshot="$WORK/shot.png" "file://$WORK/allreduce.html" >/dev/null
[ -s "$WORK/shot.png" ] || fail "no screenshot"
set -- $($PY "$S/tests/perf/png_stats.py" "$WORK/shot.png") || fail "the screenshot is not a PNG"
echo "screenshot: ${1}x$2, ink $3 of the pixels, $4 colours"
awk -v ink="$3" -v colours="$4" 'BEGIN { exit !(ink > 0.02 && colours > 100) }' || fail "the screenshot is (nearly) blank"
[ -n "${TT_EXPLAIN_PAGE_KEEP:-}" ] && cp "$WORK"/*.html "$WORK/shot.png" "$TT_EXPLAIN_PAGE_KEEP"
exit 0
