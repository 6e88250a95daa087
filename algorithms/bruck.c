/* SPDX-License-Identifier: MIT */
/*
 * Bruck all-gather: ceil(lg p) rounds for any p. Each rank keeps the blocks
 * it has in rotated order (its own first, in scratch); in round k it sends
 * its first min(2^k, p - 2^k) blocks to rank r - 2^k and appends as many
 * from rank r + 2^k. A last local pass puts the blocks in rank order.
 * Cost: ceil(lg p) alpha + ((p-1)/p) n beta, plus the local rotation.
 *
 * Bruck all-to-all: ceil(lg p) rounds and 2 ceil(lg p) peers where the
 * pairwise exchange takes p - 1 of each, for small blocks at many ranks.
 * Slot i holds the block bound for rank r - i; in the round of distance d
 * the slots whose index has bit d set travel, packed into one message, to
 * rank r - d, and the same slots come from r + d. After every round a
 * block has gone i ranks down: slot i of rank r then holds what rank r + i
 * sent it. About ceil(lg p) alpha + (ceil(lg p)/2) n beta, where n is all
 * of a rank's blocks, plus the packing.
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

/* Slots [from, to) of the all-to-all's rotated blocks, in scratch. */
static tt_region_t slots(size_t n, int from, int to)
{
    return tt_region(TT_BUF_SCRATCH, (size_t)from * n, (size_t)(to - from) * n);
}

/* Slots 1..p-1 whose index has bit d set, each run [j, end) of them in
 * turn: copied to (pack) or from (!pack) the message area at msg, packed.
 * Returns the message's length in blocks. */
static tutti_status_t move_runs(tt_sched_t *s, int p, int d, size_t n, size_t msg, int pack, int *blocks)
{
    *blocks = 0;
    for (int j = d; j < p; j += 2 * d) {
        int end = j + d < p ? j + d : p;
        tt_region_t packed = tt_region(TT_BUF_SCRATCH, msg + (size_t)*blocks * n, (size_t)(end - j) * n);
        TT_TRY(pack ? tt_sched_copy(s, packed, slots(n, j, end))
                    : tt_sched_copy(s, slots(n, j, end), packed));
        *blocks += end - j;
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t bruck_alltoall(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, r = a->rank, blocks = 0;
    size_t n = a->count;
    /* Scratch: the p slots, then the message out and the message in: a
     * round moves the slots with one bit set, at most p / 2 of them. */
    size_t out = (size_t)p * n, in = out + (size_t)(p / 2 + 1) * n;
    /* A packed message reads blocks at other extents than the copies that
     * wrote them: the schedule runs whole, as one slice. */
    s->whole = 1;
    TT_TRY(tt_sched_round(s));
    /* Slot i: the block for rank r - i (the input may be the output: all of
     * it is read here, the output written only at the end). */
    for (int i = 0; i < p; i++)
        TT_TRY(
            tt_sched_copy(s, slots(n, i, i + 1), tt_region(TT_BUF_INPUT, (size_t)tt_mod(r - i, p) * n, n)));
    for (int d = 1; d < p; d *= 2) {
        if (d > 1) {
            TT_TRY(tt_sched_round(s));
            TT_TRY(move_runs(s, p, d / 2, n, in, 0, &blocks)); /* the last round's blocks to their slots */
        }
        TT_TRY(move_runs(s, p, d, n, out, 1, &blocks));
        TT_TRY(tt_sched_send(s, tt_mod(r - d, p), tt_region(TT_BUF_SCRATCH, out, (size_t)blocks * n)));
        TT_TRY(tt_sched_recv(s, tt_mod(r + d, p), tt_region(TT_BUF_SCRATCH, in, (size_t)blocks * n)));
    }
    TT_TRY(tt_sched_round(s));
    if (p > 1)
        TT_TRY(move_runs(s, p, tt_pow2_floor(p - 1), n, in, 0, &blocks));
    /* Slot i came from rank r + i: slots [0, p - r) from ranks r.., the
     * rest from ranks 0.. (empty on rank 0, kept so every rank's schedule
     * has the same shape for the cost model's sample). */
    TT_TRY(
        tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, (size_t)r * n, (size_t)(p - r) * n), slots(n, 0, p - r)));
    TT_TRY(tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, 0, (size_t)r * n), slots(n, p - r, p)));
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_bruck = {
    .name = "bruck",
    .summary = "Bruck: ceil(lg p) rounds for any p, blocks kept rotated then put in order",
    .build = {[TT_COLL_ALLGATHER] = bruck_allgather, [TT_COLL_ALLTOALL] = bruck_alltoall},
};
