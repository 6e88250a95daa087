# SPDX-License-Identifier: MIT
"""Going on after a rank dies, without restarting the processes.

A rank that dies (kill -9, a lost host) makes the collective waiting on it
fail on every survivor within milliseconds: a RuntimeError out of DDP's
backward, a TuttiError out of a call. The survivors then call ``shrink``
on their group: it is revoked (whatever still waits on it ends), the
survivors agree on who is left without needing any working collective
(rank 0 may be the one that died), and each gets a ProcessGroupTutti of
the survivors, in their old order. A replacement comes in with ``grow`` on
the group's ranks and ``join`` on the newcomer, which meet through a torch
Store. DDP is wrapped anew over the new group, once the old wrapper is
dropped (its gradient hooks go with it); ``regroup`` (or the ``states``
argument) carries a CompressionState's error feedback over.

    pg = tutti.torch.shrink(pg, states=[hook_state])
    ddp = None; gc.collect()                 # the old wrapper's hooks go
    ddp = DistributedDataParallel(model, process_group=pg)
    ddp.register_comm_hook(hook_state, tutti.torch.compression_hook)

The new group is not torch's default group: pass it as ``group=`` (and
``process_group=`` to DDP).
"""
import tutti

from ._pg import backend_of, of_comm


def params_key(bucket):
    """Which parameters a DDP bucket holds, in order: what a regroup matches states on."""
    return tuple(id(p) for p in bucket.parameters()) if hasattr(bucket, "parameters") else None


def _live(pg, call):
    """pg's backend and communicator, whatever its thread is doing (it may
    wait on a rank that is gone)."""
    backend = backend_of(pg)
    if backend is None or backend._comm_handle() is None:
        raise ValueError(f"tutti.torch.{call}: {pg!r} is not a live tutti process group")
    return backend, tutti.Communicator._borrow(backend._comm_handle())


def shrink(pg, exclude=(), dead=True, states=()):
    """The group of the ranks of ``pg`` that remain; ``pg`` is then spent.

    Every remaining rank calls it. ``exclude``: ranks of pg to leave out
    (they call nothing); ``dead``: also leave out every rank found dead
    before or during the shrink (tutti_comm_shrink's TUTTI_SHRINK_DEAD).
    Ranks keep their order. ``states``: CompressionStates to regroup.
    Raises TuttiError when the survivors cannot agree (see tutti_comm(3)).

    After a rank died every survivor's call on pg fails naming it, so pg
    is revoked (whatever its thread still has queued then ends at once)
    only once the survivors agreed: revoked earlier, a survivor still
    waiting would learn only who revoked it. Ranks left out with
    ``exclude`` are alive, so pg is revoked first then, to stop the calls
    that wait on them."""
    backend, comm = _live(pg, "shrink")
    small = comm.shrink(exclude, dead=dead, abort=bool(exclude))
    comm.revoke()
    backend._retire(destroy=False)
    new = of_comm(small)
    for s in states:
        regroup(s, new)
    return new


def grow(pg, store, nranks, key="tutti/grow", states=()):
    """The group of ``nranks`` ranks: pg's keep their ranks, newcomers (which
    call ``join`` with the same store and key) take the ones above. Every
    rank of pg calls it; pg is destroyed. Use a key of its own for each grow."""
    backend, comm = _live(pg, "grow")
    backend._drain().wait()  # grow is a collective on pg's communicator: after pg's own calls
    uid = None
    if comm.rank == 0:
        uid = tutti.get_unique_id()
        store.set(key, bytes(uid))
    big = comm.grow(nranks, uid)
    backend._retire(destroy=True)
    new = of_comm(big)
    for s in states:
        regroup(s, new)
    return new


def join(store, rank, nranks, key="tutti/grow", timeout=None):
    """On a newcomer: its group, as rank ``rank`` of ``nranks``, once the
    group's ranks call ``grow`` with the same store and key. ``timeout``
    (seconds or a timedelta) should be the group's."""
    uid = tutti.UniqueId(store.get(key))
    return of_comm(tutti.Communicator(nranks, rank, uid, timeout=timeout))


def regroup(state, pg):
    """Moves a CompressionState to pg (after shrink or grow), keeping its
    error feedback: what each bucket has yet to send stays owed (see
    tutti_ef_regroup). The new DDP lays its buckets out anew and then
    rebuilds them, so for two steps each bucket takes the state of the old
    bucket that held the same parameters in the same order."""
    if state._own:
        state._backend._retire(destroy=False)  # the hook's own group, over a group that was not tutti's
    state.process_group = pg
    state._backend, state._own = None, False
    pool = dict(state._carried or {})
    for ef in list(state._feedback.values()) + list(pool.values()):
        if ef.nranks != pg.size():
            ef.regroup(pg.size(), tutti.AVG)
        pool[ef.key] = ef
    state._feedback = {}
    state._carried = pool
    state._carry_until = state.step + 2
    return state


def carried_state(state, index, count, bucket):
    """A bucket's state in the steps after a regroup: the one kept for its
    parameters, else a new one."""
    key = params_key(bucket)
    ef = state._carried.get(key)
    if ef is None or ef.count != count:
        ef = tutti.ErrorFeedback(count, state._backend.size())
        ef.key = key
        state._carried[key] = ef
    state._feedback[index] = ef
    return ef
