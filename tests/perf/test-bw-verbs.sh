#!/bin/sh
# SPDX-License-Identifier: MIT
# tutti-bw -t verbs: the benchmark drives whatever transport the build has
# through its ops table, so over the libibverbs stand-in of tests/fakes/fakeverbs
# (two simulated hosts) it must fill the verbs matrices and sweep with links
# of class NET, and judge them against the stand-in port's rate (4x HDR,
# 25 GB/s) read through libibverbs. Skips (exit 77) where the stand-in was
# not built (no verbs support in this build).
set -u
B=${TT_BUILDDIR:-.}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
[ -n "${TT_FAKEVERBS:-}" ] && [ -f "$TT_FAKEVERBS" ] || {
    echo "SKIP: the libibverbs stand-in is not built: no verbs transport (apt-get install libibverbs-dev, then configure)"
    exit 77
}
export TTFAKE_FABRIC=ttfake-bwtest-$$ TUTTI_IBVERBS_LIB="$TT_FAKEVERBS"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; rm -f /dev/shm/$TTFAKE_FABRIC /dev/shm/$TTFAKE_FABRIC-*' EXIT INT TERM
"$B/tutti-run" -n 2 --nodes 2 "$B/tutti-bw" -t verbs -s 256K -b 4K -e 1M -f 16 --budget 0.05 --json \
    >"$WORK/bw.json" 2>"$WORK/err" || { echo "FAIL: tutti-bw -t verbs"; cat "$WORK/err"; exit 1; }
$PY - "$WORK/bw.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
tp = [t for t in d["transports"] if t["name"] == "verbs"]
assert tp and tp[0]["status"] == "measured", "verbs was not measured: %s" % tp
tp = tp[0]
cells = tp["matrices"]["uni"]["cells"]
assert len(cells) == 2 and all(c["class"] == "NET" and c["median"] > 0 for c in cells), cells
rows = tp["sweeps"][0]["rows"]
assert [r["bytes"] for r in rows] == [4096, 65536, 1048576], rows
v = tp["verdicts"][0]
assert "fakeib0" in v["basis"] and abs(v["expected_gbps"] - 25.0) < 1e-6, v
print("verbs: one-way %.2f and %.2f GB/s at 256 KiB; %s: %.2f GB/s = %.2f of %.0f GB/s (%s)" % (
    cells[0]["median"], cells[1]["median"], v["class"], v["measured_gbps"], v["fraction"], v["expected_gbps"], v["basis"]))
PYEOF
