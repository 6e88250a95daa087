# Sourced by the checks that read the tree's sources (check-layers.sh,
# check-recipes.sh), from its top ($top): tt_sources prints every source
# file, one per line: git's list in a checkout, else the list a release
# tarball carries (build-aux/dist-files, written by make dist), else what
# find sees less what a build makes (objects, libraries, dependency files,
# programs without a suffix, and X from X.in). Outside git, what autogen.sh
# writes is left out too (the autotools part of .gitignore): a tarball
# carries it, and so does a clean clone copied without git.
tt_sources() {
    if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
        git ls-files -co --exclude-standard
    elif [ -f build-aux/dist-files ]; then
        tt_not_autotools <build-aux/dist-files
    else
        find . \( -name .git -o -name .libs -o -name .deps -o -name autom4te.cache \) -prune -o -type f \
            \( -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.py' -o -name '*.sh' \
            -o -name '*.map' -o -name '*.include' -o -name '*.in' \) -print | sed 's|^\./||' |
            while IFS= read -r f; do [ -f "$f.in" ] || echo "$f"; done | tt_not_autotools
    fi
}

# tt_not_autotools: the list on stdin less autotools' outputs.
tt_not_autotools() {
    grep -v -E '^(build-aux/|autom4te\.cache/|configure$|config\.h\.in$|aclocal\.m4$|m4/(libtool|lt.*)\.m4$)|(^|/)Makefile\.in$'
}
