#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds, on a machine with nvcc and Check (no GPU needed), the GPU suite and
# the GPU benchmarks as programs that need nothing on the GPU machine but
# the NVIDIA driver, libc and libstdc++: the CUDA runtime, Check and subunit
# linked statically, hwloc, PMIx, MPI and verbs left out. The programs and
# tests/gpu-check.sh land in KIT (default gpu-kit/, which git ignores, about
# 6 MB); copy that folder to the GPU machine and run gpu-check.sh there
# (compute-sanitizer, for its sanitize step, comes with the CUDA toolkit).
#
#   tests/gpu-kit.sh [KIT]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
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
make -j"$(nproc)" tutti-run tutti-perf tutti-bw tests/test-device tests/test-device-life >make.out

cd "$kit"
cp "$build/tutti-run" "$build/tutti-perf" "$build/tutti-bw" "$build/tests/test-device" \
    "$build/tests/test-device-life" "$src/tests/gpu-check.sh" .
# Anything else the programs load must be on every Linux machine with a driver.
extra=$(ldd tutti-run tutti-perf tutti-bw test-device test-device-life |
    awk '/=>/ { print $1 }' |
    grep -v -E '^(linux-vdso|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux)' |
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
echo "gpu-kit: $kit holds tutti-run tutti-perf tutti-bw test-device test-device-life gpu-check.sh"
