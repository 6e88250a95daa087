/* SPDX-License-Identifier: MIT */
/*
 * How the engine waits for its peers once nothing moves. An idle spell
 * first spins (polls on), then sleeps in poll(2) on what its connections
 * armed, until one of them can move, the communicator is woken (abort,
 * news from the other ranks) or the engine's next check is due.
 *
 * The spin pays when the peer answers within it (a sleep and its wake-up
 * cost a few microseconds of system calls, and far more under load), and
 * costs the CPU it burns when the peer does not, which matters when
 * another thread wants the core. So it lasts TUTTI_SPIN_US on a core
 * nobody else wants, and at most CROWDED_SPIN_NS (wait.c) when other work
 * leaves fewer free cores than the host has ranks: long enough that two
 * ranks that run at the same time still answer each other without
 * sleeping, short against the time slice a descheduled peer is away. When
 * ranks outnumber cores, the spin also yields the core between polls: the
 * peer it waits for is likely the one that gets it.
 */
#ifndef TT_COLL_WAIT_H
#define TT_COLL_WAIT_H

#include <sched.h>
#include <stdint.h>

#include "comm/comm.h"
#include "transports/transport.h"

typedef struct {
    tt_comm_t *comm;
    const tt_peer_t *peers;
    const int *list; /* the ranks of peers to look at (NULL: every rank) */
    int n;
    int yield; /* ranks outnumber cores: yield between idle polls */
    tt_wait_set_t ws;
} tt_waiter_t;

/* For a run over peers (the communicator's host connections or a device
 * transport's). */
void tt_waiter_init(tt_waiter_t *w, tt_comm_t *comm, const tt_peer_t *peers);

/* The ranks a run over peers looks at: only those connected, for the
 * communicator's host connections (made at first use), else every rank.
 * The engine's polls, its liveness scan and the wait set cover only them,
 * so their cost grows with the peers a rank talks to, not with N. */
static inline const int *tt_coll_peer_list(tt_comm_t *comm, const tt_peer_t *peers, int *n)
{
    *n = peers == comm->peers ? comm->nconnected : comm->nranks;
    return peers == comm->peers ? comm->connected : NULL;
}
/* An idle spell begins: how long it may spin before it sleeps (ns). */
int64_t tt_waiter_spin_ns(const tt_waiter_t *w);
/* Between two idle polls of the spin. */
static inline void tt_waiter_pause(const tt_waiter_t *w)
{
    if (w->yield)
        sched_yield();
}
/* Sleeps until a connection can move, the communicator is woken, or
 * until_ns (CLOCK_MONOTONIC) at the latest. Where a connection cannot
 * arm, it naps a few microseconds instead. */
void tt_waiter_sleep(tt_waiter_t *w, int64_t until_ns);

#endif
