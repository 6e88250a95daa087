#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering rules of ARCHITECTURE.md, read from the code:
#  - a folder of the library includes only from its own folder and the
#    layers below it (never upward, never sideways into its own rank);
#  - the core includes no transport's own header (transport.h and device.h
#    are the interfaces), a transport no other's;
#  - an algorithm includes only sched/schedule.h (the registry, the
#    algorithms' own header, is read by the layers above);
#  - the same rules for the symbols each built object uses (nm): only those
#    its own folder and the layers below define, no transport's own symbol
#    outside it (the table, transports/transports.c, names them), and for
#    an algorithm only the schedule layer's;
#  - no source file is over 600 lines (the tests' included), no function
#    of the library or of libnccl.so.2 over 80.
# It reads source files only: git's list in a checkout, else the list a
# release tarball carries (build-aux/dist-files, written by make dist), else
# what find sees less what a build makes; and the objects of the build tree
# (TT_BUILDDIR, default the source tree). It writes nothing. Prints every
# breach and exits 1 if there is one.
here=$(cd "$(dirname "$0")" && pwd -P) || exit 1 # tests/project
top=$(cd "${TT_SRCDIR:-$here/../..}" && pwd -P) || exit 1
build=${TT_BUILDDIR:-$top}
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
# The same table for awk.
ranks=$(for f in include core reduce codec sched topo cuda algorithms transports tune comm coll device compress api \
    tools nccl; do printf '%s=%s ' "$f" "$(rank $f)"; done)

bad=0
breach() {
    echo "$1"
    bad=1
}

. "$here/../lib/sources.sh"
sources=$(tt_sources)

# pick PATTERN...: the sources there are that match a pattern ('*' spans folders).
pick() {
    printf '%s\n' "$sources" | while IFS= read -r f; do
        for p in "$@"; do
            case "$f" in
            $p) [ -f "$f" ] && echo "$f" && break ;;
            esac
        done
    done
}

files=$(pick 'src/*.c' 'src/*.h' 'src/*.cu' 'src/*.cuh' 'transports/*.c' 'transports/*.h' 'algorithms/*.c' 'algorithms/*.h' \
    'nccl/*.c' 'nccl/*.h')
[ -n "$files" ] || breach "no sources found in $top"

# One awk over every include line (grep -n of all files at once): a shell
# loop forking per line took half a minute.
includes=$({
    printf '%s\n' "$files" | sed 's/^/F /'
    grep -Hn '^#include "' $files | sed 's/^/I /'
} | awk -v ranks="$ranks" '
    function folder(f, p) {
        if (f ~ /^src\/[^\/]+\//) { split(f, p, "/"); return p[2] }
        if (f ~ /^(transports|algorithms|nccl)\//) { split(f, p, "/"); return p[1] }
        return ""
    }
    function part(s, i, p) { split(s, p, "/"); return p[i] }
    BEGIN { n = split(ranks, r, " "); for (i = 1; i <= n; i++) { split(r[i], kv, "="); rank[kv[1]] = kv[2] } }
    $1 == "F" { f = $2; if (!(folder(f) in rank)) { printf "%s: in no layer of ARCHITECTURE.md\n", f; nolayer[f] = 1 }; next }
    {
        line = substr($0, 3); c1 = index(line, ":"); f = substr(line, 1, c1 - 1)
        rest = substr(line, c1 + 1); ln = substr(rest, 1, index(rest, ":") - 1)
        if (f in nolayer) next
        inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
        from = folder(f); rf = rank[from]; where = f ":" ln ": "
        if (inc == "tutti.h" || inc == "tutti_version.h") to = "include"
        else if (inc ~ /^transports\//) to = "transports"
        else if (inc ~ /\//) to = part(inc, 1)
        else { printf "%sincludes \"%s\" without its folder\n", where, inc; next }
        if (!(to in rank)) printf "%sincludes \"%s\" from no layer\n", where, inc
        else if (to != from && rank[to] >= rf)
            printf "%s%s (layer %d) includes \"%s\" from %s (layer %d)\n", where, from, rf, inc, to, rank[to]
        iface = inc == "transports/transport.h" || inc == "transports/device.h"
        if (from == "transports" && (iface || inc == "transports/local.h")) { }
        else if (from == "transports" && inc ~ /^transports\/.*\/./) {
            if (part(inc, 2) != part(f, 2)) printf "%sa transport includes another\047s \"%s\"\n", where, inc
        } else if (iface) { }
        else if (inc ~ /^transports\//) printf "%sthe core includes a transport\047s \"%s\"\n", where, inc
        if (from == "algorithms" && inc != "sched/schedule.h") {
            if (inc != "algorithms/registry.h") printf "%san algorithm includes \"%s\" (only sched/schedule.h)\n", where, inc
            else if (f != "algorithms/registry.c") printf "%san algorithm includes the registry (only sched/schedule.h)\n", where
        }
    }' 2>&1)
[ -z "$includes" ] || breach "$includes"

# The library's objects: each libtool object (.lo) in the build tree names
# its object file, and its name less the library's prefix names the source
# (src/core/libtutti_core_la-log.lo: src/core/log.c).
objects=$(cd "$build" 2>/dev/null && find src transports algorithms nccl -name '*.lo' 2>/dev/null | sort |
    while IFS= read -r lo; do
        o=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$lo")
        [ -n "$o" ] && [ "$o" != none ] || o=$(sed -n "s/^non_pic_object='\(.*\)'$/\1/p" "$lo")
        name=${lo##*/}
        name=${name%.lo}
        src=${lo%/*}/${name#*_la-}.c
        [ -f "$top/$src" ] || src=${src%.c}.cu
        [ -f "${lo%/*}/$o" ] && echo "$build/${lo%/*}/$o $src"
    done)
if [ -z "$objects" ]; then
    # make check builds the library first; by hand, say what was not checked.
    if [ -n "${TT_BUILDDIR:-}" ]; then
        breach "no objects of the library in $build: the symbols were not checked"
    else
        echo "symbols: no objects of the library in $build (not built), not checked"
    fi
elif ! command -v nm >/dev/null 2>&1; then
    breach "nm is missing (apt-get install binutils): the symbols were not checked"
else
    # A symbol defined in a source file, used by another: where they are
    # in two folders, the user's must be the higher layer.
    symbols=$({
        printf '%s\n' "$objects" | sed 's/^/M /'
        nm -A -g $(printf '%s\n' "$objects" | cut -d' ' -f1) | sed 's/^/N /'
    } | awk -v ranks="$ranks" '
        function folder(f, p) { split(f, p, "/"); return p[1] == "src" ? p[2] : p[1] }
        function own(f, p) { return split(f, p, "/") > 2 && p[1] == "transports" ? p[2] : "" }
        BEGIN { n = split(ranks, r, " "); for (i = 1; i <= n; i++) { split(r[i], kv, "="); rank[kv[1]] = kv[2] } }
        $1 == "M" { src[$2] = $3; next }
        {
            f = src[substr($2, 1, index($2, ":") - 1)]
            if ($3 ~ /^[Uwv]$/) used[f " " $4] = 1
            else if (!($4 in def)) def[$4] = f
        }
        END {
            for (k in used) {
                split(k, u, " "); f = u[1]; s = u[2]; d = def[s]
                if (d == "" || d == f) continue
                from = folder(f); to = folder(d)
                if (from != to && rank[to] >= rank[from])
                    printf "%s: %s (layer %d) uses %s of %s, %s (layer %d)\n", f, from, rank[from], s, d, to, rank[to]
                else if (to == "transports" && own(d) != "" && own(d) != own(f) && f != "transports/transports.c")
                    printf "%s: uses %s of %s, inside a transport (elsewhere only the table may)\n", f, s, d
                else if (from == "algorithms" && to != "algorithms" && to != "sched")
                    printf "%s: an algorithm uses %s of %s (only the schedule layer)\n", f, s, d
            }
        }' | sort)
    [ -z "$symbols" ] || breach "$symbols"
fi

# Length of every source file (the tests' too) and of library functions,
# each in one pass.
long=$(pick '*.c' '*.h' '*.cc' '*.cu' '*.cuh' '*.cpp' '*.py' '*.sh' '*.js' '*.in' | xargs wc -l |
    awk '$2 != "total" && $1 > 600 { printf "%s: %d lines (at most 600)\n", $2, $1 }')
[ -z "$long" ] || breach "$long"
functions=$(printf '%s\n' "$files" | grep -v '^src/tools/' | xargs awk '
    FNR == 1 { start = 0; prev = "" }
    /^[A-Za-z_]/ { sig = $0; sigline = FNR }
    /^\{$/ && prev ~ /\)$/ { start = FNR; name = sig }
    /^\}/ && start { if (FNR - start - 1 > 80) printf "%s:%d: %d-line function: %s\n", FILENAME, sigline, FNR - start - 1, name; start = 0 }
    { prev = $0 }
')
[ -z "$functions" ] || breach "$functions"

[ "$bad" -eq 0 ] && echo "layers: $(echo "$files" | wc -l) sources and $(echo "$objects" | grep -c .) objects:" \
    "every include and symbol goes down; files and functions within their limits"
exit "$bad"
