#!/bin/sh
# SPDX-License-Identifier: MIT
# perf/report/report in a real browser: two short tutti-bw runs, a tutti-perf -J
# sweep and a tutti-explain --json schedule become one page, which headless
# Chromium must render: its DOM must hold the summary of the links first,
# the heat maps, the topology, the sweeps, the diff of the two runs, the
# collective's plot and the schedule's animation, and its screenshot must
# not be blank. Then the picture is measured in the browser
# (tests/perf/report_layout.js): no text over other text or out of its figure,
# every heat-map cell labelled and coloured so that noise looks like noise,
# both directions of every graph edge. Skips (exit 77) where Chromium is
# absent or cannot start (a container or chroot may not allow it), saying
# why.
set -u
B=${TT_BUILDDIR:-.}
S=${TT_SRCDIR:-.}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
. "$S/tests/lib/chromium.sh"

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
for id in summary runs heatmap-shm-uni heatmap-tcp-lat topology-shm sweep-bw-shm sweep-lat-tcp diff-table perf-busbw \
    anim-D anim-D-picture anim-D-forward explain-sweep-E; do
    grep -q "id=\"$id\"" "$WORK/dom.html" || fail "the rendered page has no element $id"
done
sed 's/id="runs".*//' "$WORK/dom.html" | grep -q 'id="summary"' || fail "the summary of the links is not first"
svgs=$(grep -o '<svg' "$WORK/dom.html" | wc -l)
[ "$svgs" -ge 10 ] || fail "only $svgs SVG figures in the rendered page"
chrome --window-size=1400,2400 --screenshot="$WORK/shot.png" "file://$WORK/report.html" >/dev/null
[ -s "$WORK/shot.png" ] || fail "no screenshot"
set -- $($PY "$S/tests/perf/png_stats.py" "$WORK/shot.png") || fail "the screenshot is not a PNG"
echo "screenshot: ${1}x$2, ink $3 of the pixels, $4 colours; $svgs figures; inputs:$(echo " $inputs" | sed "s| $WORK/| |g")"
awk -v ink="$3" -v colours="$4" 'BEGIN { exit !(ink > 0.02 && colours > 100) }' || fail "the screenshot is (nearly) blank"

# The picture itself, measured in the browser: these runs and made-up ones
# of 4 ranks (graph diagonals that cross, a slow rank among cells that
# differ by noise) and of 8 ranks on 2 hosts, where numbers that find no
# room may be left off if the figure says so.
$PY "$S/tests/perf/report_fixture.py" 4 1 >"$WORK/bw4.json" && $PY "$S/tests/perf/report_fixture.py" 8 2 >"$WORK/bw8.json" ||
    fail "tests/perf/report_fixture.py"
check_page() { # name, --partial-edges or "", the results
    name=$1 partial=$2
    shift 2
    $PY "$S/perf/report/report" "$@" -o "$WORK/$name.html" >/dev/null || fail "perf/report/report for the $name page"
    $PY "$S/tests/perf/report_layout.py" inject "$WORK/$name.html" "$S/tests/perf/report_layout.js" "$WORK/$name-check.html" ||
        fail "injecting the layout check"
    chrome --window-size=1400,2400 --dump-dom "file://$WORK/$name-check.html" >"$WORK/$name-dom.html" ||
        fail "chromium could not load the $name page"
    verdict=$($PY "$S/tests/perf/report_layout.py" judge "$WORK/$name-dom.html" $partial)
    status=$?
    echo "the $name page: $verdict"
    [ "$status" -eq 0 ] || fail "the $name page's picture"
}
check_page runs "" $inputs "$WORK/bw4.json"
check_page eight-ranks --partial-edges "$WORK/bw8.json"
[ -n "${TT_REPORT_KEEP:-}" ] && cp "$WORK/report.html" "$WORK/shot.png" "$TT_REPORT_KEEP"
exit 0
