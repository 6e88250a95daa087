/* SPDX-License-Identifier: MIT */
/*
 * Rabenseifner: recursive halving reduce-scatter and recursive doubling
 * all-gather over the largest power of two ranks, pof2; the all-reduce is
 * one followed by the other. Any other rank r >= pof2 (an "extra") pairs
 * with rank r - pof2: it hands its input over first and gets its share back
 * at the end, so virtual rank v < pof2 stands for real ranks v and v + pof2.
 * Every step moves whole blocks (one step per block), so the engine's slices
 * of a block always line up.
 * Cost (all-reduce): 2 lg p alpha + 2 ((p-1)/p) n beta + ((p-1)/p) n gamma,
 * plus the fold's two full-size transfers when p is not a power of two;
 * reduce-scatter and all-gather pay half of that each.
 */
#include "sched/schedule.h"

/* The real ranks' blocks that virtual rank v stands for: v, and v + pof2
 * when that rank exists. Returns how many (1 or 2). */
static int blocks_of(int v, int pof2, int p, int out[2])
{
    out[0] = v;
    out[1] = v + pof2;
    return v + pof2 < p ? 2 : 1;
}

/* Block b of a buffer that holds n elements per rank. */
static tt_region_t rank_block(tt_buf_t buf, size_t n, int b)
{
    return tt_region(buf, (size_t)b * n, n);
}

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

/* Reduce-scatter: rank r ends with block r of p blocks of n elements.
 * Partial sums live in scratch; a block's running sum is still the input
 * only until something has been added to it (the fold or a halving round). */
static tutti_status_t rabenseifner_reduce_scatter(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, pof2 = tt_pow2_floor(p), own[2];
    size_t n = a->count;
    TT_TRY(tt_sched_round(s));
    if (p == 1)
        return a->in_place
                   ? TUTTI_SUCCESS
                   : tt_sched_copy(s, rank_block(TT_BUF_OUTPUT, n, 0), rank_block(TT_BUF_INPUT, n, 0));
    if (r >= pof2) { /* an extra rank: hand everything over, then wait */
        for (int b = 0; b < p; b++)
            TT_TRY(tt_sched_send(s, r - pof2, rank_block(TT_BUF_INPUT, n, b)));
        TT_TRY(tt_sched_round(s));
        return tt_sched_recv(s, r - pof2, rank_block(TT_BUF_OUTPUT, n, 0));
    }
    tt_buf_t sums = TT_BUF_INPUT;
    if (r + pof2 < p) {
        for (int b = 0; b < p; b++)
            TT_TRY(tt_sched_recv_reduce(s, r + pof2, rank_block(TT_BUF_SCRATCH, n, b),
                                        rank_block(TT_BUF_INPUT, n, b)));
        sums = TT_BUF_SCRATCH;
        TT_TRY(tt_sched_round(s));
    }
    /* The window [lo, lo + width) of virtual ranks halves each round. */
    int lo = 0, width = pof2;
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
        int half = width / 2, keep = (r & mask) ? lo + half : lo, give = (r & mask) ? lo : lo + half;
        if (mask != pof2 / 2)
            TT_TRY(tt_sched_round(s));
        for (int v = give; v < give + half; v++)
            for (int i = 0, k = blocks_of(v, pof2, p, own); i < k; i++)
                TT_TRY(tt_sched_send(s, r ^ mask, rank_block(sums, n, own[i])));
        for (int v = keep; v < keep + half; v++)
            for (int i = 0, k = blocks_of(v, pof2, p, own); i < k; i++) {
                int b = own[i];
                tt_region_t dst =
                    b == r && mask == 1 ? rank_block(TT_BUF_OUTPUT, n, 0) : rank_block(TT_BUF_SCRATCH, n, b);
                TT_TRY(tt_sched_recv_reduce(s, r ^ mask, dst, rank_block(sums, n, b)));
            }
        sums = TT_BUF_SCRATCH; /* every block still in play has been added to */
        lo = keep;
        width = half;
    }
    if (r + pof2 < p) { /* the partner's finished block goes home */
        TT_TRY(tt_sched_round(s));
        TT_TRY(tt_sched_send(s, r + pof2, rank_block(TT_BUF_SCRATCH, n, r + pof2)));
    }
    return TUTTI_SUCCESS;
}

/* All-gather: block b of the output comes from rank b's input. */
static tutti_status_t rabenseifner_allgather(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, pof2 = tt_pow2_floor(p), own[2];
    size_t n = a->count;
    TT_TRY(tt_sched_round(s));
    if (!a->in_place)
        TT_TRY(tt_sched_copy(s, rank_block(TT_BUF_OUTPUT, n, r), tt_region(TT_BUF_INPUT, 0, n)));
    if (p == 1)
        return TUTTI_SUCCESS;
    if (r >= pof2) { /* an extra rank: hand its block over, get the rest back */
        TT_TRY(tt_sched_send(s, r - pof2, tt_region(TT_BUF_INPUT, 0, n)));
        TT_TRY(tt_sched_round(s));
        for (int b = 0; b < p; b++)
            if (b != r)
                TT_TRY(tt_sched_recv(s, r - pof2, rank_block(TT_BUF_OUTPUT, n, b)));
        return TUTTI_SUCCESS;
    }
    if (r + pof2 < p)
        TT_TRY(tt_sched_recv(s, r + pof2, rank_block(TT_BUF_OUTPUT, n, r + pof2)));
    /* The window [lo, lo + width) of virtual ranks doubles each round. */
    int lo = r, width = 1;
    for (int mask = 1; mask < pof2; mask *= 2) {
        int theirs = (r & mask) ? lo - width : lo + width;
        TT_TRY(tt_sched_round(s));
        for (int v = lo; v < lo + width; v++)
            for (int i = 0, k = blocks_of(v, pof2, p, own); i < k; i++)
                TT_TRY(tt_sched_send(s, r ^ mask, rank_block(TT_BUF_OUTPUT, n, own[i])));
        for (int v = theirs; v < theirs + width; v++)
            for (int i = 0, k = blocks_of(v, pof2, p, own); i < k; i++)
                TT_TRY(tt_sched_recv(s, r ^ mask, rank_block(TT_BUF_OUTPUT, n, own[i])));
        lo = lo < theirs ? lo : theirs;
        width *= 2;
    }
    if (r + pof2 < p) {
        TT_TRY(tt_sched_round(s));
        for (int b = 0; b < p; b++)
            if (b != r + pof2)
                TT_TRY(tt_sched_send(s, r + pof2, rank_block(TT_BUF_OUTPUT, n, b)));
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_rabenseifner = {
    .name = "rabenseifner",
    .summary =
        "recursive halving reduce-scatter + recursive doubling all-gather: 2 lg p rounds, bandwidth-optimal",
    .build = {[TT_COLL_ALLREDUCE] = rabenseifner_allreduce,
              [TT_COLL_REDUCE_SCATTER] = rabenseifner_reduce_scatter,
              [TT_COLL_ALLGATHER] = rabenseifner_allgather},
};
