#!/bin/sh
# SPDX-License-Identifier: MIT
# perf/report/report in a real browser: two short tutti-bw runs, a tutti-perf -J
# sweep and a tutti-explain --json schedule become one page, which headless
# Chromium must render: its DOM must hold the heat maps, the topology, the
# sweeps, the diff of the two runs, the collective's plot and the schedule's
# animation, and its screenshot must not be blank. Skips (exit 77) where
# Chromium is absent or cannot start (a container or chroot may not allow
# it), saying why.
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
    "$BROWSER" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d -p "$WORK")" "$@" 2>"$WORK/chrome.err"
}
chrome --dump-dom about:blank >/dev/null || {
    echo "SKIP: $BROWSER cannot start here: $(grep -m 1 -i -e error -e fatal "$WORK/chrome.err" || tail -n 1 "$WORK/chrome.err")"
    exit 77
}

for run in a b; do
    "$B/tutti-run" -n 2 "$B/tutti-bw" -t shm,tcp -s 256K -e 64K -f 16 --budget 0.05 --json >"$WORK/$run.json" ||
        fail "tutti-bw run $run"
done
"$B/tutti-run" -n 2 "$B/tutti-perf" -b 8 -e 64K -f 32 -n 5 -w 1 -J "$WORK/perf.json" >/dev/null || fail "tutti-perf -J"
"$B/tutti-explain" -C allreduce -a rabenseifner -n 6 -s 6K --json >"$WORK/explain.json" || fail "tutti-explain --json"
"$B/tutti-run" -n 2 "$B/tutti-explain" -C allreduce --measure -b 8 -e 16K --json >"$WORK/measure.json" ||
    fail "tutti-explain --measure --json"
inputs="$WORK/a.json $WORK/b.json $WORK/perf.json $WORK/explain.json $WORK/measure.json"
$PY "$S/perf/report/report" $inputs -o "$WORK/report.html" || fail "perf/report/report"
grep -q 'src="http\|href="http\|<script src' "$WORK/report.html" && fail "the page loads something from elsewhere"

chrome --dump-dom "file://$WORK/report.html" >"$WORK/dom.html" || fail "chromium could not load the page"
for id in runs heatmap-shm-uni heatmap-tcp-lat topology-shm sweep-bw-shm sweep-lat-tcp diff-table perf-busbw \
    anim-D anim-D-picture anim-D-forward explain-sweep-E; do
    grep -q "id=\"$id\"" "$WORK/dom.html" || fail "the rendered page has no element $id"
done
svgs=$(grep -o '<svg' "$WORK/dom.html" | wc -l)
[ "$svgs" -ge 10 ] || fail "only $svgs SVG figures in the rendered page"
chrome --window-size=1400,2400 --screenshot="$WORK/shot.png" "file://$WORK/report.html" >/dev/null
[ -s "$WORK/shot.png" ] || fail "no screenshot"
set -- $($PY "$S/tests/png_stats.py" "$WORK/shot.png") || fail "the screenshot is not a PNG"
echo "screenshot: ${1}x$2, ink $3 of the pixels, $4 colours; $svgs figures; inputs:$(echo " $inputs" | sed "s| $WORK/| |g")"
awk -v ink="$3" -v colours="$4" 'BEGIN { exit !(ink > 0.02 && colours > 100) }' || fail "the screenshot is (nearly) blank"
[ -n "${TT_REPORT_KEEP:-}" ] && cp "$WORK/report.html" "$WORK/shot.png" "$TT_REPORT_KEEP"
exit 0
