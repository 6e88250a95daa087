#!/bin/sh
# SPDX-License-Identifier: MIT
# tutti-bw on a slow link: two network namespaces joined by a veth pair
# limited to 20 Mbit/s (tests/lib/netns.sh), one rank each. A bandwidth batch
# of 32 MiB takes 13 s there, so with batches of a fixed size every figure
# would run a minute past its --budget; batches sized to the budget keep
# the run (the tcp matrices at 1 MiB and the sweep from 64 KiB to 1 MiB,
# about ten figures of 0.5 s) well within 90 s, every figure measured.
# Skips (exit 77) where namespaces cannot be made.
set -u
B=${TT_BUILDDIR:-.}
RATE_MBIT=20
. "${TT_SRCDIR:-.}/tests/lib/netns.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

t0=$(date +%s)
netns_run slow 2 "$B/tutti-bw" -t tcp -s 1M -l 8 -b 64K -e 1M -f 16 -n 3 --budget 0.5 --json
took=$(($(date +%s) - t0))
echo "tutti-bw -t tcp at $RATE_MBIT Mbit/s took $took s"
$PY - "$WORK/slow.out.0" "$RATE_MBIT" <<'PYEOF' || { cat "$WORK"/slow.err.*; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
tp = [t for t in d["transports"] if t["name"] == "tcp"][0]
assert tp["status"] == "measured", tp["status"]
cells = tp["matrices"]["uni"]["cells"]
assert len(cells) == 2 and all(c["median"] > 0 for c in cells), cells
rows = tp["sweeps"][0]["rows"]
assert [r["bytes"] for r in rows] == [65536, 1048576], rows
print("one-way %.4f and %.4f GB/s at 1 MiB on a %s Mbit/s link" % (cells[0]["median"], cells[1]["median"], sys.argv[2]))
PYEOF
[ "$took" -le 90 ] || {
    echo "FAIL: tutti-bw took $took s on the slow link (its batches are not sized to the budget)"
    exit 1
}
