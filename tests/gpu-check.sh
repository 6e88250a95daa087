#!/bin/sh
# SPDX-License-Identifier: MIT
# The GPU checks of the device path, run on a GPU machine from a kit made by
# tests/gpu-kit.sh (this script sits beside the programs). Each step writes
# STEP.log into the output folder ($OUT, else gpu-check-out/) and a line
# into summary.txt: passed, FAILED (exit status) or skipped (exit 77).
#
#   gpu-check.sh [STEP ...]     steps: info suite memcheck racecheck bw perf
#                               (default: all, about 10 minutes at most)
# Exit status: 1 if a step failed, else 0.
set -u
kit=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$kit/gpu-check-out}
mkdir -p "$out"
cd "$kit"
failed=0
PATH=$PATH:/usr/local/cuda/bin # compute-sanitizer
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no GPU here (nvidia-smi -L failed): nothing checked" | tee "$out/summary.txt"
    exit 77
fi

# step NAME SECONDS 'COMMAND': runs the shell command with a time limit,
# its output into NAME.log.
step() {
    name=$1 limit=$2 cmd=$3
    start=$(date +%s)
    { echo "\$ $cmd"; timeout "$limit" sh -c "$cmd"; } >"$out/$name.log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    case $rc in
    0) verdict=passed
        # A TAP suite that found no GPU plans no tests and exits 0.
        grep -q '^1\.\.0 # SKIP' "$out/$name.log" && verdict=skipped ;;
    77) verdict=skipped ;;
    124) verdict="FAILED (over ${limit}s)" ;;
    *) verdict="FAILED (exit $rc)" ;;
    esac
    case $verdict in FAILED*) failed=1 ;; esac
    echo "$name: $verdict in ${took}s" | tee -a "$out/summary.txt"
}

# Every collective on device buffers, 2 and 4 ranks sharing the GPU, every
# element checked, run directly over cuda_ipc and then staged through host
# memory; then the 1-bit compressed all-reduce on them.
perf='for n in 2 4; do for ipc in 1 0; do echo "## $n ranks, TUTTI_CUDA_IPC=$ipc";
  TUTTI_CUDA_IPC=$ipc ./tutti-run -n $n ./tutti-perf --memory device -c 1 -b 8 -e 64M -f 8 -n 10 -w 2 || exit 1; done;
  ./tutti-run -n $n ./tutti-perf --memory device --compress sign -b 1M -e 64M -f 8 -n 5 -w 1 || exit 1; done'
sanitize='compute-sanitizer --target-processes all --error-exitcode 3 --tool'

[ $# -gt 0 ] || set -- info suite memcheck racecheck bw perf
for s in "$@"; do
    case $s in
    info) step info 30 nvidia-smi ;;
    suite) step suite 300 ./test-device ;;
    memcheck) step memcheck 580 "$sanitize memcheck ./test-device" ;;
    racecheck) step racecheck 580 "$sanitize racecheck ./test-device" ;;
    bw) step bw 300 ./tutti-bw ;;
    perf) step perf 580 "$perf" ;;
    *) echo "gpu-check: no step '$s' (info suite memcheck racecheck bw perf)" >&2; exit 2 ;;
    esac
done
exit $failed
