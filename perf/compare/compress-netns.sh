#!/bin/sh
# SPDX-License-Identifier: MIT
# Compression where it pays: two hosts (network namespaces) joined by a
# 1 Gbit/s link, one rank each. A 64 MiB fp32 all-reduce, dense and through
# each compressed scheme (with error feedback), timed by tutti-perf; prints
# a Markdown table and fails unless 1-bit two-phase is at least 8x faster
# than dense. Skips (exit 77) without the privilege to make namespaces.
#
#     sudo perf/compare/compress-netns.sh          # from the top of a built tree
set -u
B=${TT_BUILDDIR:-.}
RATE_MBIT=${RATE_MBIT:-1000}
SIZE=64M
. "${TT_SRCDIR:-.}/tests/lib/netns.sh"

# time (us, out of place) and compression ratio of one scheme, from rank 0's CSV
run() {
    name=$1
    shift
    netns_run "$name" 2 "$B/tutti-perf" --collective allreduce -a 3 -b $SIZE -e $SIZE -n 3 -w 1 -c 0 --csv "$@"
    awk -F, 'NR == 2 { print $7, ($15 == "" ? 1 : $15) }' "$WORK/$name.out.0"
}

echo "| scheme | time (ms) | effective busbw (GB/s) | bytes ratio | speed-up |"
echo "|---|---:|---:|---:|---:|"
dense=
status=0
for scheme in dense topk:0.01 sign int8 int4; do
    if [ $scheme = dense ]; then out=$(run dense); else out=$(run "$scheme" --compress $scheme); fi
    [ -n "$out" ] || { cat "$WORK"/*.err.* >&2; exit 1; }
    set -- $out
    us=$1 ratio=$2
    [ -n "$dense" ] || dense=$us
    awk -v s="$scheme" -v us="$us" -v r="$ratio" -v d="$dense" 'BEGIN {
        printf "| %s | %.1f | %.3f | %.1f | %.1f |\n", s, us / 1000, 67108864 / (us * 1e-6) / 1e9, r, d / us }'
    if [ $scheme = sign ] && ! awk -v us="$us" -v d="$dense" 'BEGIN { exit !(d / us >= 8) }'; then
        echo "FAIL: 1-bit two-phase is less than 8x faster than dense" >&2
        status=1
    fi
done
exit $status
