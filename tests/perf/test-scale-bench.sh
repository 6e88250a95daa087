#!/bin/sh
# SPDX-License-Identifier: MIT
# perf/scale/scale-bench --quick, a check of the script: 2 and 4 ranks of
# every system this machine has (and 2 simulated hosts as root). tutti's
# jobs must be made and every figure of theirs filled in, the socket
# bytes counted from outside the library; the table, the model and (with
# matplotlib) the plot written.
set -u
B=${TT_BUILDDIR:-.}
S=${TT_SRCDIR:-.}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
command -v cc >/dev/null 2>&1 || { echo "SKIP: no cc to build the probes"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
python3 "$S/perf/scale/scale-bench" --tutti "$B" --quick --out "$WORK" >"$WORK/log" 2>&1 ||
    { tail -n 20 "$WORK/log"; echo "FAIL: scale-bench --quick exited $?"; exit 1; }
cat "$WORK/log"
python3 - "$WORK/scale.csv" <<'PY' || exit 1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
mine = [r for r in rows if r["system"] == "tutti" and r["layout"] == "one host"]
assert [r["ranks"] for r in mine] == ["2", "4"], f"tutti's jobs: {[r['ranks'] for r in mine]}"
for r in mine:
    assert r["status"] == "ok", f"tutti, {r['ranks']} ranks: {r['status']} {r['note']}"
    for key in ("create_s", "rss_mb_max", "pss_mb_mean", "fds_rank0", "shm_mb_host", "setup_kb_rank0", "setup_kb_max"):
        assert r[key] and float(r[key]) > 0, f"tutti, {r['ranks']} ranks: no {key}"
# 4 ranks exchange more at set-up than 2, each with its peers
assert float(mine[1]["setup_kb_max"]) > float(mine[0]["setup_kb_max"]), "set-up bytes do not grow with the ranks"
PY
[ -s "$WORK/model.md" ] || { echo "FAIL: no model.md"; exit 1; }
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    [ -s "$WORK/scale.png" ] || { echo "FAIL: matplotlib is here but no scale.png"; exit 1; }
fi
echo "scale-bench --quick: tutti's figures at 2 and 4 ranks, model and plot written"
