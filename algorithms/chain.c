/* SPDX-License-Identifier: MIT */
/*
 * Pipelined chain for broadcast and reduce: the ranks form a line that
 * starts (broadcast) or ends (reduce) at the root. Each slice walks the line
 * one hop per round while the engine keeps several slices in flight, so for
 * large messages every link is busy and the time approaches n * beta.
 */
#include "sched/schedule.h"

static tutti_status_t chain_broadcast(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank;
    int pos = tt_mod(r - a->root, p), next = tt_mod(r + 1, p), prev = tt_mod(r - 1, p);
    tt_region_t in = tt_region(TT_BUF_INPUT, 0, a->count), out = tt_region(TT_BUF_OUTPUT, 0, a->count);
    TT_TRY(tt_sched_round(s));
    if (pos == 0) {
        if (!a->in_place)
            TT_TRY(tt_sched_copy(s, out, in));
        if (p > 1)
            TT_TRY(tt_sched_send(s, next, in));
        return TUTTI_SUCCESS;
    }
    TT_TRY(tt_sched_recv(s, prev, out));
    if (pos < p - 1) {
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, next, out));
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t chain_reduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank;
    int pos = tt_mod(r - a->root - 1, p), next = tt_mod(r + 1, p), prev = tt_mod(r - 1, p);
    tt_region_t in = tt_region(TT_BUF_INPUT, 0, a->count), out = tt_region(TT_BUF_OUTPUT, 0, a->count);
    tt_region_t partial = tt_region(TT_BUF_SCRATCH, 0, a->count);
    TT_TRY(tt_sched_round(s));
    if (p == 1)
        return a->in_place ? TUTTI_SUCCESS : tt_sched_copy(s, out, in);
    if (pos == 0) /* the far end starts the line with its own input */
        return tt_sched_send(s, next, in);
    if (pos == p - 1) /* the root */
        return tt_sched_recv_reduce(s, prev, out, in);
    TT_TRY(tt_sched_recv_reduce(s, prev, partial, in));
    TT_TRY(tt_sched_round(s));
    return tt_sched_send(s, next, partial);
}

const tt_algorithm_t tt_algo_chain = {
    .name = "chain",
    .summary = "pipelined chain from (broadcast) or to (reduce) the root; p-1 hops, n*beta for large n",
    .build = {[TT_COLL_BROADCAST] = chain_broadcast, [TT_COLL_REDUCE] = chain_reduce},
};
