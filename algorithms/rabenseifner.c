/* SPDX-License-Identifier: MIT */
/*
 * Rabenseifner all-reduce: recursive halving reduce-scatter, then recursive
 * doubling all-gather, over the largest power of two ranks, pof2. Ranks
 * beyond it first hand their input to rank r - pof2 and get the result back
 * at the end. Rank r ends the halving with block r of pof2 blocks fully
 * reduced; every step moves whole blocks (one step per block, so the
 * engine's slices of a block always line up).
 * Cost: 2 lg p alpha + 2 ((p-1)/p) n beta + ((p-1)/p) n gamma, plus the
 * fold's two full-size transfers when p is not a power of two.
 */
#include "schedule.h"

static tutti_status_t rabenseifner_allreduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, pof2 = tt_pow2_floor(p), extra = p - pof2;
    size_t n = a->count;

    TT_TRY(tt_sched_round(s));
    if (r >= pof2) { /* an extra rank: hand over, then wait for the result */
        for (int b = 0; b < pof2; b++)
            TT_TRY(tt_sched_send(s, r - pof2, tt_block_region(TT_BUF_INPUT, n, pof2, b)));
        TT_TRY(tt_sched_round(s));
        for (int b = 0; b < pof2; b++)
            TT_TRY(tt_sched_recv(s, r - pof2, tt_block_region(TT_BUF_OUTPUT, n, pof2, b)));
        return TUTTI_SUCCESS;
    }
    if (r < extra) { /* fold the extra rank's input into ours, block by block */
        for (int b = 0; b < pof2; b++)
            TT_TRY(tt_sched_recv_reduce(s, r + pof2, tt_block_region(TT_BUF_OUTPUT, n, pof2, b),
                                        tt_block_region(TT_BUF_INPUT, n, pof2, b)));
    } else if (!a->in_place) {
        for (int b = 0; b < pof2; b++)
            TT_TRY(tt_sched_copy(s, tt_block_region(TT_BUF_OUTPUT, n, pof2, b),
                                 tt_block_region(TT_BUF_INPUT, n, pof2, b)));
    }
    /* Recursive halving: the window [lo, lo + width) of blocks halves each
     * round; this rank keeps the half its bit for that round selects. */
    int lo = 0, width = pof2;
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
        int partner = r ^ mask, half = width / 2;
        int keep = (r & mask) ? lo + half : lo, give = (r & mask) ? lo : lo + half;
        TT_TRY(tt_sched_round(s));
        for (int b = 0; b < half; b++)
            TT_TRY(tt_sched_send(s, partner, tt_block_region(TT_BUF_OUTPUT, n, pof2, give + b)));
        for (int b = 0; b < half; b++)
            TT_TRY(tt_sched_recv_reduce(s, partner, tt_block_region(TT_BUF_OUTPUT, n, pof2, keep + b),
                                        tt_block_region(TT_BUF_OUTPUT, n, pof2, keep + b)));
        lo = keep;
        width = half;
    }
    /* Recursive doubling: swap windows with the partner until all is here. */
    for (int mask = 1; mask < pof2; mask *= 2) {
        int partner = r ^ mask, theirs = (r & mask) ? lo - width : lo + width;
        TT_TRY(tt_sched_round(s));
        for (int b = 0; b < width; b++)
            TT_TRY(tt_sched_send(s, partner, tt_block_region(TT_BUF_OUTPUT, n, pof2, lo + b)));
        for (int b = 0; b < width; b++)
            TT_TRY(tt_sched_recv(s, partner, tt_block_region(TT_BUF_OUTPUT, n, pof2, theirs + b)));
        lo = lo < theirs ? lo : theirs;
        width *= 2;
    }
    if (r < extra) {
        TT_TRY(tt_sched_round(s));
        for (int b = 0; b < pof2; b++)
            TT_TRY(tt_sched_send(s, r + pof2, tt_block_region(TT_BUF_OUTPUT, n, pof2, b)));
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_rabenseifner = {
    .name = "rabenseifner",
    .summary =
        "recursive halving reduce-scatter + recursive doubling all-gather: 2 lg p rounds, bandwidth-optimal",
    .build = {[TT_COLL_ALLREDUCE] = rabenseifner_allreduce},
};
