/* SPDX-License-Identifier: MIT */
/*
 * Call-by-call agreement through the device transport's board: every
 * collective, on host buffers too, announces whether this rank could run
 * it on its device buffers; only a rank that could waits to read the
 * others' announcements, so host calls pay one store. The wait runs on the
 * thread that makes the call, which an abort from another thread ends.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#include "comm/agree.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "comm/news.h"
#include "core/clock.h"
#include "core/log.h"
#include "transports/device.h"

#define ALIVE_EVERY_NS 20000000 /* between liveness checks while waiting for announcements */

/* A rank that cannot agree gives up, so the others learn of it. */
static tutti_status_t agree_failed(tt_comm_t *comm, tutti_status_t st)
{
    tt_comm_fail(comm, st);
    return st;
}

int tt_comm_wait_ended(tt_comm_t *comm, const char *call, uint64_t seq)
{
    int aborting = atomic_load_explicit(&comm->aborting, memory_order_relaxed);
    if (!aborting && !tt_comm_has_news(comm))
        return 0;
    tutti_status_t st = tt_comm_news(comm, call, seq);
    if (!st && aborting)
        st = tt_comm_error(comm, TUTTI_ERR_ABORTED,
                           "%s: interrupted on rank %d: the communicator is being aborted", call, comm->rank);
    if (st)
        agree_failed(comm, st);
    return st != TUTTI_SUCCESS;
}

static int stopped(tt_comm_t *comm, uint64_t seq)
{
    char call[48];
    snprintf(call, sizeof call, "collective #%llu", (unsigned long long)seq);
    return tt_comm_wait_ended(comm, call, seq);
}

/* Waits for rank r's announcement of seq (and its signature); after a
 * failure (said, the communicator failed), TT_BOARD_NOT_YET. */
static tt_board_t announcement_of(tt_comm_t *comm, const tt_device_ops_t *dev, void *ctx, int r, uint64_t seq,
                                  uint64_t *sig)
{
    int64_t now = tt_now_ns(), deadline = now + comm->timeout_ms * 1000000, next_alive = now + ALIVE_EVERY_NS;
    tt_board_t v;
    const tt_peer_t *peer = &comm->device_peers[r];
    while ((v = dev->announcement(ctx, r, seq, sig)) == TT_BOARD_NOT_YET) {
        sched_yield();
        now = tt_now_ns();
        if (now < next_alive)
            continue;
        next_alive = now + ALIVE_EVERY_NS;
        if (stopped(comm, seq))
            return TT_BOARD_NOT_YET;
        tutti_status_t st = peer->ops->alive(peer->conn);
        if (st) {
            agree_failed(comm, tt_comm_error(comm, st, "collective #%llu: rank %d %s before reaching it",
                                             (unsigned long long)seq, r,
                                             st == TUTTI_ERR_ABORTED ? "aborted after an error" : "died"));
            return TT_BOARD_NOT_YET;
        }
        if (now > deadline) {
            agree_failed(comm,
                         tt_comm_error(comm, TUTTI_ERR_TIMEOUT,
                                       "collective #%llu: timeout after %lld ms: rank %d did not reach it "
                                       "(TUTTI_TIMEOUT)",
                                       (unsigned long long)seq, (long long)comm->timeout_ms, r));
            return TT_BOARD_NOT_YET;
        }
    }
    return v;
}

tutti_status_t tt_comm_agree(tt_comm_t *comm, uint64_t seq, int capable, uint64_t sig, int *all)
{
    *all = 0;
    if (comm->device_tp < 0)
        return TUTTI_SUCCESS;
    const tt_device_ops_t *dev = tt_comm_device_ops(comm);
    void *ctx = tt_comm_device_ctx(comm);
    if (dev->announce(ctx, seq, capable, sig, comm->timeout_ms))
        return agree_failed(comm,
                            tt_comm_error(comm, TUTTI_ERR_TIMEOUT,
                                          "collective #%llu: timeout after %lld ms: some rank stayed far "
                                          "behind (TUTTI_TIMEOUT)",
                                          (unsigned long long)seq, (long long)comm->timeout_ms));
    if (!capable)
        return TUTTI_SUCCESS;
    for (int r = 0; r < comm->nranks; r++) {
        uint64_t theirs = sig;
        tt_board_t v = r == comm->rank ? TT_BOARD_DIRECT : announcement_of(comm, dev, ctx, r, seq, &theirs);
        if (v == TT_BOARD_NOT_YET)
            return comm->failed;
        if (v == TT_BOARD_STAGES)
            return TUTTI_SUCCESS; /* rank r stages or uses host buffers */
        if (theirs != sig)
            return agree_failed(comm,
                                tt_comm_error(comm, TUTTI_ERR_MISMATCH,
                                              "collective #%llu: rank %d called it with another collective, "
                                              "count, datatype, operator or root than rank %d",
                                              (unsigned long long)seq, r, comm->rank));
    }
    return dev->reach_all(ctx, all);
}

int tt_comm_device_bind(tt_comm_t *comm, int device)
{
    if (comm->device_tp < 0)
        return 0;
    if (comm->device_bound < 0) /* a failure was logged; the calls stage from now on */
        comm->device_bound =
            tt_comm_device_ops(comm)->bind(tt_comm_device_ctx(comm), device) == TUTTI_SUCCESS;
    return comm->device_bound;
}
