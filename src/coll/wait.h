/* SPDX-License-Identifier: MIT */
/*
 * How the engine waits for its peers once nothing moves: it polls for a
 * short while (TUTTI_SPIN_US, and not at all when the host's cores are all
 * taken), then sleeps in poll(2) on what its connections armed, until one
 * of them can move, the communicator is woken (abort, news from the other
 * ranks) or the engine's next check is due.
 */
#ifndef TT_COLL_WAIT_H
#define TT_COLL_WAIT_H

#include <stdint.h>

#include "comm/comm.h"
#include "transports/transport.h"

typedef struct {
    tutti_comm_t comm;
    const tt_peer_t *peers;
    int64_t spin_ns; /* TUTTI_SPIN_US */
    tt_wait_set_t ws;
} tt_waiter_t;

/* For a run over peers (the communicator's host connections or a device
 * transport's). */
void tt_waiter_init(tt_waiter_t *w, tutti_comm_t comm, const tt_peer_t *peers);
/* How long an idle spell polls before it sleeps: TUTTI_SPIN_US when this
 * rank has a core to itself, else 0 (more ranks than cores, or other work
 * on them: the peer this rank waits for needs the core more). */
int64_t tt_waiter_spin_ns(const tt_waiter_t *w);
/* Sleeps until a connection can move, the communicator is woken, or
 * until_ns (CLOCK_MONOTONIC) at the latest. Where a connection cannot
 * arm, it naps a few microseconds instead. */
void tt_waiter_sleep(tt_waiter_t *w, int64_t until_ns);

#endif
