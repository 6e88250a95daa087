#!/bin/sh
# SPDX-License-Identifier: MIT
# gpu-check.sh's own verdicts, without a GPU: a stand-in nvidia-smi that
# sees one, and stand-in suites with a case that skips (as the real suites
# do without a usable driver), one that hangs, with a rank process of its
# own, and one that passes, and a tutti-bw whose GPU rows were not measured.
# The skips and the hang must fail the check, the hang must name its case
# and leave no process behind, and with no GPU seen the check must skip (77).
set -u
src=$(cd "$(dirname "$0")" && pwd)
kit=$(mktemp -d)
trap 'rm -rf "$kit"' EXIT
cp "$src/gpu-check.sh" "$kit/"
mkdir "$kit/bin"
cat >"$kit/bin/nvidia-smi" <<'SMI'
#!/bin/sh
[ -n "${FAKE_NO_GPU:-}" ] && exit 9
echo "GPU 0: Stand-in GPU (UUID: GPU-0)"
SMI
cat >"$kit/test-device" <<'SUITE'
#!/bin/sh
[ "${1:-}" = --list ] && { printf 'quick\nhangs\n'; exit 0; }
case ${CK_RUN_CASE:-} in
quick) echo "1..0 # SKIP no CUDA device: CUDA driver version is insufficient" ;;
hangs) sleep 300 & echo $! >"$OUT/rank.pid"; wait ;;
esac
SUITE
cat >"$kit/test-device-life" <<'SUITE'
#!/bin/sh
[ "${1:-}" = --list ] && { echo fine; exit 0; }
printf '1..1\nok 1 - fine\n'
SUITE
cat >"$kit/tutti-run" <<'RUN'
#!/bin/sh
shift 2 # -n N
exec "$@"
RUN
cat >"$kit/tutti-bw" <<'BW'
#!/bin/sh
echo "gpu: no NVIDIA driver or GPU found: host<->device rows not measured"
BW
chmod +x "$kit/bin/nvidia-smi" "$kit/test-device" "$kit/test-device-life" "$kit/tutti-run" "$kit/tutti-bw"
export OUT="$kit/out" PATH="$kit/bin:$PATH" GPU_CHECK_LIMIT=3
sh "$kit/gpu-check.sh" suite bw >/dev/null 2>&1
rc=$?
sum="$OUT/summary.txt"
fail() {
    echo "gpu-check verdicts: $*"
    cat "$sum"
    exit 1
}
[ $rc -eq 1 ] || fail "exit status $rc, not 1"
grep -q '^test-device.quick: FAILED (skipped with a GPU present' "$sum" || fail "a skip with a GPU passed"
grep -q '^test-device.hangs: FAILED (hung: killed after 3s)' "$sum" || fail "the hung case was not named"
grep -q '^test-device-life.fine: passed' "$sum" || fail "a passing case did not pass"
grep -q '^bw: FAILED (skipped with a GPU present' "$sum" || fail "GPU rows not measured passed"
pid=$(cat "$OUT/rank.pid")
sleep 1
state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || true)
if [ -n "$state" ] && [ "$state" != Z ]; then # a zombie is dead, waiting to be reaped
    kill "$pid"
    fail "the hung case's rank outlived it"
fi
FAKE_NO_GPU=1 sh "$kit/gpu-check.sh" suite >/dev/null 2>&1
rc=$?
[ $rc -eq 77 ] || fail "with no GPU seen: exit status $rc, not 77"
echo "gpu-check: skips and hangs fail with a GPU present, the hung case is named, no GPU skips"
