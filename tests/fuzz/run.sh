#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs every libFuzzer target (a build configured with CC=clang --enable-fuzz)
# for SECONDS each (default 60), from the committed seeds; new inputs go to a
# scratch corpus. A crash leaves its input in tests/fuzz/crashes/TARGET/ of
# the build tree: copy it to the source tree's, fix the cause, and make check
# replays it from then on. Exit status 1 if any target crashed.
# usage: tests/fuzz/run.sh [SECONDS]  (in the --enable-fuzz build tree)
secs=${1:-60}
src=${TT_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
status=0
for t in star hello tcp shm id tuning topo-xml config; do
    work=tests/fuzz/work/$t
    crashes=tests/fuzz/crashes/$t
    mkdir -p "$work" "$crashes"
    extra=""
    [ "$t" = topo-xml ] && extra="$src/tests/fixtures"
    dict=""
    [ -f "$src/tests/fuzz/$t.dict" ] && dict="-dict=$src/tests/fuzz/$t.dict"
    start=$(date +%s)
    # shellcheck disable=SC2086
    if ./tests/fuzz/fuzz-$t -max_total_time="$secs" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" $dict "$work" "$src/tests/fuzz/corpus/$t" $extra \
        > "tests/fuzz/work/$t.log" 2>&1; then
        result=clean
    else
        result="CRASHED (input in $crashes/)"
        status=1
        tail -40 "tests/fuzz/work/$t.log"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "tests/fuzz/work/$t.log")
    echo "fuzz $t: $(( $(date +%s) - start )) s, ${runs:-?} runs, $result"
done
exit $status
