# SPDX-License-Identifier: MIT
"""tutti: collective communication for host and CUDA buffers, from Python.

    import tutti, numpy as np
    comm = tutti.Communicator.from_env()          # under tutti-run, torchrun, mpirun
    x = np.full(4, comm.rank, dtype=np.float32)
    comm.allreduce(x)                             # in place: 0 + 1 + ... + size-1
    comm.destroy()

Collectives take torch tensors (CPU, CUDA), numpy arrays, CUDA array objects
and writable buffers; failures raise TuttiError with tutti's own explanation.
``import tutti.torch`` registers the PyTorch backend "tutti". The shared
library is found through TUTTI_LIBRARY, a copy installed with the package,
the build tree this folder sits in, or the dynamic loader.
"""
from . import _lib
from ._buffers import DTYPES
from ._comm import Communicator, Op, UniqueId, get_unique_id
from ._compress import Compression, CompressStats, ErrorFeedback
from ._errors import TuttiError

SUM, PROD, MIN, MAX, AVG = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG
SPLIT_NOCOLOR = _lib.SPLIT_NOCOLOR
SHRINK_ABORT, SHRINK_DEAD = _lib.SHRINK_ABORT, _lib.SHRINK_DEAD
library_path = _lib.path


def version():
    """The loaded library's version as (major, minor, patch)."""
    import ctypes

    v = [ctypes.c_int() for _ in range(3)]
    _lib.lib.tutti_get_version(*[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


__version__ = "%d.%d.%d" % version()
__all__ = ["Communicator", "Op", "UniqueId", "get_unique_id", "Compression", "CompressStats", "ErrorFeedback",
           "TuttiError", "SUM", "PROD", "MIN", "MAX", "AVG", "SPLIT_NOCOLOR", "DTYPES", "version"]
