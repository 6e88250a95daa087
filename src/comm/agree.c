/* SPDX-License-Identifier: MIT */
/*
 * Call-by-call agreement through the device transport's board: every
 * collective, on host buffers too, announces whether this rank could run
 * it on its device buffers; only a rank that could waits to read the
 * others' announcements, so host calls pay one store.
 */
#include <sched.h>

#include "comm/comm.h"
#include "core/clock.h"
#include "core/log.h"

#define ALIVE_EVERY_NS 20000000 /* between liveness checks while waiting for announcements */

/* A rank that cannot agree gives up, so the others learn of it. */
static tutti_status_t agree_failed(tutti_comm_t comm, tutti_status_t st)
{
    tt_comm_fail(comm, st);
    return st;
}

/* Waits for rank r's announcement of seq: 1 or 0, or -1 after a failure. */
static int announcement_of(tutti_comm_t comm, const tt_device_ops_t *dev, void *ctx, int r, uint64_t seq)
{
    int64_t now = tt_now_ns(), deadline = now + comm->timeout_ms * 1000000, next_alive = now + ALIVE_EVERY_NS;
    int v;
    const tt_peer_t *peer = &comm->device_peers[r];
    while ((v = dev->announcement(ctx, r, seq)) < 0) {
        sched_yield();
        now = tt_now_ns();
        if (now < next_alive)
            continue;
        next_alive = now + ALIVE_EVERY_NS;
        tutti_status_t st = peer->ops->alive(peer->conn);
        if (st) {
            agree_failed(comm, tt_comm_error(comm, st, "collective #%llu: rank %d %s before reaching it",
                                             (unsigned long long)seq, r,
                                             st == TUTTI_ERR_ABORTED ? "aborted after an error" : "died"));
            return -1;
        }
        if (now > deadline) {
            agree_failed(comm,
                         tt_comm_error(comm, TUTTI_ERR_TIMEOUT,
                                       "collective #%llu: timeout after %lld ms: rank %d did not reach it "
                                       "(TUTTI_TIMEOUT)",
                                       (unsigned long long)seq, (long long)comm->timeout_ms, r));
            return -1;
        }
    }
    return v;
}

tutti_status_t tt_comm_agree(tutti_comm_t comm, uint64_t seq, int capable, int *all)
{
    *all = 0;
    if (comm->device_tp < 0)
        return TUTTI_SUCCESS;
    const tt_device_ops_t *dev = comm->tp_ops[comm->device_tp]->device;
    void *ctx = comm->tp_ctx[comm->device_tp];
    if (dev->announce(ctx, seq, capable, comm->timeout_ms))
        return agree_failed(comm,
                            tt_comm_error(comm, TUTTI_ERR_TIMEOUT,
                                          "collective #%llu: timeout after %lld ms: some rank stayed far "
                                          "behind (TUTTI_TIMEOUT)",
                                          (unsigned long long)seq, (long long)comm->timeout_ms));
    if (!capable)
        return TUTTI_SUCCESS;
    for (int r = 0; r < comm->nranks; r++) {
        if (r == comm->rank)
            continue;
        int v = announcement_of(comm, dev, ctx, r, seq);
        if (v < 0)
            return comm->failed;
        if (!v)
            return TUTTI_SUCCESS; /* rank r stages or uses host buffers */
    }
    *all = dev->reach_all(ctx);
    return TUTTI_SUCCESS;
}

int tt_comm_device_bind(tutti_comm_t comm, int device)
{
    if (comm->device_tp < 0)
        return 0;
    if (comm->device_bound < 0) /* a failure was logged; the calls stage from now on */
        comm->device_bound = comm->tp_ops[comm->device_tp]->device->bind(comm->tp_ctx[comm->device_tp],
                                                                         device) == TUTTI_SUCCESS;
    return comm->device_bound;
}
