#!/bin/sh
# SPDX-License-Identifier: MIT
# The PyTorch backend on 2 and 3 ranks under tutti-run (tests/python/torch_ranks.py).
# Skips (77) only when torch cannot be imported at all.
. "${TT_SRCDIR:-.}/tests/python-env.sh"
tt_python_need torch || exit 77
for n in 2 3; do
    echo "torch_ranks.py on $n ranks"
    "$TT_BUILDDIR/tutti-run" -n "$n" "$PYTHON" "$TT_SRCDIR/tests/python/torch_ranks.py" || exit 1
done
