# SPDX-License-Identifier: MIT
"""PyTorch integration: ``import tutti.torch`` registers the backend "tutti".

    import torch.distributed as dist
    import tutti.torch
    dist.init_process_group("tutti")        # env:// : tutti-run, torchrun, or RANK/WORLD_SIZE/MASTER_*

Every collective of torch.distributed runs on tutti for CPU tensors (and CUDA
tensors, through tutti's device path): all_reduce with every ReduceOp except
PREMUL_SUM (and of sparse COO tensors, SUM), broadcast, reduce, all_gather,
all_gather_into_tensor, all_gather_coalesced, reduce_scatter(_tensor),
all_to_all(_single), gather, scatter, send/recv (recv from any source
too), batch_isend_irecv, barrier, the group's monitored_barrier, and
new_group; on torch 2.x also the coalesced forms (``_coalescing_manager``)
and functional collectives. The group is C++ (csrc/), as torch's
third-party backends are (_pg.py). Calls return async Work objects; they
run on one thread per group, in the order they were issued; their futures
complete, and callbacks run, on threads no group waits on. isend/irecv are
held until one of their Works is waited on or asked about, or any group's
next call, then run together in an order that cannot deadlock. The group's
timeout (init_process_group's ``timeout``) is tutti's: a dead or stuck peer
fails the call with an error naming it instead of hanging, raised by
wait(), the Future and DDP's backward. Where torch was built without libuv
(Debian 13's torch 2.6) and USE_LIBUV is unset, importing this sets
USE_LIBUV=0, without which env:// cannot start there.

``compression_hook`` with a ``CompressionState`` is a DDP communication hook
that all-reduces gradients compressed (top-k, int8, sign) with error
feedback per bucket, on any process group.

When a rank dies, the survivors go on without restarting: ``shrink(pg)``
gives the group of the ranks left, ``grow(pg, store, n)`` with ``join`` on
a newcomer brings a replacement in, and both carry a CompressionState's
error feedback over (``states=``); see _elastic.py.
"""
import datetime
import os

import torch.distributed as dist

from ._elastic import grow, join, regroup, shrink
from ._hook import CompressionState, compression_hook
from ._pg import ProcessGroupTutti, communicator, create

BACKEND = "tutti"


def _store_default():
    """torch 2.4 and later make env://'s TCPStore use libuv unless USE_LIBUV=0,
    and fail at once where torch was built without it (Debian 13's
    python3-torch): no env:// group could ever start there, so the working
    store is chosen instead. A USE_LIBUV the user set is left alone."""
    if "USE_LIBUV" in os.environ or not hasattr(dist, "TCPStore"):
        return
    try:
        store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5), wait_for_workers=False,
                              use_libuv=True)
    except TypeError:
        return  # torch before 2.4: no libuv option, nothing to choose
    except RuntimeError as e:
        if "libuv" in str(e):
            os.environ["USE_LIBUV"] = "0"
        return
    del store


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return  # already registered (a reload)
    kwargs = {}
    try:  # torch 2.x asks which devices a backend serves
        import inspect

        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            kwargs["devices"] = ["cpu", "cuda"]
    except (TypeError, ValueError):
        pass
    dist.Backend.register_backend(BACKEND, create, **kwargs)


_store_default()
_register()

__all__ = ["BACKEND", "ProcessGroupTutti", "CompressionState", "compression_hook", "communicator", "shrink", "grow",
           "join", "regroup"]
