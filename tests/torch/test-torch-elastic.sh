#!/bin/sh
# SPDX-License-Identifier: MIT
# The PyTorch backend goes on after kill -9 of a rank, without restarting the
# processes: perf/ddp/elastic-ddp.py's tutti run, short (4 ranks, one killed, the
# three left shrink and train on, a replacement joins with grow, the
# compression hook's error feedback carried over); --check fails unless every
# rank finished, the world went to 3 and back to 4 and the loss fell.
# Skips (77) when tutti.torch cannot be imported (tests/lib/python-env.sh).
. "${TT_SRCDIR:-.}/tests/lib/python-env.sh"
tt_torch_backend || exit $?
exec "$PYTHON" "$TT_SRCDIR/perf/ddp/elastic-ddp.py" --run tutti --steps 24 --kill-at 8 --join-at 12 --check
