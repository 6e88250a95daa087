#!/bin/sh
# SPDX-License-Identifier: MIT
# make install: every public function of tutti.h gets a section-3 page of
# its name that leads to the page documenting it; a staged install
# (DESTDIR) says nothing about the loader; an install into a prefix the
# loader does not search says what programs need, and a program built
# against it runs as said. The ldconfig hook's other answers are checked on
# the script itself. Runs make in the build tree.
set -u
B=${TT_BUILDDIR:-.}
S=${TT_SRCDIR:-.}
MAKE=${MAKE:-make}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}

# Staged: the files, the alias pages, and no word about the loader.
$MAKE -s -C "$B" install DESTDIR="$WORK/stage" >"$WORK/stage.log" 2>&1 || fail "make install DESTDIR: $(tail "$WORK/stage.log")"
! grep -q '^tutti: ' "$WORK/stage.log" || fail "a staged install spoke of the loader: $(grep '^tutti: ' "$WORK/stage.log")"
man3=$(find "$WORK/stage" -type d -name man3)
[ -d "$man3" ] || fail "no man3 installed"
functions=$(sed -n 's/^TUTTI_API [^(]*[ *]\(tutti_[a-z0-9_]*\)(.*/\1/p' "$S/src/include/tutti.h")
[ "$(echo "$functions" | wc -w)" -gt 20 ] || fail "could not read the functions of tutti.h"
for fn in $functions; do
    page="$man3/$fn.3"
    [ -f "$page" ] || fail "man $fn finds nothing"
    target=$(sed -n 's|^\.so man3/||p' "$page")
    [ -n "$target" ] && [ -f "$man3/$target" ] || fail "$fn.3 leads nowhere: $(cat "$page")"
    # The NAME section of the page it leads to lists the function.
    awk '/^\.SH NAME/ { on = 1; next } /^\.SH/ { on = 0 } on' "$man3/$target" | tr -d '\\' |
        grep -qw "$fn" || fail "$target does not name $fn"
done
echo "man: $(echo "$functions" | wc -w) functions, each with a page"

# A prefix the loader does not search: the hook says what programs need.
prefix="$WORK/prefix"
$MAKE -s -C "$B" install prefix="$prefix" >"$WORK/prefix.log" 2>&1 || fail "make install prefix: $(tail "$WORK/prefix.log")"
grep -q "^tutti: the loader does not search $prefix/lib: programs linked with -ltutti need" "$WORK/prefix.log" ||
    fail "no word on the loader: $(grep '^tutti' "$WORK/prefix.log")"
grep -q "LD_LIBRARY_PATH=$prefix/lib or -Wl,-rpath,$prefix/lib" "$WORK/prefix.log" || fail "$(cat "$WORK/prefix.log")"
cat >"$WORK/hello.c" <<'EOF'
#include <stdio.h>
#include <tutti.h>
int main(void)
{
    tutti_comm_t comm;
    int size = 0;
    if (tutti_comm_init_env(&comm, NULL) || tutti_comm_size(comm, &size))
        return 1;
    printf("size %d %s\n", size, tutti_dtype_name(TUTTI_BF16));
    return tutti_comm_destroy(comm);
}
EOF
${CC:-cc} "$WORK/hello.c" -I"$prefix/include" -L"$prefix/lib" -ltutti -o "$WORK/hello" || fail "cannot build against $prefix"
if env -u LD_LIBRARY_PATH "$WORK/hello" >/dev/null 2>&1; then
    fail "the program ran without LD_LIBRARY_PATH, so the message is wrong"
fi
[ "$(env -u TUTTI_RANK -u RANK LD_LIBRARY_PATH="$prefix/lib" "$WORK/hello")" = "size 1 bf16" ] ||
    fail "with LD_LIBRARY_PATH=$prefix/lib the program did not run"
echo "prefix $prefix: said, and a program runs as said"

# The hook on a directory the loader searches: root refreshes the cache
# (not tried here, it would change this machine), anyone else is told.
searched=$(ldconfig -N -v 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p' | head -1)
if [ -n "$searched" ] && [ "$(id -u)" -ne 0 ]; then
    said=$(sh "$S/src/tools/ldconfig-hook.sh" "$searched")
    case $said in
    *"run 'sudo ldconfig' once, so the loader finds libtutti.so.0 in $searched"*) echo "$searched: $said" ;;
    *) fail "for $searched: $said" ;;
    esac
fi
[ -z "$(DESTDIR=/x sh "$S/src/tools/ldconfig-hook.sh" /nowhere)" ] || fail "the hook spoke for a staged install"
echo "PASS"
