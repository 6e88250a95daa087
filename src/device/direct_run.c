/* SPDX-License-Identifier: MIT */
#include <sched.h>
#include <stdlib.h>

#include "core/clock.h"
#include "comm/comm.h"
#include "transports/cuda_ipc/cuda_ipc.h"
#include "device/direct_run.h"
#include "coll/engine.h"
#include "core/env_config.h"
#include "core/log.h"

#define ALIVE_EVERY_NS 20000000 /* between liveness checks while waiting for announcements */

struct tt_direct {
    tutti_comm_t comm;
    void *ctx; /* the cuda_ipc transport's */
    const tt_ipc_backend_t *be;
    tt_peer_t *peers; /* cuda_ipc connections, indexed by rank */
    tt_mem_ops_t mem; /* the engine's access to device memory */
    int prepared;     /* tt_direct_prepare tried (once) */
    int usable;       /* ... and published this rank's FIFO */
    uint64_t runs;
};

int tt_direct_wanted(void)
{
    return tt_ipc_backend() != NULL && tt_config_int(TT_CFG_CUDA_IPC) != 0;
}

static int one_host(tutti_comm_t comm)
{
    for (int r = 0; r < comm->nranks; r++)
        if (comm->endpoints[r].host_id != comm->endpoints[comm->rank].host_id)
            return 0;
    return 1;
}

/* The engine's memory ops: the backend's, recording what failed. */
static int mem_failed(const tt_direct_t *d, const char *what, int e)
{
    tt_comm_error(d->comm, TUTTI_ERR_SYSTEM, "direct run on device buffers: %s failed: %s", what,
                  d->be->error(e));
    return -1;
}

static int mem_copy(void *arg, void *dst, const void *src, size_t bytes)
{
    tt_direct_t *d = arg;
    int e = d->be->copy(tt_ipc_device(d->ctx), dst, src, bytes);
    return e ? mem_failed(d, "a copy", e) : 0;
}

static int mem_reduce(void *arg, void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                      tutti_op_t op)
{
    tt_direct_t *d = arg;
    int e = d->be->reduce(tt_ipc_device(d->ctx), dst, a, b, count, dtype, op);
    return e ? mem_failed(d, "a reduction", e) : 0;
}

static int mem_scratch(void *arg, size_t bytes, void **out)
{
    tt_direct_t *d = arg;
    int e = d->be->scratch(tt_ipc_device(d->ctx), bytes, out);
    return e ? mem_failed(d, "allocating scratch", e) : 0;
}

static int mem_avg_finish(void *arg, void *buf, size_t count, tutti_dtype_t dtype, int nranks)
{
    tt_direct_t *d = arg;
    int e = d->be->avg_finish(tt_ipc_device(d->ctx), buf, count, dtype, nranks);
    return e ? mem_failed(d, "dividing the average", e) : 0;
}

tutti_status_t tt_direct_init(tutti_comm_t comm)
{
    if (!tt_direct_wanted() || comm->nranks < 2 || !one_host(comm))
        return TUTTI_SUCCESS;
    const tt_transport_ops_t *ops = &tt_cuda_ipc_ops;
    tt_direct_t *d = calloc(1, sizeof *d);
    if (d)
        d->peers = calloc((size_t)comm->nranks, sizeof *d->peers);
    unsigned char *addrs = calloc((size_t)comm->nranks, TT_ADDR_MAX);
    int *peers = malloc(sizeof(int) * (size_t)comm->nranks);
    void **conns = calloc((size_t)comm->nranks, sizeof(void *));
    unsigned char mine[TT_ADDR_MAX] = {0}; /* stays empty if listening fails */
    size_t len = 0;
    tutti_status_t st = d && d->peers && addrs && peers && conns ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    if (!st)
        st = ops->listen(&comm->env, &d->ctx, mine, &len);
    /* Every rank gets here (the layer is wanted everywhere or nowhere) and
     * takes part in the exchange; all connect, or none, since connecting
     * waits for everyone. */
    tutti_status_t xst = tt_bootstrap_allgather(&comm->bs, mine, addrs, TT_ADDR_MAX);
    if (!st)
        st = xst;
    for (int r = 0; r < comm->nranks && !st; r++)
        if (!addrs[(size_t)r * TT_ADDR_MAX])
            st = TUTTI_ERR_CONFIG; /* rank r could not listen; it said why */
    int n = 0;
    for (int r = 0; peers && r < comm->nranks; r++)
        if (r != comm->rank)
            peers[n++] = r;
    if (!st)
        st = ops->connect(d->ctx, peers, n, addrs, conns);
    for (int i = 0; i < n && !st; i++)
        d->peers[peers[i]] = (tt_peer_t){ops, conns[i]};
    free(addrs);
    free(peers);
    free(conns);
    if (st) {
        if (d && d->ctx)
            ops->finalize(d->ctx);
        if (d)
            free(d->peers);
        free(d);
        return tt_comm_error(comm, st, "rank %d: setting up cuda_ipc failed", comm->rank);
    }
    d->comm = comm;
    d->be = tt_ipc_backend(); /* the one cuda_ipc bound to at listen */
    d->mem = (tt_mem_ops_t){.copy = mem_copy,
                            .reduce = mem_reduce,
                            .scratch = mem_scratch,
                            .avg_finish = mem_avg_finish,
                            .arg = d};
    comm->direct = d;
    TT_DEBUG(TT_SUB_INIT, "cuda_ipc connects %d peers for device calls", n);
    return TUTTI_SUCCESS;
}

void tt_direct_free(tutti_comm_t comm)
{
    tt_direct_t *d = comm->direct;
    if (!d)
        return;
    for (int r = 0; r < comm->nranks; r++)
        if (d->peers[r].ops)
            d->peers[r].ops->close(d->peers[r].conn);
    tt_cuda_ipc_ops.finalize(d->ctx);
    free(d->peers);
    free(d);
    comm->direct = NULL;
}

void tt_direct_abort(tutti_comm_t comm)
{
    tt_direct_t *d = comm->direct;
    for (int r = 0; d && r < comm->nranks; r++)
        if (d->peers[r].ops) {
            d->peers[r].ops->abort(d->peers[r].conn); /* one flag in this rank's segment */
            return;
        }
}

int tt_direct_prepare(tutti_comm_t comm, int device)
{
    tt_direct_t *d = comm->direct;
    if (!d)
        return 0;
    if (!d->prepared) /* a failure was logged; the calls stage from now on */
        d->usable = tt_ipc_prepare(d->ctx, device) == TUTTI_SUCCESS;
    d->prepared = 1;
    return d->usable;
}

/* A rank that cannot agree gives up, so the others learn of it. */
static tutti_status_t agree_failed(tutti_comm_t comm, tutti_status_t st)
{
    tt_comm_fail(comm, st);
    return st;
}

tutti_status_t tt_direct_agree(tutti_comm_t comm, uint64_t seq, int capable, int *all)
{
    tt_direct_t *d = comm->direct;
    *all = 0;
    if (!d)
        return TUTTI_SUCCESS;
    if (tt_ipc_announce(d->ctx, seq, capable, comm->timeout_ms))
        return agree_failed(
            comm, tt_comm_error(comm, TUTTI_ERR_TIMEOUT,
                                "collective #%llu: some rank stayed %d calls behind for %lld ms "
                                "(TUTTI_TIMEOUT)",
                                (unsigned long long)seq, TT_IPC_BOARD, (long long)comm->timeout_ms));
    if (!capable)
        return TUTTI_SUCCESS;
    int64_t now = tt_now_ns(), deadline = now + comm->timeout_ms * 1000000, next_alive = now + ALIVE_EVERY_NS;
    for (int r = 0; r < comm->nranks; r++) {
        int v;
        if (r == comm->rank)
            continue;
        while ((v = tt_ipc_announcement(d->ctx, r, seq)) < 0) {
            sched_yield();
            now = tt_now_ns();
            if (now < next_alive)
                continue;
            next_alive = now + ALIVE_EVERY_NS;
            tutti_status_t st = d->peers[r].ops->alive(d->peers[r].conn);
            if (st)
                return agree_failed(
                    comm, tt_comm_error(comm, st, "collective #%llu: rank %d %s before reaching it",
                                        (unsigned long long)seq, r,
                                        st == TUTTI_ERR_ABORTED ? "aborted after an error" : "died"));
            if (now > deadline)
                return agree_failed(
                    comm,
                    tt_comm_error(comm, TUTTI_ERR_TIMEOUT,
                                  "collective #%llu: rank %d did not reach it within %lld ms (TUTTI_TIMEOUT)",
                                  (unsigned long long)seq, r, (long long)comm->timeout_ms));
        }
        if (!v)
            return TUTTI_SUCCESS; /* rank r stages or uses host buffers */
    }
    *all = tt_ipc_reach_all(d->ctx);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_direct_run(tutti_comm_t comm, const tt_call_t *c, uint64_t seq)
{
    tt_direct_t *d = comm->direct;
    TT_TRY(tt_coll_run_at(comm, c, seq, d->peers, &d->mem));
    d->runs++;
    return TUTTI_SUCCESS;
}

uint64_t tt_direct_runs(tutti_comm_t comm)
{
    return comm->direct ? comm->direct->runs : 0;
}
