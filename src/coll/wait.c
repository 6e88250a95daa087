/* SPDX-License-Identifier: MIT */
/*
 * The engine's sleep. Before sleeping, every connection of the run arms
 * what wakes it (shm: the rank's doorbell, which a peer rings only when
 * this rank said it sleeps; tcp: its sockets; verbs: its completion
 * channel) and says whether something can move already, which closes the
 * race with a peer that wrote just before. Abort and the star's news ring
 * the communicator's own wake-up (tt_comm_wake), which is always in the
 * set. Nothing else can wake a sleeper, so the sleep ends at the engine's
 * next check at the latest: a dead peer that nobody reported, TUTTI_TIMEOUT,
 * or a flag raised without a ring are seen within ALIVE_CHECK_NS.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "coll/state.h"
#include "coll/wait.h"
#include "core/clock.h"
#include "core/load.h"
#include "core/wake.h"

#define NAP_NS 20000          /* where a connection cannot arm: short naps, as before sleeping existed */
#define CROWDED_SPIN_NS 20000 /* the most a spin takes from other work on the core */

void tt_waiter_init(tt_waiter_t *w, tt_comm_t *comm, const tt_peer_t *peers)
{
    *w = (tt_waiter_t){.comm = comm, .peers = peers, .yield = comm->oversubscribed};
    w->list = tt_coll_peer_list(comm, peers, &w->n);
    tt_coll_state_t *cs = tt_comm_layer(comm, TT_LAYER_COLL);
    int cap = w->n * TT_MAX_CHANNELS + 2;
    if (cs && cs->wait_cap < cap) {
        struct pollfd *fds = realloc(cs->wait_fds, (size_t)cap * sizeof *fds);
        if (fds) {
            cs->wait_fds = fds;
            cs->wait_cap = cap;
        }
    }
    if (cs)
        w->ws = (tt_wait_set_t){.fds = cs->wait_fds, .cap = cs->wait_cap};
}

/* Whether other work leaves fewer free cores than this host has ranks.
 * The runnable count includes those of this job's ranks that run; the
 * rest is other work. */
static int crowded(const tt_comm_t *comm)
{
    int runnable = tt_load_runnable();
    return runnable >= 0 && comm->local_ranks > comm->cpus_online - (runnable - comm->local_ranks);
}

int64_t tt_waiter_spin_ns(const tt_waiter_t *w)
{
    int64_t most = w->comm->spin_ns;
    return (w->yield || crowded(w->comm)) && most > CROWDED_SPIN_NS ? CROWDED_SPIN_NS : most;
}

static void nap(int64_t until_ns)
{
    int64_t left = until_ns - tt_now_ns();
    struct timespec ts = {0, left < NAP_NS ? (left > 0 ? left : 0) : NAP_NS};
    nanosleep(&ts, NULL);
}

void tt_waiter_sleep(tt_waiter_t *w, int64_t until_ns)
{
    tt_comm_t *comm = w->comm;
    tt_wait_set_t *ws = &w->ws;
    int armed = 0, ready = 0, can_sleep = comm->wake_fd >= 0;
    ws->n = 0;
    if (can_sleep && tt_wait_add(ws, comm->wake_fd, POLLIN))
        can_sleep = 0;
    for (int i = 0; i < w->n && can_sleep && !ready; i++) {
        const tt_peer_t *p = &w->peers[w->list ? w->list[i] : i];
        armed = i + 1;
        if (!p->ops)
            continue;
        int a = p->ops->arm ? p->ops->arm(p->conn, ws) : -1;
        ready = a > 0;
        can_sleep = a >= 0;
    }
    if (!ready && !can_sleep)
        nap(until_ns);
    else if (!ready) {
        int64_t left = until_ns - tt_now_ns();
        if (left < 0)
            left = 0;
        struct timespec ts = {left / 1000000000, left % 1000000000};
        if (ppoll(ws->fds, (nfds_t)ws->n, &ts, NULL) > 0 && ws->fds[0].revents)
            tt_wake_drain(comm->wake_fd);
    }
    for (int i = 0; i < armed; i++) {
        const tt_peer_t *p = &w->peers[w->list ? w->list[i] : i];
        if (p->ops && p->ops->disarm)
            p->ops->disarm(p->conn);
    }
}
