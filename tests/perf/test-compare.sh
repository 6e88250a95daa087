#!/bin/sh
# SPDX-License-Identifier: MIT
# perf/compare/compare as a newcomer runs it, cut to tutti over shm: every
# file it says it wrote is there (the plot a real PNG, drawn with
# matplotlib), and where no python has matplotlib it says so and claims no
# plot; the noise it reports comes from two repeats, and one repeat says
# that it cannot know the noise.
set -u
B=${TT_BUILDDIR:-.}
S=${TT_SRCDIR:-.}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
cd "$B" || fail "no build tree at $B"

# Every file named on the "# wrote" line exists; prints their names.
wrote() {
    line=$(grep '^# wrote ' "$1") || fail "compare does not say what it wrote: $(tail -n 3 "$1")"
    for f in $(echo "${line#\# wrote }" | tr ',' ' '); do
        [ -s "$f" ] || fail "compare says it wrote $f, which is not there"
        echo "$f"
    done
}
cut="--quick --ranks 2 --systems tutti-shm --collectives allreduce"
$PY "$S/perf/compare/compare" $cut --repeats 2 --out "$WORK/two" >"$WORK/two.txt" 2>&1 ||
    fail "compare --repeats 2: $(tail -n 5 "$WORK/two.txt")"
files=$(wrote "$WORK/two.txt") || exit 1
grep -q '^# noise: at 1 MiB and up, repeats of one system and size differed by a median of' "$WORK/two.txt" ||
    fail "no noise from two repeats: $(grep noise "$WORK/two.txt")"
if $PY -c 'import matplotlib' 2>/dev/null; then
    echo "$files" | grep -q 'busbw-2.png$' || fail "matplotlib is here, but compare drew no plot"
    set -- $($PY "$S/tests/perf/png_stats.py" "$WORK/two/busbw-2.png") || fail "busbw-2.png is not a PNG"
    echo "plot: ${1}x$2, ink $3"
fi

mkdir -p "$WORK/hide/matplotlib"
echo 'raise ImportError("hidden by tests/perf/test-compare.sh")' >"$WORK/hide/matplotlib/__init__.py"
PYTHONPATH="$WORK/hide" $PY "$S/perf/compare/compare" $cut --repeats 1 --out "$WORK/one" >"$WORK/one.txt" 2>&1 ||
    fail "compare --repeats 1: $(tail -n 5 "$WORK/one.txt")"
files=$(wrote "$WORK/one.txt") || exit 1
grep -q '^# no plot: no python here has matplotlib' "$WORK/one.txt" || fail "compare does not say why it drew no plot"
! ls "$WORK/one" | grep -q busbw || fail "a plot without matplotlib?"
grep -q '^# noise: not known from one repeat' "$WORK/one.txt" && ! grep -q '^# noise: .*%' "$WORK/one.txt" ||
    fail "noise from one repeat: $(grep noise "$WORK/one.txt")"
echo "two repeats: $(grep '^# noise' "$WORK/two.txt"); one repeat without matplotlib: wrote $(echo $files | wc -w) files"
exit 0
