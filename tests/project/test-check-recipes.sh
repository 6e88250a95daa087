#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/project/check-recipes.sh on a copy of the tree without git (as a release
# tarball is, files found with find): the copy as it is must pass; with a
# new file that switches over the dtypes, or a recipe that names a file
# that is gone, it must fail naming each.
set -u
S=${TT_SRCDIR:-.}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}
tree=$WORK/tutti
mkdir -p "$tree/tests" || exit 1
# What the recipes name: sources, pages, the tests' own files, the makefiles' parts.
for d in src transports algorithms nccl perf python man tests; do
    (cd "$S" && find "$d" -type f \( -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.py' \
        -o -name '*.md' -o -name '*.include' \) -exec cp --parents -t "$tree" {} +) || exit 1
done
cp "$S/ARCHITECTURE.md" "$tree/" || exit 1

TT_SRCDIR=$tree sh "$S/tests/project/check-recipes.sh" >"$WORK/out" 2>&1 || {
    cat "$WORK/out"
    fail "the copy as it is should pass"
}

cat >"$tree/perf/width.c" <<'EOC'
static int width(int t)
{
    switch (t) {
    case TUTTI_INT8: case TUTTI_UINT8: case TUTTI_FP8_E4M3: case TUTTI_FP8_E5M2: return 1;
    case TUTTI_FP16: case TUTTI_BF16: return 2;
    default: return 4;
    }
}
EOC
awk -v add='  (and `src/core/gone.c`)' '{ print } /^- \*\*A dtype\*\*/ { print add }' "$tree/ARCHITECTURE.md" >"$WORK/arch" &&
    cp "$WORK/arch" "$tree/ARCHITECTURE.md" || exit 1
if TT_SRCDIR=$tree sh "$S/tests/project/check-recipes.sh" >"$WORK/out" 2>&1; then
    fail "a new switch over the dtypes and a recipe naming a missing file should fail"
fi
grep -q '^perf/width.c names 6 of the 12 dtypes' "$WORK/out" || {
    cat "$WORK/out"
    fail "the planted switch over the dtypes is not named"
}
grep -q 'names src/core/gone.c, which does not exist' "$WORK/out" || {
    cat "$WORK/out"
    fail "the recipe's missing file is not named"
}
echo "check-recipes: passes on the tree, names a planted switch and a recipe's missing file"
