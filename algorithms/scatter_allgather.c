/* SPDX-License-Identifier: MIT */
/*
 * Broadcast for large messages as scatter then ring all-gather: the root
 * sends block j of p to rank j, then the blocks go round the ring until every
 * rank has all of them. The root's link carries (p-1)/p of the data once
 * instead of the whole message, and every link is busy in the all-gather.
 * Cost: p alpha + 2 ((p-1)/p) n beta.
 */
#include "sched/schedule.h"

static tutti_status_t scatter_allgather_broadcast(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, root = a->root;
    int right = tt_mod(r + 1, p), left = tt_mod(r - 1, p);
    size_t n = a->count;
    TT_TRY(tt_sched_round(s));
    if (r == root) {
        for (int j = 0; j < p; j++) {
            if (!a->in_place)
                TT_TRY(tt_sched_copy(s, tt_block_region(TT_BUF_OUTPUT, n, p, j),
                                     tt_block_region(TT_BUF_INPUT, n, p, j)));
            if (j != root)
                TT_TRY(tt_sched_send(s, j, tt_block_region(TT_BUF_INPUT, n, p, j)));
        }
    } else {
        TT_TRY(tt_sched_recv(s, root, tt_block_region(TT_BUF_OUTPUT, n, p, r)));
    }
    /* Ring all-gather of the p blocks: rank r starts with block r. */
    for (int k = 0; k < p - 1; k++) {
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, right, tt_block_region(TT_BUF_OUTPUT, n, p, tt_mod(r - k, p))));
        TT_TRY(tt_sched_recv(s, left, tt_block_region(TT_BUF_OUTPUT, n, p, tt_mod(r - k - 1, p))));
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_scatter_allgather = {
    .name = "scatter_allgather",
    .summary = "scatter from the root, then ring all-gather: broadcast of large messages",
    .build = {[TT_COLL_BROADCAST] = scatter_allgather_broadcast},
    .flags = TT_ALGO_EVERY_PEER, /* the root's scatter */
};
