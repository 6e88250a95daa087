#!/bin/sh
# SPDX-License-Identifier: MIT
# The GPU checks of the device path, run on a GPU machine from a kit made by
# tests/gpu-kit.sh (this script sits beside the programs). Each check writes
# NAME.log into the output folder ($OUT, else gpu-check-out/) and a line into
# summary.txt: passed, or FAILED and why. Where nvidia-smi sees a GPU, a
# suite that skips (no usable driver, say) is a failure, not a pass.
#
#   gpu-check.sh [STEP ...]
#
# Steps (default: all of them, about 35 minutes; run them a few at a time
# where a session is limited, OUT keeps collecting):
#   info       nvidia-smi: GPUs, driver, compute mode, MPS (1 min)
#   suite      test-device and test-device-life case by case, each with its
#              own limit, so a hang names its case (12 min)
#   variants   cases again under CUDA_MODULE_LOADING=EAGER and =LAZY,
#              CUDA_DEVICE_MAX_CONNECTIONS=1, CUDA_LAUNCH_BLOCKING=1 and
#              TUTTI_CUDA_GATE=kernel (10 min)
#   sanitize   compute-sanitizer memcheck and racecheck on the one-process
#              kernel cases only: the ranks' waiting gates make it time out
#              on the multi-rank ones (5 min)
#   bw         tutti-bw -t gpu on 2 ranks: copies, the reduction kernels,
#              cuda_ipc peer rows (2 min)
#   perf       every collective on device buffers, 2 and 4 ranks sharing the
#              GPU, direct and staged, every element checked (5 min)
#   mps        ranks sharing the GPU without and with MPS: what time-slicing
#              costs (3 min)
# GPU_CHECK_LIMIT=SECONDS replaces every case's own limit.
# Exit status: 1 if a check failed, 77 if no GPU is seen, else 0.
set -u
kit=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$kit/gpu-check-out}
mkdir -p "$out"
cd "$kit" || exit 2
failed=0
PATH=$PATH:/usr/local/cuda/bin
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no GPU here (nvidia-smi -L failed): nothing checked" | tee -a "$out/summary.txt"
    exit 77
fi

# verdict LOG RC LIMIT: passed, or FAILED and why. A GPU is present, so a
# suite or tool that skipped (exit 77, a TAP plan of no tests, a skipped
# test, tutti-bw's "not measured") did not check anything and fails.
verdict() {
    case $2 in
    0) if grep -q -E '^1\.\.0 # SKIP|^ok .* # SKIP|not measured' "$1"; then
        echo "FAILED (skipped with a GPU present: $(grep -m1 -o -E 'SKIP.*|[^:]*not measured' "$1"))"
    else
        echo passed
    fi ;;
    77) echo "FAILED (skipped with a GPU present: $(tail -n 1 "$1"))" ;;
    124 | 137) echo "FAILED (hung: killed after ${3}s)" ;;
    *) echo "FAILED (exit $2)" ;;
    esac
}

# run NAME SECONDS 'COMMAND': the shell command in its own process group
# (timeout kills the ranks it forked too), its output into NAME.log.
run() {
    name=$1 limit=$2 cmd=$3
    start=$(date +%s)
    { echo "\$ $cmd"; timeout -k 10 "$limit" sh -c "$cmd"; } >"$out/$name.log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    said=$(verdict "$out/$name.log" "$rc" "$limit")
}

step() {
    run "$@"
    case $said in FAILED*) failed=1 ;; esac
    echo "$1: $said in ${took}s" | tee -a "$out/summary.txt"
}

# A known hazard, measured but not counted: its outcome is reported.
probe() {
    run "$@"
    echo "$1: $said in ${took}s (measured, not counted)" | tee -a "$out/summary.txt"
}

# Seconds one case of PROGRAM may take.
limit_of() {
    [ -z "${GPU_CHECK_LIMIT:-}" ] || {
        echo "$GPU_CHECK_LIMIT"
        return
    }
    case $1 in
    direct | staged | compressed | big_skewed | recreate | two_comms | streams) echo 420 ;;
    *) echo 240 ;;
    esac
}

# cases PROGRAM TAG 'ENV' [CASE ...]: each case of PROGRAM (default: all it
# lists) on its own, with ENV set.
cases() {
    prog=$1 tag=$2 env=$3
    shift 3
    # shellcheck disable=SC2046 # one case a word
    [ $# -gt 0 ] || set -- $(./"$prog" --list)
    if [ $# -eq 0 ]; then
        echo "$prog: FAILED (it lists no cases: does it run here?)" | tee -a "$out/summary.txt"
        failed=1
    fi
    for c in "$@"; do
        step "$prog.$c$tag" "$(limit_of "$c")" "env $env CK_RUN_CASE=$c ./$prog"
    done
}

info() {
    step info 60 'nvidia-smi; nvidia-smi --query-gpu=index,name,driver_version,compute_mode,mig.mode.current \
--format=csv; echo "MPS servers: $(echo get_server_list | nvidia-cuda-mps-control 2>&1 || echo none)"'
    grep -i -E 'exclusive|prohibited' "$out/info.log" >/dev/null &&
        echo "info: the GPU's compute mode keeps ranks from sharing it without MPS" | tee -a "$out/summary.txt"
}

suite() {
    cases test-device "" "TUTTI_LOG=warn"
    cases test-device-life "" "TUTTI_LOG=warn"
}

variants() {
    for variant in CUDA_MODULE_LOADING=EAGER CUDA_MODULE_LOADING=LAZY CUDA_DEVICE_MAX_CONNECTIONS=1 \
        CUDA_LAUNCH_BLOCKING=1 TUTTI_CUDA_GATE=kernel; do
        cases test-device "[$variant]" "$variant" direct stream_order compressed
        cases test-device-life "[$variant]" "$variant" streams two_comms rank_dies
        if [ "$variant" = TUTTI_CUDA_GATE=kernel ]; then
            # A kernel gate is exactly what a lazily loaded application
            # kernel can deadlock against (queue.c): measured, not counted.
            probe "test-device-life.lazy_kernel[$variant]" 120 \
                "env $variant CK_RUN_CASE=lazy_kernel ./test-device-life"
        else
            cases test-device-life "[$variant]" "$variant" lazy_kernel
        fi
    done
}

# compute-sanitizer comes with the CUDA toolkit (package cuda-sanitizer-13-0,
# /usr/local/cuda/bin/compute-sanitizer), not with the driver; set
# COMPUTE_SANITIZER to its path where it is elsewhere.
sanitize() {
    cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
    if [ -z "$cs" ]; then
        echo "sanitize: FAILED (compute-sanitizer not found: it comes with the CUDA toolkit, not the driver; \
set COMPUTE_SANITIZER)" | tee -a "$out/summary.txt"
        failed=1
        return
    fi
    for tool in memcheck racecheck; do
        for c in kernels avg launch_errors quantizers topk sampled_topk; do
            step "sanitize.$tool.$c" 300 \
                "CK_FORK=no CK_RUN_CASE=$c $cs --tool $tool --error-exitcode 3 ./test-device"
        done
    done
}

# Every collective on device buffers, 2 and 4 ranks sharing the GPU, every
# element checked, run directly over cuda_ipc and then staged through host
# memory; then the 1-bit compressed all-reduce on them.
perf() {
    step perf 580 'for n in 2 4; do for ipc in 1 0; do echo "## $n ranks, TUTTI_CUDA_IPC=$ipc";
  TUTTI_CUDA_IPC=$ipc ./tutti-run -n $n ./tutti-perf --memory device -c 1 -b 8 -e 64M -f 8 -n 10 -w 2 || exit 1; done;
  ./tutti-run -n $n ./tutti-perf --memory device --compress sign -b 1M -e 64M -f 8 -n 5 -w 1 || exit 1; done'
}

# busbw of the largest all-reduce in a tutti-perf --csv file.
busbw() {
    awk -F, '$1 == "allreduce" { b = $9 } END { print b }' "$1"
}

# Ranks sharing one GPU: time-sliced contexts, then MPS (started here, as
# the GPU's owner must). One run, same sizes, so the ratio compares.
mps() {
    if ! command -v nvidia-cuda-mps-control >/dev/null; then
        echo "mps: FAILED (nvidia-cuda-mps-control not found: it comes with the driver's utilities)" |
            tee -a "$out/summary.txt"
        failed=1
        return
    fi
    p='./tutti-perf --memory device --collective allreduce -c 1 -b 64K -e 64M -f 16 -n 20 -w 5 --csv'
    for n in 2 4; do
        step "mps.$n.without" 240 "./tutti-run -n $n $p"
        grep '^allreduce' "$out/mps.$n.without.log" >"$out/mps.$n.without.csv"
    done
    export CUDA_MPS_PIPE_DIRECTORY="$out/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$out/mps-log"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if ! nvidia-cuda-mps-control -d >"$out/mps-start.log" 2>&1; then
        echo "mps: FAILED (the MPS daemon did not start: $(tail -n 1 "$out/mps-start.log"))" |
            tee -a "$out/summary.txt"
        failed=1
        return
    fi
    for n in 2 4; do
        step "mps.$n.with" 240 "./tutti-run -n $n $p"
        grep '^allreduce' "$out/mps.$n.with.log" >"$out/mps.$n.with.csv"
        a=$(busbw "$out/mps.$n.without.csv") b=$(busbw "$out/mps.$n.with.csv")
        echo "mps: $n ranks on one GPU, 64 MiB all-reduce busbw: ${a:-?} GB/s time-sliced, ${b:-?} GB/s with MPS" |
            tee -a "$out/summary.txt"
    done
    echo quit | nvidia-cuda-mps-control
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}

[ $# -gt 0 ] || set -- info suite variants sanitize bw perf mps
for s in "$@"; do
    case $s in
    info | suite | variants | sanitize | perf | mps) "$s" ;;
    bw) step bw 300 './tutti-run -n 2 ./tutti-bw -t gpu' ;;
    *)
        echo "gpu-check: no step '$s' (info suite variants sanitize bw perf mps)" >&2
        exit 2
        ;;
    esac
done
exit $failed
