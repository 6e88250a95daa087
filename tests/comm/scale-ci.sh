#!/bin/sh
# SPDX-License-Identifier: MIT
# The heavy half of tests/comm/test_scale.c, too long for make check: SHM_RANKS
# ranks (1024 unless given) run every collective right over shm, and
# TCP_RANKS (1024 unless given) over tcp, each rank moving at most 1 MB at
# set-up and holding a few dozen descriptors after a ring all-reduce (about
# 50 s each on 2 cores). From a built
# tree (make tests/comm/test-scale first):
#     tests/comm/scale-ci.sh [SHM_RANKS [TCP_RANKS]]
set -u
B=${TT_BUILDDIR:-.}
[ -x "$B/tests/comm/test-scale" ] || { echo "FAIL: no $B/tests/comm/test-scale (make tests/comm/test-scale first)"; exit 1; }
status=0
run() { # TRANSPORT RANKS
    start=$(date +%s)
    if TT_SCALE_RANKS=$2 CK_RUN_CASE=$1 "$B/tests/comm/test-scale" >"scale-$1.log" 2>&1; then
        echo "scale: $2 ranks over $1 passed in $(($(date +%s) - start)) s"
    else
        echo "scale: $2 ranks over $1 FAILED after $(($(date +%s) - start)) s; scale-$1.log:"
        tail -20 "scale-$1.log"
        status=1
    fi
}
run shm "${1:-1024}"
run tcp "${2:-1024}"
exit $status
