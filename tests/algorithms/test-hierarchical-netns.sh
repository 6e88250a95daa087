#!/bin/sh
# SPDX-License-Identifier: MIT
# Two hosts of two ranks each, in two network namespaces joined by a veth
# pair limited to 2 Gbit/s by tc (netem, or tbf where the kernel has no
# netem): the hierarchical all-reduce of
# 64 MiB must beat the flat ring, and the measured ring/hierarchical ratio
# must be within 25% of what the cost model predicts for that link.
# Skips (exit 77) where namespaces cannot be made: not root, no ip or tc,
# or a kernel or container that refuses them; and where other jobs keep the
# CPUs too busy for the link-bound ring to reach its time on the wire.
set -u
B=${TT_BUILDDIR:-.}
RATE_MBIT=2000
SIZE=64M
. "${TT_SRCDIR:-.}/tests/lib/netns.sh"

# Both algorithms, and the model, at one slice size.
export TUTTI_SLICE_BYTES=256K

# One job of 4 ranks (0-1 on host A, 2-3 on host B); prints rank 0's time in us.
run_job() {
    netns_run "$1" 4 env TUTTI_ALGO="$1" "$B/tutti-perf" --collective allreduce -a 3 -b $SIZE -e $SIZE -n 4 -w 1 --csv
    awk -F, 'NR == 2 { if ($10 != 0) exit 1; print $7 }' "$WORK/$1.out.0" || {
        echo "$1: wrong results" >&2
        return 1
    }
}

# The model, told the link's rate: tcp at RATE_MBIT, one link per host.
echo "tcp 50 $(awk "BEGIN { print $RATE_MBIT / 8000 }") 10" >"$WORK/tuning"
predict() {
    TUTTI_TUNING_FILE="$WORK/tuning" "$B/tutti-explain" -C allreduce -n 4 --nodes 2 -s $SIZE --compare |
        awk -v a="$1" '$1 == a { t = $7; if ($8 == "ms") t *= 1000; print t }'
}
pring=$(predict ring) && phier=$(predict hierarchical) || exit 1

# Alternating runs, the best of each kept: other jobs share the CPUs, and
# under load every time stretches (up to 5x was seen on a busy 2-core
# machine), so a fixed number of runs judged the load, not the model. At
# least 3 rounds; then stop once the ring's best is within 15% of its time
# on the wire (the ring is link-bound: slower means the CPUs were taken)
# and the last round improved neither best by more than 5%. A machine that
# does not get there in 6 rounds, or whose best ring after 3 is still half
# again its time on the wire, is too busy to time the link: skip, saying so.
ring= hier= settled=0
for i in 1 2 3 4 5 6; do
    r=$(run_job ring) && h=$(run_job hierarchical) && [ -n "$r" ] && [ -n "$h" ] || {
        cat "$WORK"/*.err.* >&2
        exit 1
    }
    echo "run $i: ring $r us, hierarchical $h us"
    settled=$(awk -v i="$i" -v br="$ring" -v bh="$hier" -v r="$r" -v h="$h" -v pr="$pring" 'BEGIN {
        improved = br != "" && (r < br / 1.05 || h < bh / 1.05)
        nr = (br == "" || r < br) ? r : br
        print (i >= 3 && nr <= 1.15 * pr && !improved) ? 1 : 0 }')
    ring=$(awk -v a="$ring" -v b="$r" 'BEGIN { print (a == "" || b < a) ? b : a }')
    hier=$(awk -v a="$hier" -v b="$h" 'BEGIN { print (a == "" || b < a) ? b : a }')
    [ "$settled" = 1 ] && break
    [ "$i" -ge 3 ] && awk -v r="$ring" -v pr="$pring" 'BEGIN { exit !(r > 1.5 * pr) }' && break
done
if [ "$settled" != 1 ]; then
    echo "SKIP: the machine is too busy to time the link: after $i rounds the best ring took $ring us," \
        "against $pring us on the wire, or the bests were still falling"
    exit 77
fi

echo "measured: ring $ring us, hierarchical $hier us; predicted: ring $pring us, hierarchical $phier us"
awk -v r="$ring" -v h="$hier" -v pr="$pring" -v ph="$phier" 'BEGIN {
    measured = r / h; predicted = pr / ph; off = measured / predicted - 1
    printf "ring/hierarchical: measured %.2f, predicted %.2f (%+.0f%%)\n", measured, predicted, 100 * off
    if (h >= r) { print "FAIL: hierarchical is not faster than the ring"; exit 1 }
    if (off > 0.25 || off < -0.25) { print "FAIL: more than 25% from the model"; exit 1 }
}'
