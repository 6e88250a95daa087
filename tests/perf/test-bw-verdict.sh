#!/bin/sh
# SPDX-License-Identifier: MIT
# tutti-bw's verdicts and fit check, end to end on this machine, whatever
# its load: the header states the machine's state; each verdict quotes a
# figure its table shows (a sweep row's bw_med, or a matrix cell), is
# never "normal" above its baseline, and states the CPU other processes
# took; a --fit warns, on stderr and in the tuning file, exactly when its
# own JSON shows a line missing an exchange by more than a factor of 2 or
# models off by more than 50%.
set -u
B=${TT_BUILDDIR:-.}
S=${TT_SRCDIR:-.}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$B/tutti-run" -n 2 "$B/tutti-bw" -t shm,tcp --sweep -b 16K -e 1M -f 8 --budget 0.05 >"$WORK/sweep.out" 2>&1 ||
    { cat "$WORK/sweep.out"; fail "tutti-bw --sweep"; }
"$B/tutti-run" -n 2 "$B/tutti-bw" -t shm --matrix -s 256K --budget 0.05 >"$WORK/matrix.out" 2>&1 ||
    { cat "$WORK/matrix.out"; fail "tutti-bw --matrix"; }
$PY - "$WORK/sweep.out" "$WORK/matrix.out" <<'PYEOF' || exit 1
import re, sys
sweep, matrix = open(sys.argv[1]).read(), open(sys.argv[2]).read()
def fail(why, text):
    print("FAIL: %s\n%s" % (why, text))
    sys.exit(1)
for text in (sweep, matrix):
    if not re.search(r"^# \d+ ranks? on \d+ CPUs? of this host \([\d.]+ per CPU\)", text, re.M):
        fail("no statement of ranks per CPU", text)
    for v in re.finditer(r"^is this normal\? (\w+) (\d+)->(\d+) \((\w+)\): ([\d.]+) GB/s \((.*?)\)(?: = ([\d.]+) of .*?)?: "
                         r"(normal|below the usual|low|above its baseline|withheld|unknown)", text, re.M):
        tp, gbps, figure, frac, verdict = v.group(1), v.group(5), v.group(6), v.group(7), v.group(8)
        if "while %s was measured, other processes kept" % tp not in text:
            fail("no statement of other processes' CPU time for " + tp, text)
        if frac and float(frac) > 1 and verdict == "normal":
            fail("normal above its baseline", v.group(0))
        m = re.match(r"the sweep's bw_med at (\d+) (B|KiB|MiB), its best row", figure)
        if m:
            size = int(m.group(1)) << {"B": 0, "KiB": 10, "MiB": 20}[m.group(2)]
            table = text[text.index("# %s sweep" % tp):v.start()]
            rows = {int(r[0]): float(r[3]) for r in (l.split() for l in table.splitlines()) if r and r[0].isdigit()}
            # The quote has 2 decimals and the table 3, each rounded from the
            # same value: they may differ by both roundings (1.0153 is 1.015
            # in the table and 1.02 quoted).
            if abs(rows.get(size, -1) - float(gbps)) > 0.0051 or max(rows.values()) != rows[size]:
                fail("%s quotes %s GB/s at %d B, not the best bw_med of its table %s" % (tp, gbps, size, rows), text)
        elif figure.startswith("the one-way matrix's cell"):
            block = text[text.index("Unidirectional"):text.index("Bidirectional")]
            row = [l.split() for l in block.splitlines() if l.split()[:1] == [v.group(2)]][0]
            if row[1 + int(v.group(3))].rstrip("~!") != gbps:
                fail("the verdict's figure %s is not the cell %s->%s" % (gbps, v.group(2), v.group(3)), block)
        else:
            fail("the verdict names no figure of a table: " + figure, text)
        print("%s: %s GB/s, %s: %s" % (tp, gbps, figure, verdict))
    if "is this normal?" not in text:
        fail("no verdict", text)
PYEOF

"$B/tutti-run" -n 2 "$B/tutti-bw" --fit "$WORK/tuning" --fit-max 4K --fit-reps 3 -n 3 --budget 0.05 --json \
    >"$WORK/fit.json" 2>"$WORK/fit.err" || { cat "$WORK/fit.err"; fail "tutti-bw --fit"; }
$PY - "$WORK/fit.json" "$WORK/fit.err" "$WORK/tuning" <<'PYEOF' || exit 1
import json, statistics, sys
fit = json.load(open(sys.argv[1]))["fit"]
err, tuning = open(sys.argv[2]).read(), open(sys.argv[3]).read()
miss = {l["class"]: max(max(p["fitted_us"] / p["exchange_us"], p["exchange_us"] / p["fitted_us"])
                        for p in l["points"]) for l in fit["links"]}
link = statistics.median(a["median_error_link_fit"] for a in fit["algorithms"])
after = statistics.median(a["median_error_after"] for a in fit["algorithms"])
# Each reason the fit does not explain its data, and the line that must say it.
reasons = ["%s: the line alpha + beta n misses" % c for c, m in miss.items() if m > 2]
reasons += ["the fitted links' predictions of the all-reduce times are off by"] if link > 0.5 else []
reasons += ["with its corrections, the model's predictions of a second pass are off by"] if after > 0.5 else []
poor = bool(reasons)
print("fit: worst misses %s, link fit off by %.0f%%, after %.0f%%: %s" % (
    ", ".join("%s x%.2f" % cm for cm in miss.items()), 100 * link, 100 * after,
    "warned" if poor else "explains its data"))
said = "WARNING: this fit does not explain its data"
if fit.get("explains_data") is not (not poor) or (said in err) != poor or (said in tuning) != poor:
    print("FAIL: explains_data %s, stderr %s, file %s:\n%s" % (fit.get("explains_data"), said in err,
                                                              said in tuning, err))
    sys.exit(1)
for r in reasons:
    if r not in err or "# " + r not in tuning or r not in fit.get("warnings", ""):
        print("FAIL: the warning does not say '%s':\n%s" % (r, err))
        sys.exit(1)
PYEOF
exit 0
