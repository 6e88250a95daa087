#!/bin/sh
# SPDX-License-Identifier: MIT
# The GPU checks of the device path, as two runs that fit a short lease of a
# GPU machine, from a kit made by tests/device/gpu-kit.sh (this script sits beside
# the programs):
#
#   gpu-check.sh --plan     the steps of both runs and their limits (no GPU needed)
#   gpu-check.sh [1]        run 1, the checks, riskiest first (at most 450 s)
#   gpu-check.sh 2          run 2, the measurements (at most 180 s)
#
# Every step runs in its own process group under its limit (timeout kills
# the ranks it forked too), its output into a log; a step that would not
# end before the run's deadline is skipped, saying so. Whatever happens
# (a failure, a hang, the run itself killed), the run ends by writing
# $OUT/summary.txt (one line per step: passed, FAILED and why, hung at its
# limit, skipped and why; then how device calls held their streams and
# which path they took) and $OUT/logs.tar.gz (every step's log): two files.
# GPU runs use tutti-run --bind none (pinning a rank, its proxy and CUDA's
# threads to one core distorts every figure); nothing starts MPS or any
# other daemon. Where nvidia-smi sees a GPU, a suite that skips is a
# failure. GPU_CHECK_LIMIT=S sets every step's limit, GPU_CHECK_BUDGET=S the
# run's (both for the self-test, tests/device/test-gpu-check.sh).
# Exit status: 1 if a step failed or hung, 77 if no GPU is seen, else 0.
set -u
kit=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/local/cuda/bin

# The steps: run, name, limit in seconds, command. Checks first (run 1),
# riskiest first: what could hang a trainer's GPU on a first run. The GPU
# kernels are compared bit for bit with the CPU's portable kernels; the
# staged and compressed calls with the host path, which uses whichever
# kernels this machine's CPU runs best (AVX-512 on most GPU hosts, which
# the machines that build tutti may lack): cpu_kernels checks those
# against the portable ones here first (a few seconds of CPU only).
plan() {
    cat <<'PLAN'
1 load 20 ./test-device --list >/dev/null && ./test-device-life --list >/dev/null && ./tutti-info && ldd ./libnccl.so.2
1 cpu_kernels 10 ./test-reduce
1 launch_errors 20 CK_RUN_CASE=launch_errors ./test-device
1 lazy_kernel 30 CK_RUN_CASE=lazy_kernel ./test-device-life
1 lazy_kernel_eager 20 CUDA_MODULE_LOADING=EAGER CK_RUN_CASE=lazy_kernel ./test-device-life
1 lazy_kernel_staged 20 TUTTI_CUDA_IPC=0 CK_RUN_CASE=lazy_kernel ./test-device-life
1 many_streams 25 CK_RUN_CASE=many_streams ./test-device-life
1 many_streams_32 20 CUDA_DEVICE_MAX_CONNECTIONS=32 CK_RUN_CASE=many_streams ./test-device-life
1 global_capture 25 CK_RUN_CASE=global_capture ./test-device-life
1 stream_order 25 CK_RUN_CASE=stream_order ./test-device
1 direct 45 CK_RUN_CASE=direct ./test-device
1 rank_dies 25 CK_RUN_CASE=rank_dies ./test-device-life
1 staged 30 CK_RUN_CASE=staged ./test-device
1 nccl_device 20 ./nccl-gpu
1 kernels 35 CK_RUN_CASE=kernels ./test-device
1 quantizers 20 CK_RUN_CASE=quantizers ./test-device
1 compressed 25 CK_RUN_CASE=compressed ./test-device
1 sanitize 25 for c in avg fp8_avg; do CK_FORK=no CK_RUN_CASE=$c "$SANITIZER" --tool memcheck --error-exitcode 3 ./test-device || exit 1; done
2 kernels_bw 35 ./tutti-run --bind none -n 1 ./tutti-bw -t gpu -s 1G
2 direct_busbw 45 for n in 2 4; do ./tutti-run --bind none -n $n ./tutti-perf --memory device --collective allreduce -b 1M -e 256M -f 16 -n 10 -w 2 || exit 1; done
2 staged_busbw 45 for n in 2 4; do TUTTI_CUDA_IPC=0 ./tutti-run --bind none -n $n ./tutti-perf --memory device --collective allreduce -b 1M -e 256M -f 16 -n 10 -w 2 || exit 1; done
2 ddp 45 LD_PRELOAD=$PWD/libnccl.so.2 python3 ddp_gpu.py nccl ddp-nccl.pt && python3 ddp_gpu.py gloo ddp-gloo.pt && python3 ddp_gpu.py --compare ddp-nccl.pt ddp-gloo.pt
PLAN
}

# The run's budget: its steps' limits and what is kept for the summary.
budget_of() {
    case $1 in
    1) echo "${GPU_CHECK_BUDGET:-450}" ;;
    2) echo "${GPU_CHECK_BUDGET:-180}" ;;
    esac
}
RESERVE=10 # seconds kept for the summary and the archive

if [ "${1:-}" = --plan ]; then
    for run in 1 2; do
        total=0
        echo "run $run (at most $(budget_of $run) s):"
        while read -r r name limit cmd; do
            [ "$r" = "$run" ] || continue
            printf '  %-20s %4s s  %s\n' "$name" "$limit" "$cmd"
            total=$((total + limit))
        done <<EOF
$(plan)
EOF
        echo "  total of the limits: $total s, $RESERVE s for the summary and the archive"
    done
    exit 0
fi

run=${1:-1}
case $run in 1 | 2) ;; *)
    echo "usage: gpu-check.sh [--plan | 1 | 2]" >&2
    exit 2
    ;;
esac
out=${OUT:-$kit/gpu-check-out}
mkdir -p "$out"
logs=$(mktemp -d)
sum="$logs/summary.txt"
start=$(date +%s)
deadline=$((start + $(budget_of "$run") - RESERVE))
failed=0

# Always: the summary and one archive of the logs into $OUT.
finish() {
    trap - EXIT INT TERM
    {
        echo "how device calls held their streams, and the paths they took:"
        grep -h -o -E 'device calls hold streams with [a-z ]+|[a-z_]+: (direct run|staged through the proxy)' \
            "$logs"/*.log 2>/dev/null | sort | uniq -c
    } >>"$sum"
    cp "$sum" "$out/summary.txt"
    tar -C "$logs" -czf "$out/logs.tar.gz" . 2>/dev/null
    rm -rf "$logs"
}
step=
trap 'finish' EXIT
trap 'stopped' INT TERM
# Killed from outside (the lease ran out): the step's processes too, then
# the summary, at once (a step runs in the background so that this trap
# need not wait for it).
stopped() {
    [ -z "$step" ] || kill -KILL -- "-$step" 2>/dev/null
    echo "gpu-check: stopped from outside after $(($(date +%s) - start))s${name:+, in step $name}" >>"$sum"
    exit 1
}

echo "gpu-check run $run, $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$sum"
if ! nvidia-smi -L >"$logs/nvidia-smi.log" 2>&1; then
    echo "gpu-check: no GPU here (nvidia-smi -L failed): nothing checked" | tee -a "$sum"
    exit 77
fi
nvidia-smi --query-gpu=index,name,driver_version,compute_mode --format=csv >>"$logs/nvidia-smi.log" 2>&1
cd "$kit" || exit 2
SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo compute-sanitizer)}
export SANITIZER
if [ "$run" = 1 ]; then # each device call says its path (not while measuring)
    export TUTTI_LOG=${TUTTI_LOG:-debug} TUTTI_LOG_SUBSYS=${TUTTI_LOG_SUBSYS:-coll}
fi

# verdict LOG RC LIMIT: a GPU is present, so a step that skipped (exit 77,
# a TAP plan of no tests, a skipped test, tutti-bw's "not measured")
# checked nothing and fails.
verdict() {
    case $2 in
    0) if grep -q -E '^1\.\.0 # SKIP|^ok .* # SKIP|not measured' "$1"; then
        echo "FAILED (skipped with a GPU present: $(grep -m1 -o -E 'SKIP.*|[^:]*not measured' "$1"))"
    else
        echo passed
    fi ;;
    77) echo "FAILED (skipped with a GPU present: $(tail -n 1 "$1"))" ;;
    124 | 137) echo "hung: killed at its ${3}s limit" ;;
    *) echo "FAILED (exit $2)" ;;
    esac
}

while read -r r name limit cmd; do
    [ "$r" = "$run" ] || continue
    limit=${GPU_CHECK_LIMIT:-$limit}
    now=$(date +%s)
    if [ $((now + limit)) -gt "$deadline" ]; then
        echo "$name: skipped (only $((deadline - now))s of the run left, the step may take ${limit}s)" >>"$sum"
        continue
    fi
    echo "\$ $cmd" >"$logs/$name.log"
    timeout -k 5 "$limit" sh -c "$cmd" >>"$logs/$name.log" 2>&1 </dev/null &
    step=$!
    wait "$step"
    rc=$?
    step=
    said=$(verdict "$logs/$name.log" "$rc" "$limit")
    case $said in passed) ;; *) failed=1 ;; esac
    echo "$name: $said in $(($(date +%s) - now))s" >>"$sum"
done <<EOF
$(plan)
EOF
exit $failed
