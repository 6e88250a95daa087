# SPDX-License-Identifier: MIT
# Sourced by the Python test drivers: which interpreter (Debian's, which sees
# python3-torch and python3-numpy), and the package and library of this build.
TT_BUILDDIR=${TT_BUILDDIR:-.}
TT_SRCDIR=${TT_SRCDIR:-.}
if [ -z "$PYTHON" ]; then
    PYTHON=/usr/bin/python3
    [ -x "$PYTHON" ] || PYTHON=$(command -v python3)
fi
PYTHONPATH="$TT_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
TUTTI_LIBRARY="$TT_BUILDDIR/.libs/libtutti.so.0"
export PYTHON PYTHONPATH TUTTI_LIBRARY

# tt_python_need MODULE: true when $PYTHON imports it, else says why.
tt_python_need() {
    if [ -z "$PYTHON" ] || ! "$PYTHON" -c "import $1" 2>/dev/null; then
        echo "SKIP: ${PYTHON:-python3} cannot import $1 (apt-get install python3-$1)"
        return 1
    fi
}

# tt_torch_backend: true when $PYTHON imports torch and tutti.torch (the
# backend's C++ half was built for that torch), else says why and returns
# 77 (skip) or, where configure built the backend (TT_TORCH_BUILT=yes from
# make check) yet it does not import, 1: a broken build must not pass as
# a skip.
tt_torch_backend() {
    if [ "${TT_TORCH_BUILT:-}" = no ]; then
        echo "SKIP: configure left the PyTorch backend out (--without-torch, or no torch headers: see its summary)"
        return 77
    fi
    tt_python_need torch || return 77
    tt_why=$("$PYTHON" -c 'import tutti.torch' 2>&1 | tail -n 1)
    [ -z "$tt_why" ] && return 0
    if [ "${TT_TORCH_BUILT:-}" = yes ]; then
        echo "FAIL: configure built the PyTorch backend, yet: $tt_why"
        return 1
    fi
    echo "SKIP: $tt_why"
    return 77
}
