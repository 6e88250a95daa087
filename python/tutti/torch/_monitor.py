# SPDX-License-Identifier: MIT
"""monitored_barrier: a barrier that names the ranks that did not arrive.

It goes through the group's store, not the communicator: its timeout is
its own (a call that waited past it would otherwise end the communicator),
and a rank that never arrives leaves nothing half-received. Every rank but
0 says it arrived and waits to be let through; rank 0 waits for each in
turn until the deadline, then raises naming the missing ones (the first
only, unless wait_all_ranks), or lets everyone through. The errors carry
gloo's words, which tools look for; rank 0 out of time before a rank's
turn (a timeout of 0) says it timed out, as gloo does.
"""
import datetime
import time

_POLL_S = 0.005


def _ms(timeout):
    return int(timeout.total_seconds() * 1000)


def _counted(store, key, deadline):
    """Whether key was counted up before deadline (time.monotonic()).

    Polled with add(key, 0), as torch's own store barrier does: a store's
    wait that times out leaves its waiter behind, and the key's arrival
    later would answer it, out of turn, the next command on that
    connection."""
    while store.add(key, 0) == 0:
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


def monitored_barrier(store, rank, size, number, timeout, wait_all_ranks=False):
    """Barrier number `number` of the group on store; timeout a timedelta or seconds."""
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    prefix = f"tutti/monitored_barrier/{number}/"
    if rank != 0:
        store.add(prefix + str(rank), 1)
        if not _counted(store, prefix + "pass", time.monotonic() + timeout.total_seconds()):
            raise RuntimeError(
                f"tutti: monitored_barrier timeout on rank {rank}: Rank {rank} successfully reached "
                "monitoredBarrier, but received errors while waiting for send/recv from rank 0 (it did not let "
                f"this rank pass within {_ms(timeout)} ms; its error names the ranks that did not arrive)")
        return
    deadline = time.monotonic() + timeout.total_seconds()
    missing = []
    for q in range(1, size):
        if missing and not wait_all_ranks:
            break
        if not wait_all_ranks and time.monotonic() > deadline:  # out of time before rank q's turn
            done = ", ".join(map(str, range(1, q))) or "none"
            raise RuntimeError(f"tutti: monitored_barrier timeout on rank 0: Rank 0 timed out in monitoredBarrier "
                               f"after {_ms(timeout)} ms (ranks that arrived: {done})")
        if not _counted(store, prefix + str(q), deadline):
            missing.append(q)
    if missing:
        who = f"Rank {missing[0]}" if len(missing) == 1 else "Ranks " + ", ".join(map(str, missing))
        raise RuntimeError(f"tutti: monitored_barrier timeout on rank 0: {who} failed to pass monitoredBarrier "
                           f"in {_ms(timeout)} ms")
    # Every rank read the previous barrier's pass before it arrived here.
    for key in [prefix + str(q) for q in range(1, size)] + [f"tutti/monitored_barrier/{number - 1}/pass"]:
        store.delete_key(key)
    store.add(prefix + "pass", 1)
