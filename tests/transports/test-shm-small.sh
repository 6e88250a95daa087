#!/bin/sh
# SPDX-License-Identifier: MIT
# Docker's default /dev/shm of 64 MiB, in a mount namespace of its own: 8
# ranks on one host run a 64 MiB all-to-all over shm (the pool is scaled
# down at creation, said once, and reserved: never SIGBUS), and a /dev/shm
# too small for even that is an error at creation naming the room needed
# and the fixes; and 64 ranks over shm alone share the default host budget,
# every pair connected.
set -u
B=${TT_BUILDDIR:-.}
[ "$(id -u)" = 0 ] || { echo "SKIP: mounting a tmpfs on /dev/shm in a mount namespace needs root"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare(1) (util-linux) is not installed"; exit 77; }
unshare -m true 2>/dev/null || { echo "SKIP: this container may not make mount namespaces (unshare -m)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
export TUTTI_TRANSPORTS=shm TUTTI_TIMEOUT=120
run() { # SIZE LOG ARGS...: tutti-run under a /dev/shm of SIZE
    size=$1 log=$2
    shift 2
    unshare -m sh -c 'mount -t tmpfs -o size=$0 tmpfs /dev/shm && exec "$@"' "$size" \
        "$B/tutti-run" "$@" >"$log" 2>&1
}
run 64m "$WORK/a2a" -n 8 "$B/tutti-perf" --collective alltoall -b 64M -e 64M -n 1 -w 0 -c 1
rc=$?
grep -q "Out of bounds values : 0 OK" "$WORK/a2a" && [ $rc = 0 ] ||
    { echo "FAIL: 8 ranks' 64 MiB all-to-all under a 64 MiB /dev/shm (exit $rc):"; tail -20 "$WORK/a2a"; exit 1; }
grep -q "some pairs get smaller slots" "$WORK/a2a" ||
    { echo "FAIL: the smaller pool was not said:"; tail -20 "$WORK/a2a"; exit 1; }
echo "64 MiB /dev/shm: 8 ranks' 64 MiB all-to-all is right; the log says:"
grep -m1 "smaller slots" "$WORK/a2a"
run 64k "$WORK/tiny" -n 8 "$B/tutti-perf" --collective allreduce -b 8 -e 8 -n 1 -w 0 -c 1
rc=$?
[ $rc != 0 ] && grep -q "need at least" "$WORK/tiny" && grep -q "shm-size" "$WORK/tiny" &&
    ! grep -qi "bus error" "$WORK/tiny" ||
    { echo "FAIL: a 64 KiB /dev/shm (exit $rc):"; tail -20 "$WORK/tiny"; exit 1; }
echo "64 KiB /dev/shm: refused at creation:"
grep -m1 "need at least" "$WORK/tiny"
# A host budget too small for full slots to every pair, with shm the only
# transport: regions given back when two ranks offer at once leave holes,
# and every pair must still find room (each peer keeps its smallest region
# at the pool's end), whatever the pieces. 64 ranks' all-to-all connects
# every pair.
run 1g "$WORK/crowd" -n 64 "$B/tutti-perf" --collective alltoall -b 8 -e 64K -f 8 -n 1 -w 0 -c 1
rc=$?
grep -q "Out of bounds values : 0 OK" "$WORK/crowd" && [ $rc = 0 ] ||
    { echo "FAIL: 64 ranks' all-to-all over shm alone in the default host budget (exit $rc):"; tail -20 "$WORK/crowd"; exit 1; }
echo "64 ranks over shm alone in the default host budget: every pair connected, the all-to-all right"
