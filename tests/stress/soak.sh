#!/bin/sh
# SPDX-License-Identifier: MIT
# The soak, run from CI: 10,000 random collectives on 4 ranks over shm and
# over tcp, each result checked (tests/stress/soak.c), then a shorter run of each
# under valgrind: no leak, no invalid access. Every run also checks that a
# rank's descriptors stop growing once its calls have met every peer (they
# are made at first use), that destroy closes every one the communicator
# opened, and that no shared segment was left.
# usage: tests/stress/soak.sh [ITERS] [VALGRIND_ITERS]   (in the build tree)
iters=${1:-10000}
vg_iters=${2:-300}
status=0
for tp in shm,tcp tcp; do
    start=$(date +%s)
    TUTTI_TRANSPORTS=$tp ./tests/stress/soak -n "$iters" -p 4 || status=1
    echo "soak over $tp: $(( $(date +%s) - start )) s"
done
if ! command -v valgrind > /dev/null; then
    echo "soak: valgrind is not installed; the leak run is skipped"
    exit $status
fi
logs=${TMPDIR:-/tmp}/tutti-soak-vg.$$
mkdir -p "$logs"
for tp in shm,tcp tcp; do
    start=$(date +%s)
    # Every rank is a forked child: valgrind follows it and checks it at its exit.
    TUTTI_TRANSPORTS=$tp TUTTI_TIMEOUT=600 valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --log-file="$logs/vg.%p" \
        ./tests/stress/soak -n "$vg_iters" -p 4 || status=1
    if grep -l "ERROR SUMMARY: [1-9]\|definitely lost\|indirectly lost\|Invalid" "$logs"/vg.* > /dev/null 2>&1; then
        cat "$logs"/vg.*
        status=1
    fi
    rm -f "$logs"/vg.*
    echo "soak under valgrind over $tp: $(( $(date +%s) - start )) s"
done
rmdir "$logs"
exit $status
