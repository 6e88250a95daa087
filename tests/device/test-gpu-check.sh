#!/bin/sh
# SPDX-License-Identifier: MIT
# gpu-check.sh's own behaviour, without a GPU: its plan fits the two runs'
# budgets and checks the GPU machine's CPU kernels (the suites' reference)
# before the suites; with a stand-in nvidia-smi that sees a GPU and stand-in programs
# (one step skips as the real suites do without a usable driver, one hangs
# with a rank process of its own, the rest pass), run 1 kills the hung step
# at its limit and names it, fails the skip, leaves no process behind and
# writes summary.txt and one log archive (nothing else); a run whose
# budget is nearly spent skips the steps that would overrun it, saying so;
# a run killed from outside still writes its summary at once; and with no
# GPU seen the check skips (77).
set -u
src=$(cd "$(dirname "$0")" && pwd)
kit=$(mktemp -d)
trap 'rm -rf "$kit"' EXIT
fail() {
    echo "gpu-check self-test: $*"
    [ ! -f "${sum:-/nonexistent}" ] || cat "$sum"
    exit 1
}

# The plan: the limits of each run, and the summary's reserve, fit its budget.
plan=$(sh "$src/gpu-check.sh" --plan) || fail "--plan failed"
for run in 1 2; do
    budget=$(echo "$plan" | sed -n "s/^run $run (at most \([0-9]*\) s):/\1/p")
    total=$(echo "$plan" | sed -n '/total of the limits/s/.*limits: \([0-9]*\) s, \([0-9]*\) s.*/\1 \2/p' |
        sed -n "${run}p")
    [ -n "$budget" ] && [ -n "$total" ] || fail "the plan does not show run $run's budget and total: $plan"
    set -- $total
    [ $(($1 + $2)) -le "$budget" ] || fail "run $run's limits ($1 s + $2 s) exceed its $budget s"
done
echo "$plan" | grep -q '^run 1 (at most 450 s)' && echo "$plan" | grep -q '^run 2 (at most 180 s)' ||
    fail "the runs' budgets are not 450 s and 180 s"
# The CPU kernels the suites take their expected bits from are checked on
# the GPU machine itself, before the first suite that compares with them.
first_cpu=$(echo "$plan" | grep -n ' \./test-reduce$' | head -1 | cut -d: -f1)
first_user=$(echo "$plan" | grep -n -E '^  (kernels|quantizers|staged|compressed|direct) ' | head -1 | cut -d: -f1)
[ -n "$first_cpu" ] && [ -n "$first_user" ] && [ "$first_cpu" -lt "$first_user" ] ||
    fail "run 1 does not check the CPU's kernels against the portable ones before the suites use them"

# The stand-in kit.
cp "$src/gpu-check.sh" "$kit/"
mkdir "$kit/bin"
cat >"$kit/bin/nvidia-smi" <<'SMI'
#!/bin/sh
[ -n "${FAKE_NO_GPU:-}" ] && exit 9
echo "GPU 0: Stand-in GPU (UUID: GPU-0)"
SMI
cat >"$kit/test-device" <<'SUITE'
#!/bin/sh
[ "${1:-}" = --list ] && { printf 'launch_errors\nkernels\n'; exit 0; }
case ${CK_RUN_CASE:-} in
launch_errors) echo "1..0 # SKIP no CUDA device: CUDA driver version is insufficient" ;;
*) echo "tutti[0] debug coll: device calls hold streams with stream memory operations"
   echo "tutti[0] debug coll: allreduce: direct run"
   printf '1..1\nok 1 - %s\n' "${CK_RUN_CASE:-}" ;;
esac
SUITE
cat >"$kit/test-device-life" <<'SUITE'
#!/bin/sh
[ "${1:-}" = --list ] && { echo lazy_kernel; exit 0; }
case ${CK_RUN_CASE:-} in
lazy_kernel) sleep 300 & echo $! >"$HANG_PID"; wait ;;
*) printf '1..1\nok 1 - %s\n' "${CK_RUN_CASE:-}" ;;
esac
SUITE
for prog in tutti-info nccl-gpu test-reduce bin/compute-sanitizer; do
    printf '#!/bin/sh\necho stand-in\n' >"$kit/$prog"
done
cp /bin/true "$kit/libnccl.so.2" # ldd reads it
chmod +x "$kit/bin/nvidia-smi" "$kit/bin/compute-sanitizer" "$kit/test-device" "$kit/test-device-life" \
    "$kit/tutti-info" "$kit/nccl-gpu" "$kit/test-reduce"
export PATH="$kit/bin:$PATH" HANG_PID="$kit/hang.pid"

# Run 1 with every limit 3 s: the skip fails, the hang is named, the rest passes.
export OUT="$kit/out" GPU_CHECK_LIMIT=3
sh "$kit/gpu-check.sh" 1 >/dev/null 2>&1
rc=$?
sum="$OUT/summary.txt"
[ -f "$sum" ] || fail "run 1 wrote no summary.txt"
[ $rc -eq 1 ] || fail "exit status $rc, not 1"
grep -q '^launch_errors: FAILED (skipped with a GPU present' "$sum" || fail "a skip with a GPU passed"
grep -q '^lazy_kernel: hung: killed at its 3s limit' "$sum" || fail "the hung step was not named"
grep -q '^many_streams: passed' "$sum" || fail "a passing step did not pass"
grep -q 'device calls hold streams with stream memory operations' "$sum" || fail "the hold mechanism is not said"
grep -q 'allreduce: direct run' "$sum" || fail "the paths are not said"
[ "$(ls "$OUT" | wc -l)" -le 8 ] || fail "more than 8 files in OUT: $(ls "$OUT")"
[ "$(ls "$OUT")" = "$(printf 'logs.tar.gz\nsummary.txt')" ] || fail "OUT holds $(ls "$OUT"), not the summary and the archive"
tar -tzf "$OUT/logs.tar.gz" | grep -q 'lazy_kernel.log' || fail "the archive lacks the hung step's log"
pid=$(cat "$HANG_PID")
sleep 1
state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || true)
if [ -n "$state" ] && [ "$state" != Z ]; then # a zombie is dead, waiting to be reaped
    kill "$pid"
    fail "the hung step's rank outlived it"
fi

# A budget that leaves time for one step: the others are skipped, said.
rm -rf "$OUT"
GPU_CHECK_BUDGET=14 sh "$kit/gpu-check.sh" 1 >/dev/null 2>&1
grep -q '^load: ' "$sum" || fail "with a small budget, the first step did not run"
grep -q '^compressed: skipped (only' "$sum" || fail "a step that would overrun the budget was not skipped"

# Killed from outside in the middle of the hung step: the summary is there at once.
rm -rf "$OUT" "$HANG_PID"
GPU_CHECK_LIMIT=60 sh "$kit/gpu-check.sh" 1 >/dev/null 2>&1 &
check=$!
for _ in $(seq 20); do
    [ -s "$HANG_PID" ] && break
    sleep 1
done
kill -TERM "$check"
for _ in $(seq 5); do
    [ -f "$sum" ] && break
    sleep 1
done
grep -q 'stopped from outside.*in step lazy_kernel' "$sum" || fail "killed from outside: no summary naming the step"
# The archive comes after the summary (under load, seconds after).
wait "$check" 2>/dev/null
[ -f "$OUT/logs.tar.gz" ] || fail "killed from outside: no log archive"

# No GPU seen: nothing checked, exit 77.
rm -rf "$OUT"
FAKE_NO_GPU=1 sh "$kit/gpu-check.sh" 1 >/dev/null 2>&1
rc=$?
[ $rc -eq 77 ] || fail "with no GPU seen: exit status $rc, not 77"
grep -q 'no GPU here' "$sum" || fail "with no GPU seen, the summary does not say so"
echo "gpu-check: the plan fits 450 s and 180 s; hangs are killed and named, skips fail, the summary and one archive always come"
