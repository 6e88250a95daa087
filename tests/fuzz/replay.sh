#!/bin/sh
# SPDX-License-Identifier: MIT
# make check: every fuzz target on its committed seeds and on every input
# that once crashed it (tests/fuzz/crashes/TARGET), built without libFuzzer.
src=${TT_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${TT_BUILDDIR:-.}
status=0
for t in star hello tcp shm id tuning topo-xml config; do
    dirs="$src/tests/fuzz/corpus/$t $src/tests/fuzz/crashes/$t"
    [ "$t" = topo-xml ] && dirs="$dirs $src/tests/fixtures"
    # shellcheck disable=SC2086
    "$build/tests/fuzz/replay-$t" $dirs || { echo "replay-$t failed"; status=1; }
done
exit $status
