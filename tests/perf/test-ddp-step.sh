#!/bin/sh
# SPDX-License-Identifier: MIT
# perf/ddp/ddp-step.py's two references take their turns beside the
# backends: on 2 ranks a short job with tutti, gloo, no-comm and sum-only
# must report a step and a CPU time for each, each reference's hook having
# seen the same whole number of buckets every step (--check-hooks); sum-only
# on 3 ranks is refused, saying why. Skips (77) when tutti.torch
# cannot be imported (tests/lib/python-env.sh).
. "${TT_SRCDIR:-.}/tests/lib/python-env.sh"
tt_torch_backend || exit $?
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM
"$TT_BUILDDIR/tutti-run" -n 2 "$PYTHON" "$TT_SRCDIR/perf/ddp/ddp-step.py" --steps 2 --warmup 1 --bucket-view \
    --backends tutti,gloo,no-comm,sum-only --check-hooks >"$out" 2>&1 || {
    cat "$out"
    echo "FAIL: the job with both references failed"
    exit 1
}
"$PYTHON" - "$out" <<'PY' || exit 1
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
assert lines, "no JSON line"
d = json.loads(lines[-1])
names = list(d["backends"])
assert names == ["tutti", "gloo", "no-comm", "sum-only"], names
for b, v in d["backends"].items():
    assert v["step_ms"] > 0 and v["cpu_ms"] > 0 and len(v["steps_ms"]) == 2, (b, v)
print("references:", ", ".join(f"{b} {v['step_ms']:.0f} ms" for b, v in d["backends"].items()))
PY
if "$TT_BUILDDIR/tutti-run" -n 3 "$PYTHON" "$TT_SRCDIR/perf/ddp/ddp-step.py" --steps 1 --warmup 0 \
    --backends tutti,sum-only >"$out" 2>&1; then
    echo "FAIL: sum-only ran on 3 ranks"
    exit 1
fi
grep -q "sum-only models a 2-rank all-reduce" "$out" || {
    cat "$out"
    echo "FAIL: sum-only on 3 ranks did not say why it refused"
    exit 1
}
echo "sum-only on 3 ranks: refused"
