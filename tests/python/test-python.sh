#!/bin/sh
# SPDX-License-Identifier: MIT
# The Python package on real ranks under tutti-run: every collective on
# numpy arrays (and torch CPU tensors when torch is there), split,
# compression, errors; then `pip install` of python/ into a fresh venv, offline.
# Skips (77) only without python3 or numpy, which the package's tests need.
. "${TT_SRCDIR:-.}/tests/lib/python-env.sh"
tt_python_need numpy || exit 77
echo "abi_values.py: the package's enums, macros and structures against tutti.h"
"$PYTHON" "$TT_SRCDIR/tests/python/abi_values.py" "${CC:-cc}" "$TT_SRCDIR" "$TT_BUILDDIR" || exit 1
for n in 1 2 3; do
    echo "api_ranks.py on $n ranks"
    "$TT_BUILDDIR/tutti-run" -n "$n" "$PYTHON" "$TT_SRCDIR/tests/python/api_ranks.py" || exit 1
done
# TUTTI_LIBRARY (set here, as users set it) is the package's variable: the
# library knows it and says nothing of it.
out=$(TUTTI_LOG=warn "$TT_BUILDDIR/tutti-run" -n 1 "$PYTHON" -c '
import tutti
tutti.Communicator.from_env().destroy()
print("made and destroyed a communicator with TUTTI_LIBRARY set")
' 2>&1) || { echo "$out"; exit 1; }
echo "$out"
if echo "$out" | grep -q "TUTTI_LIBRARY is not a tutti variable"; then
    echo "the library warned of TUTTI_LIBRARY"
    exit 1
fi
# A rank killed mid-job: the survivor's collective raises TuttiError naming the
# failure instead of hanging.
out=$("$TT_BUILDDIR/tutti-run" -n 2 --grace 10 "$PYTHON" -c '
import os, signal, numpy as np, tutti
c = tutti.Communicator.from_env(timeout=20)
c.barrier()
if c.rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
try:
    c.allreduce(np.ones(1 << 20, np.float32))
except tutti.TuttiError as e:
    print("raised", e.name, "|", e.detail)
' 2>&1)
echo "$out"
echo "$out" | grep -q "raised TUTTI_ERR_PEER_FAILED | .*rank 1" || { echo "no TuttiError naming rank 1"; exit 1; }

# Installable offline: a venv that sees the system's packages, then pip.
if "$PYTHON" -m venv --help >/dev/null 2>&1 && "$PYTHON" -m pip --version >/dev/null 2>&1; then
    venv=$(mktemp -d /tmp/tutti-venv-XXXXXX)
    trap 'rm -rf "$venv"' EXIT
    src=$(mktemp -d /tmp/tutti-pysrc-XXXXXX)
    cp -r "$TT_SRCDIR/python/setup.py" "$TT_SRCDIR/python/tutti" "$src"/
    "$PYTHON" -m venv --system-site-packages "$venv/env" || exit 1
    TUTTI_LIBRARY="$TT_BUILDDIR/.libs/libtutti.so.0" "$venv/env/bin/pip" install --no-index -q "$src" || exit 1
    rm -rf "$src"
    (cd "$venv" && env -u TUTTI_LIBRARY PYTHONPATH= "$TT_BUILDDIR/tutti-run" -n 2 "$venv/env/bin/python" -c '
import numpy as np, tutti
assert "/_libs/" in tutti.library_path, tutti.library_path
c = tutti.Communicator.from_env()
x = c.allreduce(np.ones(3, np.float32))
assert list(x) == [2, 2, 2], x
c.destroy()
') || { echo "the pip-installed package does not work"; exit 1; }
    echo "pip install of python/ works"
else
    echo "no venv or pip for $PYTHON: the install check did not run"
fi
