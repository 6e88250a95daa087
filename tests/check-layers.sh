#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering rules of ARCHITECTURE.md, read from the code:
#  - a folder of the library includes only from its own folder and the
#    layers below it (never upward, never sideways into its own rank);
#  - the core includes no transport's own header, a transport no other's;
#  - an algorithm includes only sched/schedule.h (the registry, the
#    algorithms' own header, is read by the layers above);
#  - no file outside tests/ is over 600 lines, no library function over 80.
# Prints every breach and exits 1 if there is one.
top=${TT_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1

# rank FOLDER: the layer of a folder, lowest 0; nothing for unknown ones.
rank() {
    case "$1" in
    include) echo 0 ;;
    core) echo 1 ;;
    reduce | codec | sched | topo) echo 2 ;;
    cuda | algorithms) echo 3 ;;
    transports | tune) echo 4 ;;
    comm) echo 5 ;;
    coll) echo 6 ;;
    device) echo 7 ;;
    compress) echo 8 ;;
    api) echo 9 ;;
    tools) echo 10 ;;
    nccl) echo 11 ;;
    esac
}

# folder FILE: the layer a source file belongs to.
folder() {
    case "$1" in
    src/*/*) f=${1#src/}; echo "${f%%/*}" ;;
    transports/*) echo transports ;;
    algorithms/*) echo algorithms ;;
    nccl/*) echo nccl ;;
    esac
}

bad=0
breach() {
    echo "$1"
    bad=1
}

# The sources as git knows them, or as a release tarball holds them.
sources() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files "$@"
    else
        for pattern in "$@"; do
            find ${pattern%%/*} -path "$pattern" -type f 2>/dev/null
        done
    fi
}

files=$(sources 'src/*.c' 'src/*.h' 'src/*.cu' 'src/*.cuh' 'transports/*.c' 'transports/*.h' 'algorithms/*.c' 'algorithms/*.h')

for f in $files; do
    from=$(folder "$f")
    rf=$(rank "$from")
    [ -n "$rf" ] || { breach "$f: in no layer of ARCHITECTURE.md"; continue; }
    grep -n '^#include "' "$f" | while IFS= read -r line; do
        inc=$(echo "$line" | sed 's/.*#include "\([^"]*\)".*/\1/')
        case "$inc" in
        tutti.h | tutti_version.h) to=include ;;
        transports/*) to=transports ;;
        */*) to=${inc%%/*} ;;
        *) echo "$f:${line%%:*}: includes \"$inc\" without its folder"; continue ;;
        esac
        rt=$(rank "$to")
        if [ -z "$rt" ]; then
            echo "$f:${line%%:*}: includes \"$inc\" from no layer"
        elif [ "$to" != "$from" ] && [ "$rt" -ge "$rf" ]; then
            echo "$f:${line%%:*}: $from (layer $rf) includes \"$inc\" from $to (layer $rt)"
        fi
        case "$from:$inc" in
        transports:transports/transport.h | transports:transports/local.h) ;;
        transports:transports/*/*)
            own=$(echo "$f" | cut -d/ -f2)
            [ "$(echo "$inc" | cut -d/ -f2)" = "$own" ] || echo "$f:${line%%:*}: a transport includes another's \"$inc\""
            ;;
        *:transports/transport.h) ;;
        *:transports/*) echo "$f:${line%%:*}: the core includes a transport's \"$inc\"" ;;
        esac
        case "$from:$inc" in
        algorithms:sched/schedule.h) ;;
        algorithms:algorithms/registry.h) [ "$f" = algorithms/registry.c ] ||
            echo "$f:${line%%:*}: an algorithm includes the registry (only sched/schedule.h)" ;;
        algorithms:*) echo "$f:${line%%:*}: an algorithm includes \"$inc\" (only sched/schedule.h)" ;;
        esac
    done
done > layers.out 2>&1
[ -s layers.out ] && { cat layers.out; bad=1; }
rm -f layers.out

# Length of files (outside tests) and of library functions.
for f in $(sources 'src/*' 'transports/*' 'algorithms/*' 'perf/*.c' 'perf/*.py' 'perf/*.sh'); do
    n=$(wc -l < "$f")
    [ "$n" -le 600 ] || breach "$f: $n lines (at most 600 outside tests)"
done
for f in $files; do
    case "$f" in src/tools/*) continue ;; esac
    awk -v file="$f" '
        /^[A-Za-z_]/ { sig = $0; sigline = NR }
        /^\{$/ && prev ~ /\)$/ { start = NR; name = sig }
        /^\}/ && start { if (NR - start - 1 > 80) printf "%s:%d: %d-line function: %s\n", file, sigline, NR - start - 1, name; start = 0 }
        { prev = $0 }
    ' "$f"
done > functions.out
[ -s functions.out ] && { cat functions.out; bad=1; }
rm -f functions.out

[ "$bad" -eq 0 ] && echo "layers: every include goes down; files and functions within their limits"
exit "$bad"
