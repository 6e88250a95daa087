#!/bin/sh
# SPDX-License-Identifier: MIT
# What the kernel stand-in cannot see, read from nvcc's own output for
# sm_90 (no GPU needed, only nvcc): the kernels' PTX has no fused
# multiply-add (fma, or a float mad), no approximate operation and no flush
# to zero, and no product without a rounding modifier that an add or sub
# without one reads (ptxas may fuse that pair into an fma: only __fmul_rn
# and friends, or a rounding modifier, keep them apart), so the GPU rounds
# every operation as the CPU does; and ptxas gives every kernel at most 64
# registers, no spill and no stack frame (local memory). Skips (77) where
# nvcc is not installed. NVCC names it; else CUDA_HOME/bin,
# /usr/local/cuda/bin, then PATH.
set -u
src=$(cd "${TT_SRCDIR:-$(dirname "$0")/../..}" && pwd)
build=${TT_BUILDDIR:-$src}
nvcc=${NVCC:-}
for c in "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null)"; do
    [ -n "$nvcc" ] || { [ -n "$c" ] && [ -x "$c" ] && nvcc=$c; }
done
if [ -z "$nvcc" ]; then
    echo "SKIP: nvcc is not installed (set NVCC or CUDA_HOME): the PTX and register checks need it"
    exit 77
fi
ptxas=$(dirname "$nvcc")/ptxas
[ -x "$ptxas" ] || ptxas=ptxas
[ -f "$build/config.h" ] || { echo "kernels-ptx: no config.h in $build (configure first)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for k in reduce scale compress compress_coll wait; do
    if ! "$nvcc" -ptx -arch=compute_90 -include "$build/config.h" -I"$src/src/include" -I"$build/src/include" \
        -I"$src/src" -I"$src" "$src/src/cuda/$k.cu" -o "$tmp/$k.ptx" > "$tmp/$k.log" 2>&1; then
        echo "kernels-ptx: nvcc failed on src/cuda/$k.cu:"
        cat "$tmp/$k.log"
        exit 1
    fi
    # Integer mad (mad.lo, mad.wide) is address arithmetic, and exact.
    grep -nE '(^|[^a-z])fma\.|mad(\.rn)?\.f(16|32|64)|\.ftz|\.approx|div\.full' "$tmp/$k.ptx" > "$tmp/$k.bad"
    # Products without a rounding modifier (through neg and mov too), read
    # by an add or sub without one; registers are per function.
    awk '
        /^[ \t]*(\.visible[ \t]+)?\.(entry|func)/ { delete prod }
        {
            line = $0
            sub(/^[ \t]*(@!?%[a-z0-9]+[ \t]+)?/, "", line)
            split(line, f, /[ \t,;]+/)
            if (f[1] ~ /^mul\.f(32|64)$/ || (f[1] ~ /^(neg|mov)\.f(32|64)$/ && prod[f[3]]))
                prod[f[2]] = 1
            else if (f[1] ~ /^(add|sub)\.f(32|64)$/ && (prod[f[3]] || prod[f[4]]))
                print FNR ": " $0
        }' "$tmp/$k.ptx" >> "$tmp/$k.bad"
    if [ -s "$tmp/$k.bad" ]; then
        echo "kernels-ptx: src/cuda/$k.cu has a fused, fusable, approximate or flush-to-zero float operation:"
        head -5 "$tmp/$k.bad"
        bad=1
    fi
    if ! "$ptxas" -arch=sm_90 -v "$tmp/$k.ptx" -o "$tmp/$k.cubin" > "$tmp/$k.res" 2>&1; then
        echo "kernels-ptx: ptxas failed on src/cuda/$k.cu:"
        cat "$tmp/$k.res"
        exit 1
    fi
    # One line per kernel: its name, registers, stack frame, spill stores and loads.
    awk -v file="$k.cu" '
        /Compiling entry function/ { name = $0; sub(/.*function ./, "", name); sub(/. for .*/, "", name) }
        /bytes stack frame/ { stack = $1; spill_st = $5; spill_ld = $9 }
        /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "Used") regs = $(i + 1)
            printf "%s %s %d %d %d %d\n", file, name, regs, stack, spill_st, spill_ld }' "$tmp/$k.res" >> "$tmp/usage"
done
[ -s "$tmp/usage" ] || { echo "kernels-ptx: ptxas reported no kernel"; exit 1; }
while read -r file name regs stack st ld; do
    if [ "$regs" -gt 64 ] || [ "$stack" -ne 0 ] || [ "$st" -ne 0 ] || [ "$ld" -ne 0 ]; then
        echo "kernels-ptx: $file: $name: $regs registers, $stack bytes of stack, spills $st/$ld bytes"
        bad=1
    fi
done < "$tmp/usage"
n=$(wc -l < "$tmp/usage")
most=$(sort -k3 -n "$tmp/usage" | tail -1 | awk '{print $3}')
least=$(sort -k3 -n "$tmp/usage" | head -1 | awk '{print $3}')
echo "kernels-ptx: $n kernels for sm_90: $least-$most registers; no spill or stack frame unless said above"
exit $bad
