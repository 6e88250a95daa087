#!/bin/sh
# SPDX-License-Identifier: MIT
# The PyTorch backend keeps torch's Work and Future contract, on whichever
# torch $PYTHON has (Debian 12: 1.13; .ci/torch2: 2.6): callbacks that issue
# collectives, errors through futures, coalescing, a held isend on a subgroup
# (tests/torch/torch_contract.py, 2 and 3 ranks under tutti-run); and DDP
# surviving a rank killed with SIGKILL as the README says, plain and with the
# compression hook (tests/torch/torch_lost_rank.py, 3 ranks it starts
# itself). Skips (77) when tutti.torch cannot be imported (tests/lib/python-env.sh).
. "${TT_SRCDIR:-.}/tests/lib/python-env.sh"
tt_torch_backend || exit $?
for n in 2 3; do
    echo "torch_contract.py on $n ranks"
    "$TT_BUILDDIR/tutti-run" -n "$n" "$PYTHON" "$TT_SRCDIR/tests/torch/torch_contract.py" || exit 1
done
for hook in none topk; do
    echo "torch_lost_rank.py --hook $hook"
    "$PYTHON" "$TT_SRCDIR/tests/torch/torch_lost_rank.py" --hook "$hook" || exit 1
done
