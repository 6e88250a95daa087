/* SPDX-License-Identifier: MIT */
/*
 * Ring algorithms. The buffer is cut into nranks chunks; every round each
 * rank sends one chunk to its right neighbour and receives one from its left.
 * Reduce-scatter takes p - 1 rounds to leave each chunk fully reduced on one
 * rank; all-gather takes p - 1 more to hand the finished chunks round. Every
 * link carries (p - 1) / p of the data in each phase: bandwidth-optimal.
 */
#include "sched/schedule.h"

static tutti_status_t copy_unless_in_place(const tt_coll_args_t *a, tt_sched_t *s, size_t dst_off,
                                           size_t count)
{
    if (a->in_place)
        return TUTTI_SUCCESS;
    return tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, dst_off, count), tt_region(TT_BUF_INPUT, 0, count));
}

static tutti_status_t ring_allreduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, right = tt_mod(r + 1, p), left = tt_mod(r - 1, p);
    size_t n = a->count;
    if (p == 1)
        return copy_unless_in_place(a, s, 0, n);
    /* Reduce-scatter: after round k, chunk r - k - 1 holds k + 2 ranks' terms. */
    for (int k = 0; k < p - 1; k++) {
        int sent = tt_mod(r - k, p), got = tt_mod(r - k - 1, p);
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, right, tt_block_region(k == 0 ? TT_BUF_INPUT : TT_BUF_OUTPUT, n, p, sent)));
        TT_TRY(tt_sched_recv_reduce(s, left, tt_block_region(TT_BUF_OUTPUT, n, p, got),
                                    tt_block_region(TT_BUF_INPUT, n, p, got)));
    }
    /* All-gather: rank r starts with the finished chunk r + 1. */
    for (int k = 0; k < p - 1; k++) {
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, right, tt_block_region(TT_BUF_OUTPUT, n, p, tt_mod(r + 1 - k, p))));
        TT_TRY(tt_sched_recv(s, left, tt_block_region(TT_BUF_OUTPUT, n, p, tt_mod(r - k, p))));
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t ring_reduce_scatter(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, right = tt_mod(r + 1, p), left = tt_mod(r - 1, p);
    size_t n = a->count; /* per rank; the input holds p * n */
    if (p == 1)
        return copy_unless_in_place(a, s, 0, n);
    /* Shifted by one from the all-reduce so rank r ends with chunk r;
     * partial sums wait in scratch, the last one lands in the output. */
    for (int k = 0; k < p - 1; k++) {
        int sent = tt_mod(r - k - 1, p), got = tt_mod(r - k - 2, p);
        tt_buf_t from = k == 0 ? TT_BUF_INPUT : TT_BUF_SCRATCH;
        tt_region_t dst =
            k == p - 2 ? tt_region(TT_BUF_OUTPUT, 0, n) : tt_region(TT_BUF_SCRATCH, (size_t)got * n, n);
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, right, tt_region(from, (size_t)sent * n, n)));
        TT_TRY(tt_sched_recv_reduce(s, left, dst, tt_region(TT_BUF_INPUT, (size_t)got * n, n)));
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t ring_allgather(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, right = tt_mod(r + 1, p), left = tt_mod(r - 1, p);
    size_t n = a->count; /* per rank; the output holds p * n */
    TT_TRY(tt_sched_round(s));
    TT_TRY(copy_unless_in_place(a, s, (size_t)r * n, n));
    for (int k = 0; k < p - 1; k++) {
        int sent = tt_mod(r - k, p), got = tt_mod(r - k - 1, p);
        if (k > 0)
            TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, right,
                             k == 0 ? tt_region(TT_BUF_INPUT, 0, n)
                                    : tt_region(TT_BUF_OUTPUT, (size_t)sent * n, n)));
        TT_TRY(tt_sched_recv(s, left, tt_region(TT_BUF_OUTPUT, (size_t)got * n, n)));
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_ring = {
    .name = "ring",
    .summary = "ring: p-1 rounds of reduce-scatter, p-1 of all-gather; bandwidth-optimal",
    .build = {[TT_COLL_ALLREDUCE] = ring_allreduce,
              [TT_COLL_REDUCE_SCATTER] = ring_reduce_scatter,
              [TT_COLL_ALLGATHER] = ring_allgather},
};
