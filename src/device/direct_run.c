/* SPDX-License-Identifier: MIT */
/*
 * Direct runs (see direct_run.h), in rounds. Each rank's window (cuda_ipc)
 * has two halves; round e uses half e mod 2 of every window. In a round a
 * rank copies its part into its half, stores "ready e" into each peer's
 * inbox, waits for the peers' "ready e" in its own, reads what it needs
 * from the peers' halves (copies, and reductions by the GPU kernels, which
 * add in rank order, so every rank gets the same bits), then stores "done
 * e" into each peer's inbox. Before writing its half of round e a rank
 * waits for every peer's "done e - 2": the half it is about to overwrite
 * has been read. Every rank runs the same rounds for a call (they agreed on
 * its signature), so round numbers match across ranks without a word said.
 * Reductions work on halves and a private scratch that all start 256-byte
 * aligned, so the kernels' 16-byte loads apply whatever the user's
 * buffers' alignment (copies take those).
 */
#include <stdatomic.h>

#include "comm/agree.h"
#include "device/direct_run.h"
#include "device/layer.h"
#include "transports/device.h"

#define ONE_SHOT_BYTES (256 << 10) /* an all-reduce this small reads every rank's part in one round */
#define ALIGN 256

tutti_status_t tt_direct_prepare(tt_comm_t *comm, int device, int *ready)
{
    *ready = 0;
    const tt_device_rt_t *rt = tt_device_runtime();
    int prev, mode;
    if (comm->device_tp < 0 || !rt || rt->enter(device, &prev))
        return TUTTI_SUCCESS; /* no device transport, or no GPU to bind: the call stages */
    int relaxed = rt->relax(&mode) == TUTTI_SUCCESS;
    tutti_status_t st = TUTTI_SUCCESS;
    if (tt_comm_device_bind(comm, device)) /* a failure is said once; the calls stage */
        st = tt_comm_device_ops(comm)->open_peers(tt_comm_device_ctx(comm), ready);
    if (relaxed)
        rt->unrelax(mode);
    rt->leave(prev);
    return st;
}

size_t tt_direct_scratch_bytes(tt_comm_t *comm)
{
    size_t window = 0;
    if (comm->device_tp >= 0)
        tt_comm_device_ops(comm)->peers(tt_comm_device_ctx(comm), &window);
    return window / 2;
}

uint64_t tt_direct_runs(tt_comm_t *comm)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    return d ? d->direct_runs : 0;
}

/* ---- rounds ---- */

typedef struct {
    const tt_device_rt_t *rt;
    void *s;
    const tt_direct_peer_t *peer;
    int me, p;
    size_t half;
    char *scratch; /* private, half bytes */
    _Atomic unsigned *rounds;
    const tt_call_t *c;
    size_t elem;
    tutti_status_t st; /* the first failure; everything after it is skipped */
} drun_t;

static char *half_of(const drun_t *r, int q, unsigned e)
{
    return r->peer[q].window + (size_t)(e & 1) * r->half;
}

static unsigned open_round(drun_t *r)
{
    unsigned e = atomic_fetch_add_explicit(r->rounds, 1, memory_order_relaxed) + 1;
    for (int q = 0; q < r->p && !r->st; q++)
        if (q != r->me) /* the first two rounds compare with 0: they pass */
            r->st = r->rt->gate(r->s, r->peer[q].done_from, e - 2);
    return e;
}

static void post(drun_t *r, unsigned e, int done)
{
    for (int q = 0; q < r->p && !r->st; q++)
        if (q != r->me)
            r->st = r->rt->signal(r->s, done ? r->peer[q].done_to : r->peer[q].ready_to, e);
}

/* Until rank only (-1: every peer) has its part of round e in its half. */
static void await(drun_t *r, unsigned e, int only)
{
    for (int q = 0; q < r->p && !r->st; q++)
        if (q != r->me && (only < 0 || q == only))
            r->st = r->rt->gate(r->s, r->peer[q].ready_from, e);
}

static void copy(drun_t *r, void *dst, const void *src, size_t bytes)
{
    if (!r->st && bytes && dst != src)
        r->st = r->rt->copy(dst, src, bytes, r->s);
}

/* The average's division: of each reduced chunk here; of an all-gather's
 * or all-to-all's output (which nothing reduced), as the host path does
 * it, the call's count first elements at the end. */
static void finish_avg(drun_t *r, char *buf, size_t n)
{
    if (!r->st && n && r->c->op == TUTTI_AVG)
        r->st = r->rt->avg_finish(buf, n, r->c->dtype, r->p, r->s);
}

/* dst = rank 0's op rank 1's op ... (rank order) of n elements at off in
 * the halves of round e; then the average's division. */
static void reduce_ranks(drun_t *r, char *dst, unsigned e, size_t off, size_t n)
{
    const tt_call_t *c = r->c;
    if (!r->st && n)
        r->st = r->rt->reduce(dst, half_of(r, 0, e) + off, half_of(r, 1, e) + off, n, c->dtype, c->op, r->s);
    for (int q = 2; q < r->p && !r->st && n; q++)
        r->st = r->rt->reduce(dst, dst, half_of(r, q, e) + off, n, c->dtype, c->op, r->s);
    finish_avg(r, dst, n);
}

static size_t per_round(const drun_t *r, size_t parts)
{
    size_t n = r->half / parts / r->elem;
    return n ? n : 1;
}

/* ---- the collectives ---- */

static void allreduce(drun_t *r)
{
    const tt_call_t *c = r->c;
    size_t e = r->elem, per = per_round(r, 1);
    int one_shot = c->count * e <= ONE_SHOT_BYTES;
    for (size_t o = 0; o < c->count && !r->st; o += per) {
        size_t m = c->count - o < per ? c->count - o : per;
        const char *in = (const char *)c->send + o * e;
        char *out = (char *)c->recv + o * e;
        unsigned e1 = open_round(r);
        copy(r, half_of(r, r->me, e1), in, m * e);
        post(r, e1, 0);
        await(r, e1, -1);
        if (one_shot) {
            reduce_ranks(r, r->scratch, e1, 0, m);
            post(r, e1, 1);
            copy(r, out, r->scratch, m * e);
            continue;
        }
        /* Two-shot: each rank reduces its block into its next half, then
         * every rank copies every block. */
        size_t bo = tt_block_off(m, r->p, r->me) * e, bn = tt_block_count(m, r->p, r->me);
        unsigned e2 = open_round(r);
        reduce_ranks(r, half_of(r, r->me, e2) + bo, e1, bo, bn);
        post(r, e1, 1);
        post(r, e2, 0);
        await(r, e2, -1);
        for (int q = 0; q < r->p; q++)
            copy(r, out + tt_block_off(m, r->p, q) * e, half_of(r, q, e2) + tt_block_off(m, r->p, q) * e,
                 tt_block_count(m, r->p, q) * e);
        post(r, e2, 1);
    }
}

static void reduce(drun_t *r)
{
    const tt_call_t *c = r->c;
    size_t e = r->elem, per = per_round(r, 1);
    for (size_t o = 0; o < c->count && !r->st; o += per) {
        size_t m = c->count - o < per ? c->count - o : per;
        unsigned e1 = open_round(r);
        copy(r, half_of(r, r->me, e1), (const char *)c->send + o * e, m * e);
        post(r, e1, 0);
        if (r->me == c->root) {
            await(r, e1, -1);
            reduce_ranks(r, r->scratch, e1, 0, m);
        }
        post(r, e1, 1);
        if (r->me == c->root)
            copy(r, (char *)c->recv + o * e, r->scratch, m * e);
    }
}

static void broadcast(drun_t *r)
{
    const tt_call_t *c = r->c;
    size_t e = r->elem, per = per_round(r, 1);
    for (size_t o = 0; o < c->count && !r->st; o += per) {
        size_t m = c->count - o < per ? c->count - o : per;
        unsigned e1 = open_round(r);
        if (r->me == c->root) {
            copy(r, half_of(r, r->me, e1), (const char *)c->send + o * e, m * e);
            copy(r, (char *)c->recv + o * e, (const char *)c->send + o * e, m * e);
        }
        post(r, e1, 0);
        if (r->me != c->root) {
            await(r, e1, c->root);
            copy(r, (char *)c->recv + o * e, half_of(r, c->root, e1), m * e);
        }
        post(r, e1, 1);
    }
}

static void allgather(drun_t *r)
{
    const tt_call_t *c = r->c;
    size_t e = r->elem, n = c->count, per = per_round(r, 1);
    for (size_t o = 0; o < n && !r->st; o += per) {
        size_t m = n - o < per ? n - o : per;
        const char *in = (const char *)c->send + o * e;
        unsigned e1 = open_round(r);
        copy(r, half_of(r, r->me, e1), in, m * e);
        post(r, e1, 0);
        await(r, e1, -1);
        for (int q = 0; q < r->p; q++)
            copy(r, (char *)c->recv + ((size_t)q * n + o) * e, q == r->me ? in : half_of(r, q, e1), m * e);
        post(r, e1, 1);
    }
    finish_avg(r, c->recv, n);
}

/* Reduce-scatter and all-to-all: every rank's input holds a block per
 * rank; a round carries m elements of each, at 256-byte-aligned places. */
static void blocks(drun_t *r, int reducing)
{
    const tt_call_t *c = r->c;
    size_t e = r->elem, n = c->count, part = r->half / (size_t)r->p / ALIGN * ALIGN; /* places stay aligned */
    size_t per = part / e ? part / e : 1;
    for (size_t o = 0; o < n && !r->st; o += per) {
        size_t m = n - o < per ? n - o : per, stride = (m * e + ALIGN - 1) / ALIGN * ALIGN;
        unsigned e1 = open_round(r);
        for (int q = 0; q < r->p; q++)
            copy(r, half_of(r, r->me, e1) + (size_t)q * stride,
                 (const char *)c->send + ((size_t)q * n + o) * e, m * e);
        post(r, e1, 0);
        await(r, e1, -1);
        if (reducing) {
            reduce_ranks(r, r->scratch, e1, (size_t)r->me * stride, m);
            post(r, e1, 1);
            copy(r, (char *)c->recv + o * e, r->scratch, m * e);
            continue;
        }
        for (int q = 0; q < r->p; q++)
            copy(r, (char *)c->recv + ((size_t)q * n + o) * e, half_of(r, q, e1) + (size_t)r->me * stride,
                 m * e);
        post(r, e1, 1);
    }
    if (!reducing)
        finish_avg(r, c->recv, n);
}

tutti_status_t tt_direct_put(tt_comm_t *comm, const tt_device_ctx_t *ctx, const tt_call_t *c, void *stream)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    size_t window;
    const tt_direct_peer_t *peers = tt_comm_device_ops(comm)->peers(tt_comm_device_ctx(comm), &window);
    if (!d || !peers)
        return TUTTI_ERR_INTERNAL;
    drun_t r = {.rt = ctx->rt,
                .s = stream,
                .peer = peers,
                .me = comm->rank,
                .p = comm->nranks,
                .half = window / 2,
                .scratch = ctx->gpu,
                .rounds = &d->rounds,
                .c = c,
                .elem = tutti_dtype_size(c->dtype)};
    switch (c->coll) {
    case TT_COLL_ALLREDUCE: allreduce(&r); break;
    case TT_COLL_REDUCE: reduce(&r); break;
    case TT_COLL_BROADCAST: broadcast(&r); break;
    case TT_COLL_ALLGATHER: allgather(&r); break;
    case TT_COLL_REDUCE_SCATTER: blocks(&r, 1); break;
    case TT_COLL_ALLTOALL: blocks(&r, 0); break;
    default: return TUTTI_ERR_INTERNAL;
    }
    if (!r.st)
        d->direct_runs++;
    return r.st;
}
