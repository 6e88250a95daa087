#!/bin/sh
# SPDX-License-Identifier: MIT
# ARCHITECTURE.md's recipes ("Where to add") against the code, so that they
# cannot drift: for each kind of thing a recipe adds (a dtype, a
# collective, a link class, a transport, an algorithm), the members are
# read from the one list that defines them, and every source file that
# names at least half of them (a switch, a table or a mapping over the
# kind, which a new member must join) must be named in that kind's recipe;
# every file a recipe names in backquotes must exist; every test sits in
# the folder of its module, in tests/README.md's map. Reads sources only
# (git's list in a checkout, else the list a release tarball carries, else
# find), writes nothing; prints every breach and exits 1 if there is one.
here=$(cd "$(dirname "$0")" && pwd -P) || exit 1 # tests/project
top=$(cd "${TT_SRCDIR:-$here/../..}" && pwd -P) || exit 1
cd "$top" || exit 1
. "$here/../lib/sources.sh"
bad=0
breach() {
    echo "$1"
    bad=1
}
sources=$(tt_sources | grep -E '^(src|transports|algorithms|nccl|perf|python)/.*\.(c|h|cu|cuh|cpp|py)$' |
    while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done)
[ -n "$sources" ] || breach "no sources found in $top"

# recipe HEADING: the text of the recipe whose bullet starts "- **HEADING**".
recipe() {
    awk -v h="- **$1**" 'index($0, h) == 1 { on = 1; print; next }
        on && (/^- \*\*/ || /^## /) { exit } on' ARCHITECTURE.md
}

# check KIND KINDS HEADING MEMBERS...: every source naming half of MEMBERS
# (whole words) is named in the recipe for a KIND; what the recipe names
# exists. (No source but the list itself may name them: link classes.)
check() {
    kind=$1
    kinds=$2
    text=$(recipe "$3")
    what=$(echo "$3" | sed 's/^A/a/')
    shift 3
    [ -n "$text" ] || {
        breach "ARCHITECTURE.md has no recipe for $what"
        return
    }
    [ "$#" -ge 2 ] || {
        breach "found only $# $kinds in their list: the list's form changed, and this check must with it"
        return
    }
    flat=$(printf '%s\n' "$text" | tr '\n' ' ')
    # One pass over every source: the files that name at least half of them.
    found=$(awk -v list="$*" -v need=$((($# + 1) / 2)) '
        BEGIN { n = split(list, m, " "); for (i = 1; i <= n; i++) member[m[i]] = 1 }
        {
            k = split($0, w, /[^A-Za-z0-9_]+/)
            for (i = 1; i <= k; i++)
                if ((w[i] in member) && !((FILENAME, w[i]) in seen)) { seen[FILENAME, w[i]] = 1; count[FILENAME]++ }
        }
        END { for (f in count) if (count[f] >= need) print f, count[f] }' $sources | sort)
    printf '%s\n' "$found" | while read -r f n; do
        [ -n "$f" ] || continue
        case $flat in
        *"\`$f\`"* | *"\`$(basename "$f")\`"*) ;;
        *) echo "$f names $n of the $# $kinds, but ARCHITECTURE.md's recipe for $what does not name it" ;;
        esac
    done | grep . && bad=1
    printf '%s\n' "$text" | grep -oE '`(src|transports|algorithms|nccl|perf|python|man|tests)/[^` ]+`' | tr -d '`' |
        sort -u | while IFS= read -r p; do
            case $p in *'<'*) continue ;; esac
            [ -e "$p" ] || echo "ARCHITECTURE.md's recipe for $what names $p, which does not exist"
        done | grep . && bad=1
}

# The members of each kind, from the one list that defines them.
dtypes=$(awk '/^typedef enum \{/ { n = 0; next } { if (match($0, /^ +TUTTI_[A-Z0-9_]+/)) m[++n] = substr($0, RSTART, RLENGTH) }
    /^\} tutti_dtype_t;/ { for (i = 1; i <= n; i++) if (m[i] !~ /NUM_DTYPES/) { sub(/^ +/, "", m[i]); print m[i] }; exit }' \
    src/include/tutti.h)
check dtype dtypes "A dtype" $dtypes
check collective collectives "A collective" $(sed -n 's/^ *X(\([A-Z_]*\), ".*/TT_COLL_\1/p' src/sched/schedule.h)
check "link class" "link classes" "A transport" $(sed -n 's/^ *X(\([A-Z_]*\), ".*/TT_LINK_\1/p' src/core/link.h)
check transport transports "A transport" $(grep -oE '&tt_[a-z0-9_]+_ops' transports/transports.c | tr -d '&')
check algorithm algorithms "An algorithm" $(sed -n 's/^ *X(\([a-z0-9_]*\)).*/tt_algo_\1/p' algorithms/registry.h)

# The recipe for a test: it sits in the folder of tests/ named after its
# module, and every folder is in tests/README.md's map (and only those).
tests=$(tt_sources | grep -E '^tests/')
printf '%s\n' "$tests" | grep -E '^tests/test[-_][^/]*$' | sed 's/^/a test in no module'"'"'s folder of tests\/: /' | grep . &&
    bad=1
folders=$(printf '%s\n' "$tests" | sed -n 's|^tests/\([^/]*\)/.*|\1|p' | sort -u)
mapped=$(sed -n 's/^\(| \|- \)`\([a-z_]*\)\/`.*/\2/p' tests/README.md | sort -u)
for d in $folders; do
    printf '%s\n' "$mapped" | grep -qx "$d" || breach "tests/$d/ is not in tests/README.md's map"
done
for d in $mapped; do
    [ -d "tests/$d" ] || breach "tests/README.md's map names tests/$d/, which does not exist"
done
exit "$bad"
