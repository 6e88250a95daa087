/* SPDX-License-Identifier: MIT */
/*
 * Pairwise exchange all-to-all: in round k rank r sends its block for r + k
 * and receives the block of r - k, so each round is a permutation and no
 * rank receives from two peers at once. Every pair connects, as an
 * all-to-all's data needs (Bruck's routes small blocks around that).
 */
#include "sched/schedule.h"

static tutti_status_t pairwise_alltoall(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank;
    size_t n = a->count;
    /* In place, the outgoing blocks are saved first: they are overwritten
     * by incoming ones before all are sent. */
    tt_buf_t from = a->in_place ? TT_BUF_SCRATCH : TT_BUF_INPUT;
    TT_TRY(tt_sched_round(s));
    if (a->in_place) {
        /* Block by block: slice k of a send then depends on slice k of
         * its own copy only (see the slicing rule in schedule.h). */
        for (int j = 0; j < p && p > 1; j++)
            if (j != r)
                TT_TRY(tt_sched_copy(s, tt_region(TT_BUF_SCRATCH, (size_t)j * n, n),
                                     tt_region(TT_BUF_INPUT, (size_t)j * n, n)));
    } else {
        TT_TRY(tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, (size_t)r * n, n),
                             tt_region(TT_BUF_INPUT, (size_t)r * n, n)));
    }
    for (int k = 1; k < p; k++) {
        int to = tt_mod(r + k, p), from_rank = tt_mod(r - k, p);
        if (k > 1 || a->in_place)
            TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, to, tt_region(from, (size_t)to * n, n)));
        TT_TRY(tt_sched_recv(s, from_rank, tt_region(TT_BUF_OUTPUT, (size_t)from_rank * n, n)));
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_pairwise = {
    .name = "pairwise",
    .summary = "pairwise exchange: p-1 rounds, round k sends to r+k and receives from r-k",
    .build = {[TT_COLL_ALLTOALL] = pairwise_alltoall},
};
