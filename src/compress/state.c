/* SPDX-License-Identifier: MIT */
/*
 * What the compressed all-reduce keeps on a communicator and what its CPU
 * and GPU paths share: the state (workspace, the last call's stats, the
 * sequence numbers a queued call runs at), the collectives a call is made
 * of, top-k's size and its fallback to the dense all-reduce, the random
 * stream's key and the byte accounting.
 */
#include <math.h>
#include <stdlib.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "compress/allreduce.h"
#include "core/log.h"
#include "device/queue.h"

#define TT_DEFAULT_DENSITY 0.01

static void state_destroy(tt_comm_t *comm, void *state)
{
    tt_compress_state_t *s = state;
    (void)comm;
    free(s->ws);
    free(s);
}

static const tt_layer_ops_t compress_layer_ops = {.destroy = state_destroy};

tt_compress_state_t *tt_compress_state(tt_comm_t *comm)
{
    return tt_comm_layer_make(comm, TT_LAYER_COMPRESS, sizeof(tt_compress_state_t), &compress_layer_ops,
                              "the compression's state");
}

static tutti_status_t last_stats(tt_comm_t *comm, tutti_compress_stats_t *stats)
{
    if (!stats)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "tutti_compress_last_stats: stats is NULL");
    TT_TRY(tt_device_drain(comm)); /* the last call may still be queued on a stream */
    tt_compress_state_t *s = tt_compress_state(comm);
    if (!s)
        return TUTTI_ERR_NO_MEMORY;
    *stats = s->stats;
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_compress_last_stats(tutti_comm_t handle, tutti_compress_stats_t *stats)
{
    tt_comm_t *comm;
    TT_TRY(tt_comm_enter(handle, "tutti_compress_last_stats", &comm));
    tutti_status_t st = last_stats(comm, stats);
    tt_comm_leave(comm);
    return st;
}

/* Bytes this rank sends in the dense ring all-reduce of n elements. */
static uint64_t dense_ring_bytes(size_t n, size_t elem, int p, int r)
{
    /* The reduce-scatter sends every block but r + 1, the all-gather every block but r + 2. */
    return (2 * (uint64_t)n - tt_block_count(n, p, tt_mod(r + 1, p)) -
            tt_block_count(n, p, tt_mod(r + 2, p))) *
           elem;
}

tutti_status_t tt_compress_host_coll(tt_comm_t *comm, tt_coll_t coll, const void *send, void *recv,
                                     size_t count, tutti_dtype_t dtype, tutti_op_t op)
{
    tt_call_t c = {.coll = coll, .send = send, .recv = recv, .count = count, .dtype = dtype, .op = op};
    TT_TRY(tt_coll_validate(comm, &c, tt_coll_name(coll)));
    tt_compress_state_t *s = tt_compress_state(comm);
    if (!s || !s->reserved)
        return tt_coll_run(comm, &c);
    if (s->next >= s->nseqs)
        return tt_comm_error(comm, TUTTI_ERR_INTERNAL,
                             "compressed all-reduce: more collectives than the %d it was queued with",
                             s->nseqs);
    return tt_coll_run_at(comm, &c, s->seqs[s->next++], NULL);
}

/* The collectives a call is made of, in order (as topk, dense and
 * two_phase below run them). */
static int inner_colls(const tutti_compress_t *how, size_t count, int p, tt_coll_t *colls)
{
    if (how->kind == TUTTI_COMPRESS_NONE || count == 0 ||
        (how->kind == TUTTI_COMPRESS_TOPK &&
         tt_compress_topk_costly(tt_compress_topk_k(how, count), count, p))) {
        colls[0] = TT_COLL_ALLREDUCE;
        return 1;
    }
    if (how->kind == TUTTI_COMPRESS_TOPK) {
        colls[0] = how->sampled ? TT_COLL_ALLREDUCE : TT_COLL_ALLGATHER; /* the sampled count first */
        colls[1] = TT_COLL_ALLGATHER;
        return how->sampled ? 2 : 1;
    }
    colls[0] = TT_COLL_ALLTOALL;
    colls[1] = TT_COLL_ALLGATHER;
    return 2;
}

tutti_status_t tt_compress_reserve(tt_comm_t *comm, const tutti_compress_t *how, size_t count,
                                   uint64_t seqs[TT_COMPRESS_INNER_MAX], int *nseqs, uint64_t *rng)
{
    tt_coll_t colls[TT_COMPRESS_INNER_MAX];
    *rng = comm->coll_seq * (uint64_t)comm->nranks + (uint64_t)comm->rank; /* as tt_compress_rng_key */
    *nseqs = inner_colls(how, count, comm->nranks, colls);
    for (int i = 0; i < *nseqs; i++) {
        tt_call_t c = {.coll = colls[i]};
        int direct;
        TT_TRY(tt_coll_begin(comm, &c, 0, &seqs[i], &direct));
    }
    return TUTTI_SUCCESS;
}

void tt_compress_use(tt_comm_t *comm, const uint64_t *seqs, int nseqs, uint64_t rng)
{
    tt_compress_state_t *s = tt_compress_state(comm);
    if (!s)
        return;
    *s = (tt_compress_state_t){
        .ws = s->ws, .ws_bytes = s->ws_bytes, .stats = s->stats, .reserved = 1, .nseqs = nseqs, .rng = rng};
    for (int i = 0; i < nseqs; i++)
        s->seqs[i] = seqs[i];
}

tutti_status_t tt_compress_done(tt_comm_t *comm, const char *name)
{
    tt_compress_state_t *s = tt_compress_state(comm);
    if (!s)
        return TUTTI_ERR_NO_MEMORY;
    int used = s->next, had = s->nseqs;
    s->reserved = s->nseqs = s->next = 0;
    if (used != had)
        return tt_comm_error(comm, TUTTI_ERR_INTERNAL, "%s: %d collectives run, %d queued", name, used, had);
    return TUTTI_SUCCESS;
}

size_t tt_compress_topk_k(const tutti_compress_t *how, size_t n)
{
    double density = how->density > 0 ? how->density : TT_DEFAULT_DENSITY;
    size_t k = how->k ? how->k : (size_t)ceil(density * (double)n);
    return k < 1 ? 1 : k > n ? n : k;
}

int tt_compress_topk_costly(size_t k, size_t n, int p)
{
    /* Pairs cost 8 bytes against the dense ring's 2 (p-1)/p 4 per element:
     * all-gathering p k pairs only pays below k/n = 1/p. */
    return (double)k / (double)n >= 1.0 / p;
}

int tt_compress_topk_dense(tt_comm_t *comm, size_t k, size_t n)
{
    if (!tt_compress_topk_costly(k, n, comm->nranks))
        return 0;
    TT_DEBUG(TT_SUB_COLL,
             "compressed all-reduce: top-%zu of %zu on %d ranks would send more than the dense "
             "all-reduce; running dense",
             k, n, comm->nranks);
    tt_compress_stats(comm)->fell_back = 1;
    return 1;
}

uint64_t tt_compress_rng_key(tt_comm_t *comm)
{
    tt_compress_state_t *s = tt_compress_state(comm);
    if (s && s->reserved)
        return s->rng;
    return comm->coll_seq * (uint64_t)comm->nranks + (uint64_t)comm->rank;
}

tutti_compress_stats_t *tt_compress_stats(tt_comm_t *comm)
{
    static _Thread_local tutti_compress_stats_t lost; /* only when the state could not be made */
    tt_compress_state_t *s = tt_compress_state(comm);
    return s ? &s->stats : &lost;
}

void tt_compress_account(tt_comm_t *comm, uint64_t before, size_t count, tutti_dtype_t dtype)
{
    tutti_compress_stats_t *stats = tt_compress_stats(comm);
    stats->bytes_sent = tt_coll_bytes_sent(comm) - before;
    stats->dense_bytes_sent = dense_ring_bytes(count, tutti_dtype_size(dtype), comm->nranks, comm->rank);
}
