# SPDX-License-Identifier: MIT
"""ProcessGroupTutti: torch.distributed's collectives on a tutti communicator.

The group is C++ (csrc/, loaded by _ext.py), as torch's third-party
backends are: each call is checked on the caller's thread and queued on a
thread of the group's own, which runs the tutti calls in issue order; the
caller gets a Work at once, done by that thread, whose Future is completed
(and callbacks run) on a thread that no group waits on; a failure reaches
wait(), the Future and DDP's backward as an exception. On torch 1.x the
group is torch's ProcessGroup; on 2.x it is a Backend, which torch wraps
in a ProcessGroup of its own. Here: its making from torch's store, and
finding it (and its tutti.Communicator) behind what torch hands out.
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


def create(store, rank, size, timeout=datetime.timedelta(minutes=30)):
    """What torch calls to make a "tutti" group (init_process_group, new_group)."""
    comm = _rendezvous(store, rank, size, timeout)
    return ProcessGroupTutti(store, rank, size, timeout, comm._give())


def of_comm(comm, timeout=datetime.timedelta(minutes=30)):
    """A group over ``comm`` (a tutti.Communicator, which it takes over),
    as torch hands groups out: the backend itself on torch 1.x, torch's
    ProcessGroup around it on 2.x (the shrunk and grown groups)."""
    backend = ProcessGroupTutti(None, comm.rank, comm.size, timeout, comm._give())
    if not hasattr(dist.ProcessGroup, "_register_backend"):
        return backend
    pg = dist.ProcessGroup(dist.HashStore(), comm.rank, comm.size)
    custom = dist.ProcessGroup.BackendType.CUSTOM
    pg._set_default_backend(custom)
    for device in ("cpu", "cuda"):
        pg._register_backend(torch.device(device), custom, backend)
    return pg


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
