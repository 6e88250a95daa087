/* SPDX-License-Identifier: MIT */
/*
 * Ordered reductions, for deterministic mode (TUTTI_DETERMINISTIC=1). Rank
 * b owns block b. Every rank sends each owner its block in one round; the
 * owner adds the p terms in rank order, ((x0 op x1) op x2) ... op x(p-1),
 * the same order whatever the transport, slice size or host layout; then
 * the finished blocks travel on (a ring all-gather for all-reduce, straight
 * to the root for reduce). The direct all-reduce adds in the same order, so
 * the two give the same bits.
 * Cost (all-reduce): the ring's bytes, 2 ((p-1)/p) n beta, but p - 1
 * messages in the exchange round and (p-1)/p n of scratch: p alpha +
 * 2 ((p-1)/p) n beta + ((p-1)/p) n gamma.
 */
#include "sched/schedule.h"

/* How the blocks of a call are laid out. */
typedef struct {
    const tt_coll_args_t *a;
    int by_rank; /* reduce-scatter: block q is n elements at q n; else a split of n */
} blocks_t;

static tt_region_t block(const blocks_t *k, tt_buf_t buf, int q)
{
    if (k->by_rank)
        return tt_region(buf, (size_t)q * k->a->count, k->a->count);
    return tt_block_region(buf, k->a->count, k->a->nranks, q);
}

/* The exchange round, then the fold into dst, in rank order. */
static tutti_status_t exchange_and_fold(const blocks_t *k, tt_sched_t *s, tt_region_t dst)
{
    const tt_coll_args_t *a = k->a;
    int p = a->nranks, r = a->rank;
    size_t mine = block(k, TT_BUF_INPUT, r).count;
    TT_TRY(tt_sched_round(s));
    /* Term q waits in scratch slot q; this rank's own term too when the
     * call is in place, since the fold overwrites it. */
    if (a->in_place)
        TT_TRY(
            tt_sched_copy(s, tt_region(TT_BUF_SCRATCH, (size_t)r * mine, mine), block(k, TT_BUF_INPUT, r)));
    for (int i = 1; i < p; i++)
        TT_TRY(tt_sched_send(s, tt_mod(r + i, p), block(k, TT_BUF_INPUT, tt_mod(r + i, p))));
    for (int i = 1; i < p; i++) {
        int q = tt_mod(r - i, p);
        TT_TRY(tt_sched_recv(s, q, tt_region(TT_BUF_SCRATCH, (size_t)q * mine, mine)));
    }
    /* Local steps run in list order at the start of a round. */
    TT_TRY(tt_sched_round(s));
    for (int q = 0; q < p; q++) {
        tt_region_t term = q == r && !a->in_place ? block(k, TT_BUF_INPUT, r)
                                                  : tt_region(TT_BUF_SCRATCH, (size_t)q * mine, mine);
        TT_TRY(tt_sched_add(s, (tt_step_t){q == 0 ? TT_STEP_COPY : TT_STEP_REDUCE, -1, dst, term}));
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t ordered_allreduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, right = tt_mod(r + 1, p), left = tt_mod(r - 1, p);
    blocks_t k = {.a = a};
    TT_TRY(exchange_and_fold(&k, s, block(&k, TT_BUF_OUTPUT, r)));
    /* Ring all-gather; its first send shares the fold's round (after it). */
    for (int i = 0; i < p - 1; i++) {
        if (i > 0)
            TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, right, block(&k, TT_BUF_OUTPUT, tt_mod(r - i, p))));
        TT_TRY(tt_sched_recv(s, left, block(&k, TT_BUF_OUTPUT, tt_mod(r - i - 1, p))));
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t ordered_reduce_scatter(const tt_coll_args_t *a, tt_sched_t *s)
{
    blocks_t k = {.a = a, .by_rank = 1};
    return exchange_and_fold(&k, s, tt_region(TT_BUF_OUTPUT, 0, a->count));
}

static tutti_status_t ordered_reduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, root = a->root;
    blocks_t k = {.a = a};
    /* Off the root the finished block waits in the scratch slot past the p terms. */
    size_t mine = block(&k, TT_BUF_INPUT, r).count;
    tt_region_t done =
        r == root ? block(&k, TT_BUF_OUTPUT, r) : tt_region(TT_BUF_SCRATCH, (size_t)p * mine, mine);
    TT_TRY(exchange_and_fold(&k, s, done));
    if (r != root)
        return tt_sched_send(s, root, done);
    for (int q = 0; q < p; q++)
        if (q != root)
            TT_TRY(tt_sched_recv(s, q, block(&k, TT_BUF_OUTPUT, q)));
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_ordered = {
    .name = "ordered",
    .summary =
        "each block's owner adds all p terms in rank order: the same bits every time (deterministic mode)",
    .build = {[TT_COLL_ALLREDUCE] = ordered_allreduce,
              [TT_COLL_REDUCE_SCATTER] = ordered_reduce_scatter,
              [TT_COLL_REDUCE] = ordered_reduce},
    .flags = TT_ALGO_RANK_ORDER | TT_ALGO_ONLY_ORDERED,
};
