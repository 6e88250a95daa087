#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds, on a machine with nvcc and Check (no GPU needed), the GPU suites,
# the GPU benchmarks, libnccl.so.2 and a program of its device paths as
# files that need nothing on the GPU machine but the NVIDIA driver, libc
# and libstdc++: the CUDA runtime, Check and subunit linked statically,
# hwloc, PMIx, MPI and verbs left out. They land in KIT (default gpu-kit/,
# which git ignores) with tests/device/gpu-check.sh and the DDP script of its
# second run; copy that folder to the GPU machine and run gpu-check.sh
# there (gpu-check.sh --plan says what it runs). The kit must fit the
# 64 MiB that can be carried to a GPU machine: this says its size.
#
#   tests/device/gpu-kit.sh [KIT]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
kit=$(mkdir -p "${1:-$src/gpu-kit}" && cd "${1:-$src/gpu-kit}" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

# A copy of the sources as git sees them (edits not yet committed too),
# built on its own, so the checkout's own configuration is left alone.
git -C "$src" ls-files -co --exclude-standard | tar -C "$src" -cf - -T - | tar -C "$build" -xf -
cd "$build"
./autogen.sh >autogen.out 2>&1
# Debian's check.pc names -lsubunit, which would link the shared one.
./configure --with-cuda=yes --with-check=yes --with-hwloc=no --with-pmix=no --with-mpi=no \
    --with-verbs=no CHECK_CFLAGS=-pthread CHECK_LIBS="-lcheck_pic -lrt -lm -l:libsubunit.a" >configure.out
make -j"$(nproc)" tutti-run tutti-perf tutti-bw tutti-info tests/device/test-device tests/device/test-device-life tests/reduce/test-reduce \
    libnccl.la >make.out
cuda=$(sed -n 's/^CUDA_CFLAGS = -I\(.*\)\/include$/\1/p' Makefile)
gcc -O2 -Inccl/compat -I. -I"$cuda/include" -o nccl-gpu tests/nccl/nccl_gpu.c -L.libs -l:libnccl.so.2 \
    -Wl,-rpath,'$ORIGIN' -L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread

cd "$kit"
cp "$build/tutti-run" "$build/tutti-perf" "$build/tutti-bw" "$build/tutti-info" "$build/tests/device/test-device" \
    "$build/tests/device/test-device-life" "$build/tests/reduce/test-reduce" "$build/nccl-gpu" "$src/tests/device/gpu-check.sh" "$src/tests/device/ddp_gpu.py" .
cp -L "$build/.libs/libnccl.so.2" libnccl.so.2
# Anything else the programs load must be on every Linux machine with a driver.
extra=$(ldd tutti-run tutti-perf tutti-bw tutti-info test-device test-device-life test-reduce nccl-gpu libnccl.so.2 |
    awk '/=>/ { print $1 }' |
    grep -v -E '^(linux-vdso|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux|libnccl)' |
    sort -u || true)
if [ -n "$extra" ]; then
    echo "gpu-kit: the programs need shared libraries a GPU machine may lack:" $extra >&2
    exit 1
fi
# The suites must list their cases here already: gpu-check.sh runs them one by one.
for suite in test-device test-device-life; do
    if [ -z "$(./$suite --list)" ]; then
        echo "gpu-kit: $suite lists no cases" >&2
        exit 1
    fi
done
bytes=$(du -sb . | awk '{ print $1 }')
echo "gpu-kit: $kit holds $(ls | tr '\n' ' '): $((bytes / 1048576)) MiB ($bytes bytes)"
if [ "$bytes" -gt $((64 * 1048576)) ]; then
    echo "gpu-kit: more than the 64 MiB a GPU machine can be given" >&2
    exit 1
fi
