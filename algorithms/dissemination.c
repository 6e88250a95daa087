/* SPDX-License-Identifier: MIT */
/*
 * Dissemination barrier: in round k rank r signals r + 2^k and waits for
 * r - 2^k. After ceil(lg p) rounds every rank has heard, directly or through
 * others, from every rank; works for any p.
 */
#include "sched/schedule.h"

static tutti_status_t dissemination_barrier(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank;
    tt_region_t none = tt_region(TT_BUF_SCRATCH, 0, 0);
    for (int dist = 1; dist < p; dist *= 2) {
        tutti_status_t st = tt_sched_round(s);
        if (!st)
            st = tt_sched_send(s, tt_mod(r + dist, p), none);
        if (!st)
            st = tt_sched_recv(s, tt_mod(r - dist, p), none);
        if (st)
            return st;
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_dissemination = {
    .name = "dissemination",
    .summary = "dissemination: ceil(lg p) rounds, round k signals rank r+2^k",
    .build = {[TT_COLL_BARRIER] = dissemination_barrier},
};
