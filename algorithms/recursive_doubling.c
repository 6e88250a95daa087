/* SPDX-License-Identifier: MIT */
/*
 * Recursive doubling all-reduce, for small messages: lg p rounds in which
 * rank r swaps its whole running result with r ^ 2^k. Ranks beyond the
 * largest power of two, pof2, first hand their input to rank r - pof2 and get
 * the result back at the end (two extra rounds). Every rank combines the same
 * two partial results in each round, so all end with identical bits.
 * Cost: (lg p) (alpha + n beta + n gamma), against the ring's 2(p - 1) alpha.
 */
#include "sched/schedule.h"

static tutti_status_t rd_allreduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, pof2 = tt_pow2_floor(p), extra = p - pof2;
    size_t n = a->count;
    tt_region_t in = tt_region(TT_BUF_INPUT, 0, n), out = tt_region(TT_BUF_OUTPUT, 0, n);
    tt_region_t theirs = tt_region(TT_BUF_SCRATCH, 0, n);

    TT_TRY(tt_sched_round(s));
    if (r >= pof2) { /* an extra rank: hand over, then wait for the result */
        TT_TRY(tt_sched_send(s, r - pof2, in));
        TT_TRY(tt_sched_round(s));
        return tt_sched_recv(s, r - pof2, out);
    }
    if (!a->in_place)
        TT_TRY(tt_sched_copy(s, out, in));
    int pending = 0; /* theirs holds a partial result still to be added */
    if (r < extra) {
        TT_TRY(tt_sched_recv(s, r + pof2, theirs));
        pending = 1;
    }
    for (int mask = 1; mask < pof2; mask *= 2) {
        TT_TRY(tt_sched_round(s));
        if (pending)
            TT_TRY(tt_sched_add(s, (tt_step_t){TT_STEP_REDUCE, -1, out, theirs}));
        TT_TRY(tt_sched_send(s, r ^ mask, out));
        TT_TRY(tt_sched_recv(s, r ^ mask, theirs));
        pending = 1;
    }
    if (pending) {
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_add(s, (tt_step_t){TT_STEP_REDUCE, -1, out, theirs}));
    }
    if (r < extra) {
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, r + pof2, out));
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_recursive_doubling = {
    .name = "recursive_doubling",
    .summary = "recursive doubling: lg p rounds swapping whole vectors; lowest latency for small messages",
    .build = {[TT_COLL_ALLREDUCE] = rd_allreduce},
};
