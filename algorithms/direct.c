/* SPDX-License-Identifier: MIT */
/*
 * Direct (one-shot) all-reduce for small messages: every rank sends its
 * whole input to every other rank in one round, then adds all p inputs in
 * rank order. One round of latency, (p - 1) n bytes per link, and every rank
 * computes exactly the same sum, in the same order, so all get the same bits.
 * Cost: alpha + (p - 1) n beta + (p - 1) n gamma.
 */
#include "sched/schedule.h"

static tutti_status_t direct_allreduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank;
    size_t n = a->count;
    tt_region_t in = tt_region(TT_BUF_INPUT, 0, n), out = tt_region(TT_BUF_OUTPUT, 0, n);
    TT_TRY(tt_sched_round(s));
    /* Rank q's input lands in scratch block q; this rank's own is copied
     * there too, since in place the sum below overwrites the input. */
    TT_TRY(tt_sched_copy(s, tt_region(TT_BUF_SCRATCH, (size_t)r * n, n), in));
    for (int k = 1; k < p; k++)
        TT_TRY(tt_sched_send(s, tt_mod(r + k, p), in));
    for (int k = 1; k < p; k++) {
        int q = tt_mod(r - k, p);
        TT_TRY(tt_sched_recv(s, q, tt_region(TT_BUF_SCRATCH, (size_t)q * n, n)));
    }
    /* out = in_0 + in_1 + ... + in_{p-1}, in that order on every rank. */
    TT_TRY(tt_sched_round(s));
    TT_TRY(tt_sched_copy(s, out, tt_region(TT_BUF_SCRATCH, 0, n)));
    for (int q = 1; q < p; q++)
        TT_TRY(tt_sched_add(
            s, (tt_step_t){TT_STEP_REDUCE, -1, out, tt_region(TT_BUF_SCRATCH, (size_t)q * n, n)}));
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_direct = {
    .name = "direct",
    .summary = "direct one-shot: every rank sends its input to all, then adds the p inputs in rank order",
    .build = {[TT_COLL_ALLREDUCE] = direct_allreduce},
    .flags = TT_ALGO_RANK_ORDER | TT_ALGO_EVERY_PEER,
};
