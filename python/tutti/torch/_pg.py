# SPDX-License-Identifier: MIT
"""ProcessGroupTutti: torch.distributed's collectives on a tutti communicator.

The group is C++ (csrc/, loaded by _ext.py), as torch's third-party
backends are: each call is checked on the caller's thread and queued on a
thread of the group's own, which runs the tutti calls in issue order; the
caller gets a Work at once, done by that thread, whose Future is completed
(and callbacks run) on a thread that no group waits on; a failure reaches
wait(), the Future and DDP's backward as an exception. On torch 1.x the
group is torch's ProcessGroup; on 2.x it is a Backend, held by a
ProcessGroup of ours (_Group) that names itself "tutti" where torch's
would say "custom". Here: its making from torch's store, and finding it
(and its tutti.Communicator) behind what torch hands out.
"""
import atexit
import datetime

import torch
import torch.distributed as dist

import tutti

from ._ext import ext

ProcessGroupTutti = ext.ProcessGroupTutti
_UID_KEY = "tutti/unique_id"

# A group's calls still queued at exit run first (an isend nobody waited
# on still goes out), and its thread ends before the interpreter's do.
atexit.register(ext._stop_all)


def _rendezvous(store, rank, size, timeout):
    """The group's communicator: rank 0 makes the id, the store hands it on."""
    if rank == 0:
        uid = tutti.get_unique_id()
        store.set(_UID_KEY, bytes(uid))
    else:
        uid = tutti.UniqueId(store.get(_UID_KEY))
    return tutti.Communicator(size, rank, uid, timeout=timeout)


if hasattr(dist.ProcessGroup, "_register_backend"):

    class _Group(dist.ProcessGroup):
        """torch 2.x's ProcessGroup holding a tutti backend for CPU and CUDA.
        torch's own would name itself after its BackendType, "custom" for
        every backend from outside torch (DDP's logging data would say so);
        torch takes a ProcessGroup that a backend's creator returns as the
        group itself."""

        def __init__(self, backend):
            super().__init__(dist.HashStore(), backend.rank(), backend.size())
            custom = dist.ProcessGroup.BackendType.CUSTOM
            self._set_default_backend(custom)
            for device in ("cpu", "cuda"):
                self._register_backend(torch.device(device), custom, backend)

        def getBackendName(self):
            return "tutti"

    def _as_group(backend):
        return _Group(backend)

else:

    def _as_group(backend):
        return backend  # torch 1.x: the backend is the group


def create(store, rank, size, timeout=datetime.timedelta(minutes=30)):
    """What torch calls to make a "tutti" group (init_process_group, new_group)."""
    comm = _rendezvous(store, rank, size, timeout)
    return _as_group(ProcessGroupTutti(store, rank, size, timeout, comm._give()))


def of_comm(comm, timeout=datetime.timedelta(minutes=30)):
    """A group over ``comm`` (a tutti.Communicator, which it takes over),
    as torch hands groups out (the shrunk and grown groups)."""
    return _as_group(ProcessGroupTutti(None, comm.rank, comm.size, timeout, comm._give()))


def backend_of(pg):
    """The ProcessGroupTutti behind pg (None: the default group), or None
    when pg is another backend's."""
    pg = pg if pg is not None else dist.distributed_c10d._get_default_group()
    if isinstance(pg, ProcessGroupTutti):
        return pg
    try:
        backend = pg._get_backend(torch.device("cpu"))
    except (AttributeError, RuntimeError):
        return None
    return backend if isinstance(backend, ProcessGroupTutti) else None


def communicator(pg=None):
    """The tutti.Communicator of a tutti group (None: the default group),
    for calls of tutti's own beside torch's, once what the group has queued
    ran. Its calls run on the caller's thread: make them while the group
    has no call of torch's under way (its Works waited on). The group owns
    it: destroy or abort it through the group (tutti.torch.shrink and grow
    do)."""
    backend = backend_of(pg)
    if backend is None:
        raise ValueError(f"tutti.torch: {pg!r} is not a tutti process group")
    handle = backend._comm_handle()
    if handle is None:
        raise ValueError(f"tutti.torch: {pg!r} was shrunk, grown or destroyed; its communicator is gone")
    backend._drain().wait()
    return tutti.Communicator._borrow(handle)
