#!/bin/sh
# SPDX-License-Identifier: MIT
# PyTorch's own distributed test battery on backends tutti and gloo, at
# world sizes 2 and 3, compared (tests/torch/battery/torch_battery.py: it fails
# when a test passes on gloo but not on tutti, outside its list of known
# differences). Minutes long, so not part of make check: CI runs it, on
# Debian 12's torch 1.13 (.ci/run, world size 2 only) and Debian 13's
# torch 2.6 (.ci/torch2).
# Run it from a built tree; arguments go to the runner (-h lists them).
# Skips (77) when torch or its battery cannot be imported.
. "${TT_SRCDIR:-.}/tests/lib/python-env.sh"
tt_python_need torch || exit 77
tt_python_need torch.distributed || exit 77
tt_torch_backend || exit $?
battery=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "testing", "_internal", "distributed", "distributed_test.py"))')
if [ ! -f "$battery" ]; then
    echo "SKIP: $battery is missing (this torch ships without its test battery)"
    exit 77
fi
exec "$PYTHON" "$TT_SRCDIR/tests/torch/battery/torch_battery.py" "$@"
