#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/project/check-layers.sh where users and packagers run it: on a copy of the
# library's folders as an unpacked release tarball holds them after a build
# in place (sources, objects and programs side by side, no git), with the
# tarball's list of files and with only find to go by, it must pass reading
# sources only (a 700-line object and a generated header with an upward
# include are planted beside them) and write nothing into the tree. Then
# the same copy with breaches planted, in sources and in the objects built
# from them, must fail naming each one.
set -u
S=${TT_SRCDIR:-.}
B=${TT_BUILDDIR:-.}
CC=${CC:-cc}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}
ls "$B"/src/core/*.lo >/dev/null 2>&1 || {
    echo "SKIP: the library is not built in $B (make check builds it first)"
    exit 77
}

# The tree: sources, then what the build made beside them (a separate build
# tree's products land in the same places, as in a build in place).
tree=$WORK/tutti
mkdir "$tree" || exit 1
for d in src transports algorithms nccl perf; do
    cp -R "$S/$d" "$tree/" || exit 1
    [ "$(cd "$B" && pwd -P)" = "$(cd "$S" && pwd -P)" ] || cp -R "$B/$d" "$tree/" 2>/dev/null
done
chmod -R u+w "$tree" # a read-only source tree (make distcheck) gives read-only copies
mkdir -p "$tree/algorithms/.libs" "$tree/build-aux"
seq 700 >"$tree/algorithms/.libs/planted.o"
echo '#include "api/collectives.h"' >"$tree/src/core/planted.h"
echo '/* from it, configure makes planted.h */' >"$tree/src/core/planted.h.in"
# What autogen.sh writes (too long, not ours), as a release tarball and a
# clean clone copied without git hold it: left out, whichever list is read.
for f in Makefile.in src/Makefile.in configure config.h.in build-aux/ltmain.sh build-aux/tap-driver.sh; do
    mkdir -p "$(dirname "$tree/$f")" && seq 700 >"$tree/$f"
done

# layers LOG: check-layers on the copy, its output in $WORK/LOG.
layers() {
    TT_SRCDIR=$tree TT_BUILDDIR=$tree sh "$S/tests/project/check-layers.sh" >"$WORK/$1" 2>&1
}
before=$(cd "$tree" && find . | LC_ALL=C sort)
layers find.out || fail "with find only: $(cat "$WORK/find.out")"
echo "find: $(tail -n 1 "$WORK/find.out")"
# The list make dist writes: every source file, and the planted ones not.
(cd "$tree" && find . -type f ! -path '*/.libs/*' ! -path '*/.deps/*' ! -name '*.lo' ! -name '*.o' ! -name '*.Plo' \
    ! -name '*.Po' ! -name '.dirstamp' ! -name planted.h ! -name tutti_version.h | sed 's|^\./||') >"$tree/build-aux/dist-files"
layers list.out || fail "with the tarball's list: $(cat "$WORK/list.out")"
echo "list: $(tail -n 1 "$WORK/list.out")"
after=$(cd "$tree" && find . | LC_ALL=C sort)
[ "$(printf '%s\n' "$after" | grep -vx './build-aux/dist-files')" = "$(printf '%s\n' "$before")" ] ||
    fail "check-layers wrote into the tree: $(printf '%s\n' "$before" "$after" | sort | uniq -u)"
grep -q ' objects: every include and symbol goes down' "$WORK/list.out" || fail "no objects were read"

# Breaches, each in a source and in its object: the core calling up into
# the communicator, a transport into another's own code, an algorithm into
# the core, a function of 81 lines, and a file of 601.
mkdir -p "$tree/transports/tcp/.libs" "$tree/transports/shm/.libs" "$tree/src/core/.libs" "$tree/src/comm/.libs" \
    "$tree/algorithms/.libs"
# plant FILE SOURCE: a source and its libtool object, as the build makes them.
plant() {
    printf '%s\n' "$2" >"$tree/$1"
    dir=${1%/*} name=${1##*/}
    "$CC" -c -o "$tree/$dir/.libs/libtutti_core_la-${name%.c}.o" "$tree/$1" || fail "cannot compile $1"
    printf "pic_object='.libs/libtutti_core_la-%s.o'\nnon_pic_object=none\n" "${name%.c}" \
        >"$tree/$dir/libtutti_core_la-${name%.c}.lo"
}
plant src/comm/planted_comm.c 'int tt_planted_comm(void) { return 1; }'
plant src/core/planted_up.c 'int tt_planted_comm(void);
int tt_planted_up(void) { return tt_planted_comm(); }'
plant transports/shm/planted_shm.c 'int tt_planted_shm(void) { return 2; }'
plant transports/tcp/planted_tcp.c 'int tt_planted_shm(void);
int tt_planted_tcp(void) { return tt_planted_shm(); }'
plant src/core/planted_core.c 'int tt_planted_core(void) { return 3; }'
plant algorithms/planted_algo.c 'int tt_planted_core(void);
int tt_planted_algo(void) { return tt_planted_core(); }'
printf '#include "coll/coll.h"\n' >>"$tree/src/sched/hosts.c"
{
    echo 'int tt_planted_long(void)'
    echo '{'
    i=0
    while [ $i -lt 81 ]; do
        echo '    ;'
        i=$((i + 1))
    done
    echo '}'
} >"$tree/src/core/planted_long.c"
seq 601 | sed 's|^|// |' >"$tree/transports/planted_big.h"
for f in src/comm/planted_comm.c src/core/planted_up.c transports/shm/planted_shm.c transports/tcp/planted_tcp.c \
    src/core/planted_core.c algorithms/planted_algo.c src/core/planted_long.c transports/planted_big.h; do
    echo "$f" >>"$tree/build-aux/dist-files"
done
if layers breaches.out; then
    fail "planted breaches passed: $(cat "$WORK/breaches.out")"
fi
cat "$WORK/breaches.out"
for want in 'src/core/planted_up.c: core (layer 1) uses tt_planted_comm of src/comm/planted_comm.c, comm (layer 5)' \
    'transports/tcp/planted_tcp.c: uses tt_planted_shm of transports/shm/planted_shm.c, inside a transport' \
    'algorithms/planted_algo.c: an algorithm uses tt_planted_core of src/core/planted_core.c' \
    'src/sched/hosts.c:[0-9]*: sched (layer 2) includes "coll/coll.h" from coll (layer 6)' \
    'src/core/planted_long.c:1: 81-line function: int tt_planted_long(void)' \
    'transports/planted_big.h: 601 lines'; do
    grep -q "^$want" "$WORK/breaches.out" || fail "not reported: $want"
done
[ "$(wc -l <"$WORK/breaches.out")" -eq 6 ] || fail "more than the 6 planted breaches reported"
echo "check-layers: the 6 planted breaches reported, and only those"
