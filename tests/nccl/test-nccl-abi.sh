#!/bin/sh
# SPDX-License-Identifier: MIT
# The binary interface of libnccl.so.2, read from the file: its soname, the
# only libraries it needs, exactly nccl* and pnccl* exported without symbol
# versions, ncclX a weak alias of a defined pncclX for every call of NCCL
# 2.28 (and those 2.29/2.30 added) and every one PyTorch 2.x calls, every
# call NVIDIA's library exports (where the toolkit has it), loading with
# RTLD_NOW, tutti's header against nccl.h value by value, and a program
# linked with NVIDIA's library running on tutti's when it is preloaded.
lib=${TT_BUILDDIR:-.}/.libs/libnccl.so.2
[ -f "$lib" ] || { echo "no $lib: libnccl.so.2 was not built"; exit 1; }
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}

# NCCL 2.28.9's calls, then NCCL 2.29/2.30's (../shared/nccl-abi.md).
calls="ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclCommAbort ncclCommCount
ncclCommCuDevice ncclCommDeregister ncclCommDestroy ncclCommFinalize ncclCommGetAsyncError
ncclCommInitAll ncclCommInitRank ncclCommInitRankConfig ncclCommInitRankScalable
ncclCommRegister ncclCommRevoke ncclCommShrink ncclCommSplit ncclCommUserRank
ncclCommWindowDeregister ncclCommWindowRegister ncclDevCommCreate ncclDevCommDestroy
ncclGather ncclGetErrorString ncclGetLastError ncclGetUniqueId ncclGetVersion
ncclGinBarrierCreateRequirement ncclGroupEnd ncclGroupSimulateEnd ncclGroupStart
ncclLLA2ACalcSlots ncclLLA2ACreateRequirement ncclLsaBarrierCreateRequirement ncclMemAlloc
ncclMemFree ncclRecv ncclRedOpCreatePreMulSum ncclRedOpDestroy ncclReduce ncclReduceScatter
ncclResetDebugInit ncclResetDebugInitInternal ncclScatter ncclSend ncclTeamLsa ncclTeamRail
ncclTeamRankToLsa ncclTeamRankToWorld ncclTeamWorld
ncclCommGrow ncclCommGetUniqueId ncclWinGetUserPtr ncclPutSignal ncclSignal ncclWaitSignal
ncclCommSuspend ncclCommResume ncclCommMemStats ncclCommQueryProperties"
# What PyTorch 2.x calls (its ProcessGroupNCCL and torch.cuda.nccl).
torch_calls="ncclGetVersion ncclGetUniqueId ncclCommInitRankConfig ncclCommInitRankScalable ncclCommInitRank
ncclCommSplit ncclCommShrink ncclCommRevoke ncclCommGrow ncclCommGetUniqueId ncclCommAbort
ncclCommDestroy ncclCommFinalize ncclCommGetAsyncError ncclGetErrorString ncclGetLastError
ncclCommCount ncclCommUserRank ncclAllReduce ncclBroadcast ncclBcast ncclReduce ncclAllGather
ncclReduceScatter ncclAlltoAll ncclSend ncclRecv ncclGroupStart ncclGroupEnd ncclRedOpCreatePreMulSum
ncclRedOpDestroy ncclCommRegister ncclCommDeregister ncclMemAlloc ncclMemFree ncclCommWindowRegister
ncclCommWindowDeregister ncclWinGetUserPtr ncclPutSignal ncclSignal ncclWaitSignal"

readelf -d "$lib" | grep -q 'SONAME.*\[libnccl\.so\.2\]' || bad "the soname is not libnccl.so.2"
for n in $(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    case "$n" in
    libc.so.* | libstdc++.so.* | libpthread.so.* | librt.so.* | libdl.so.* | libm.so.* | libgcc_s.so.* | ld-linux*) ;;
    *) bad "needs $n (only libc, libstdc++, libpthread, librt, libdl, libm and libgcc_s may be needed)" ;;
    esac
done

syms=$(nm -D --defined-only "$lib")
other=$(echo "$syms" | awk '{print $3}' | grep -v '^p\{0,1\}nccl')
[ -z "$other" ] || bad "exports more than nccl*/pnccl*: $(echo $other)"
echo "$syms" | awk '{print $3}' | grep -q '@' && bad "exported symbols carry versions"
readelf -V "$lib" | grep -q 'Version definition' && bad "the library defines symbol versions"

n=0
for c in $calls $torch_calls; do
    echo "$syms" | grep -q " W $c\$" || bad "$c is not exported as a weak symbol"
    echo "$syms" | grep -q " T p$c\$" || bad "p$c is not exported as a defined function"
    a=$(echo "$syms" | awk -v s="$c" '$3 == s {print $1}')
    b=$(echo "$syms" | awk -v s="p$c" '$3 == s {print $1}')
    [ -n "$a" ] && [ "$a" = "$b" ] || bad "$c is not an alias of p$c"
    n=$((n + 1))
done
echo "checked $n names: each ncclX a weak alias of pncclX"

if [ -n "$TT_REAL_NCCL" ] && [ -f "$TT_REAL_NCCL" ]; then
    missing=$(nm -D --defined-only "$TT_REAL_NCCL" | awk '{print $3}' | grep '^p\{0,1\}nccl' |
        while read -r s; do echo "$syms" | grep -q " $s\$" || echo "$s"; done)
    [ -z "$missing" ] || bad "NVIDIA's library exports what tutti's lacks: $(echo $missing)"
    echo "every nccl*/pnccl* name of $TT_REAL_NCCL is exported"
else
    echo "skipped: no NVIDIA libnccl.so.2 to compare the exported names with"
fi

py=/usr/bin/python3
if [ -x "$py" ]; then
    "$py" -c "import ctypes, os, sys; l = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW); v = ctypes.c_int(); \
l.ncclGetVersion(ctypes.byref(v)); sys.exit(0 if v.value == 22809 else 1)" "$lib" ||
        bad "loading with RTLD_NOW from Python, or ncclGetVersion, failed"
fi

# Values and layouts: the same program built with NVIDIA's nccl.h and with
# tutti's header prints the same.
src=${TT_SRCDIR:-.}
if [ -n "$CC" ] && echo "$TT_NCCL_TEST_CFLAGS" | grep -q isystem; then
    tmp=${TT_BUILDDIR:-.}/tests/nccl/nccl-layout
    # shellcheck disable=SC2086
    if $CC $TT_NCCL_TEST_CFLAGS -o "$tmp-nvidia" "$src/tests/nccl/nccl_layout.c" &&
        $CC -I"$src" -I"$src/nccl/compat" -o "$tmp-tutti" "$src/tests/nccl/nccl_layout.c"; then
        "$tmp-nvidia" > "$tmp-nvidia.out"
        "$tmp-tutti" > "$tmp-tutti.out"
        if diff "$tmp-nvidia.out" "$tmp-tutti.out"; then
            echo "$(wc -l < "$tmp-tutti.out") values and offsets of nccl.h and tutti's header agree"
        else
            bad "tutti's header differs from nccl.h (above: < nccl.h, > tutti's)"
        fi
    else
        bad "could not build tests/nccl/nccl_layout.c"
    fi
    rm -f "$tmp-nvidia" "$tmp-tutti" "$tmp-nvidia.out" "$tmp-tutti.out"
else
    echo "skipped: no nccl.h to compare tutti's header with"
fi

# Drop-in: a program linked with NVIDIA's library, run on tutti's.
if [ -n "$TT_REAL_NCCL" ] && [ -f "$TT_REAL_NCCL" ] && [ -n "$CC" ]; then
    exe=${TT_BUILDDIR:-.}/tests/nccl/nccl-dropin
    # shellcheck disable=SC2086
    if $CC $TT_NCCL_TEST_CFLAGS -o "$exe" "$src/tests/nccl/nccl_dropin.c" "$TT_REAL_NCCL" -ldl; then
        real=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
        out=$(LD_LIBRARY_PATH="$(dirname "$TT_REAL_NCCL")" LD_PRELOAD="$real" "$exe" 2>&1)
        echo "$out"
        echo "$out" | grep -q "ncclAllReduce from $real" || bad "with LD_PRELOAD, NVIDIA's library answered"
        echo "$out" | grep -q "all-reduce on 2 ranks: correct" || bad "the preloaded program did not run right"
        rm -f "$exe"
    else
        bad "could not build the drop-in program against $TT_REAL_NCCL"
    fi
else
    echo "skipped: the drop-in run needs NVIDIA's libnccl.so.2 and nccl.h"
fi
[ "$fail" -eq 0 ] && echo "libnccl.so.2: soname, needed libraries and exported names as NCCL's"
exit "$fail"
