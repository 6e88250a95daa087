/* SPDX-License-Identifier: MIT */
/*
 * Binomial trees for broadcast and reduce, for small messages. With ranks
 * numbered from the root (v = rank - root), in round k every rank below 2^k
 * that already holds the data passes it to v + 2^k (broadcast); reduce runs
 * the same tree backwards, each rank adding its children's partial results
 * before handing its own to its parent. ceil(lg p) rounds instead of the
 * chain's p - 1: cost ceil(lg p) (alpha + n beta).
 */
#include "sched/schedule.h"

static int rounds_for(int p)
{
    int rounds = 0;
    while ((1 << rounds) < p)
        rounds++;
    return rounds;
}

static tutti_status_t binomial_broadcast(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, v = tt_mod(a->rank - a->root, p);
    tt_region_t in = tt_region(TT_BUF_INPUT, 0, a->count), out = tt_region(TT_BUF_OUTPUT, 0, a->count);
    for (int k = 0; k < rounds_for(p) || k == 0; k++) {
        int mask = 1 << k;
        TT_TRY(tt_sched_round(s));
        if (k == 0 && v == 0 && !a->in_place)
            TT_TRY(tt_sched_copy(s, out, in));
        if (v >= mask && v < 2 * mask) /* this round brings the data here */
            TT_TRY(tt_sched_recv(s, tt_mod(a->root + v - mask, p), out));
        else if (v < mask && v + mask < p)
            TT_TRY(tt_sched_send(s, tt_mod(a->root + v + mask, p), v == 0 ? in : out));
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t binomial_reduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, v = tt_mod(a->rank - a->root, p);
    tt_region_t in = tt_region(TT_BUF_INPUT, 0, a->count);
    /* The running partial result: the root's output, scratch elsewhere. */
    tt_region_t partial =
        v == 0 ? tt_region(TT_BUF_OUTPUT, 0, a->count) : tt_region(TT_BUF_SCRATCH, 0, a->count);
    int have_partial = 0;
    TT_TRY(tt_sched_round(s));
    if (p == 1)
        return a->in_place ? TUTTI_SUCCESS : tt_sched_copy(s, partial, in);
    for (int k = 0; k < rounds_for(p); k++) {
        int mask = 1 << k;
        if (k > 0)
            TT_TRY(tt_sched_round(s));
        if (v & mask) { /* hand what this subtree summed to the parent; done */
            return tt_sched_send(s, tt_mod(a->root + v - mask, p), have_partial ? partial : in);
        }
        if (v + mask < p) {
            TT_TRY(
                tt_sched_recv_reduce(s, tt_mod(a->root + v + mask, p), partial, have_partial ? partial : in));
            have_partial = 1;
        }
    }
    /* Only the root gets here; a root with no children (p == 1) returned. */
    return have_partial || a->in_place ? TUTTI_SUCCESS : tt_sched_copy(s, partial, in);
}

const tt_algorithm_t tt_algo_binomial = {
    .name = "binomial",
    .summary =
        "binomial tree from (broadcast) or to (reduce) the root: ceil(lg p) rounds, for small messages",
    .build = {[TT_COLL_BROADCAST] = binomial_broadcast, [TT_COLL_REDUCE] = binomial_reduce},
};
