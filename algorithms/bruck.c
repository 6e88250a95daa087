/* SPDX-License-Identifier: MIT */
/*
 * Bruck all-gather: ceil(lg p) rounds for any p. Each rank keeps the blocks
 * it has in rotated order (its own first, in scratch); in round k it sends
 * its first min(2^k, p - 2^k) blocks to rank r - 2^k and appends as many
 * from rank r + 2^k. A last local pass puts the blocks in rank order.
 * Cost: ceil(lg p) alpha + ((p-1)/p) n beta, plus the local rotation.
 */
#include "sched/schedule.h"

static tt_region_t rotated(size_t n, int j)
{
    return tt_region(TT_BUF_SCRATCH, (size_t)j * n, n);
}

static tutti_status_t bruck_allgather(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank;
    size_t n = a->count; /* per rank; the output holds p * n */
    TT_TRY(tt_sched_round(s));
    TT_TRY(tt_sched_copy(s, rotated(n, 0), tt_region(TT_BUF_INPUT, 0, n)));
    for (int dist = 1; dist < p; dist *= 2) {
        int blocks = dist < p - dist ? dist : p - dist;
        TT_TRY(tt_sched_round(s));
        for (int j = 0; j < blocks; j++) /* one step per block: slices line up */
            TT_TRY(tt_sched_send(s, tt_mod(r - dist, p), rotated(n, j)));
        for (int j = 0; j < blocks; j++)
            TT_TRY(tt_sched_recv(s, tt_mod(r + dist, p), rotated(n, dist + j)));
    }
    TT_TRY(tt_sched_round(s));
    for (int j = 0; j < p; j++)
        TT_TRY(tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, (size_t)tt_mod(r + j, p) * n, n), rotated(n, j)));
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_bruck = {
    .name = "bruck",
    .summary = "Bruck: ceil(lg p) rounds for any p, blocks kept rotated then put in order",
    .build = {[TT_COLL_ALLGATHER] = bruck_allgather},
};
