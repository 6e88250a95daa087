/* SPDX-License-Identifier: MIT */
/*
 * Double binary tree all-reduce. Half the buffer is reduced up one binary
 * tree and broadcast back down it; the other half uses a second tree in
 * which the first tree's leaves are (mostly) interior, so every rank sends
 * and receives about as much as every other and no rank's links idle.
 * Latency grows with the tree height, lg p, instead of the ring's p; the
 * engine's slices pipeline each half up and down its tree.
 *
 * Rounds are aligned across ranks: whatever a rank sends in round k its
 * peer receives in round k, which is what keeps a schedule deadlock-free
 * with finite buffers. Reducing a level takes two rounds (the left child's
 * data, then the right's, both added into the same place), broadcasting a
 * level one.
 * Cost: about 3 lg p alpha + 3 (n/2) beta per rank's busiest link.
 */
#include <stdatomic.h>

#include "sched/schedule.h"

typedef struct {
    int parent, child[2]; /* positions, -1 where absent */
    int depth, height;    /* this node's depth; the deepest node's depth */
} tree_node_t;

/* The balanced in-order binary tree over positions 0..p-1: the root of a
 * range is its middle, the ranges either side hang below it. */
static tree_node_t tree_node(int p, int pos)
{
    tree_node_t t = {.parent = -1, .child = {-1, -1}};
    int lo = 0, hi = p;
    for (;;) {
        int mid = lo + (hi - lo) / 2;
        if (pos == mid) {
            if (lo < mid)
                t.child[0] = lo + (mid - lo) / 2;
            if (mid + 1 < hi)
                t.child[1] = mid + 1 + (hi - mid - 1) / 2;
            break;
        }
        t.parent = mid;
        t.depth++;
        if (pos < mid)
            hi = mid;
        else
            lo = mid + 1;
    }
    while ((2 << t.height) <= p) /* a balanced tree of p nodes is floor(lg p) deep */
        t.height++;
    return t;
}

static int is_interior(int p, int pos)
{
    return tree_node(p, pos).child[0] >= 0;
}

/* Where rank r sits in tree 1 (t = 0) or tree 2 (t = 1). Tree 2 is tree 1
 * mirrored or shifted by one, whichever leaves fewer ranks interior in both.
 * Counting them takes O(p log p): the last answer is kept, so that pricing
 * every rank's schedule (the cost model's walk) does not count p times. */
static int use_mirror(int p)
{
    static _Atomic long long last; /* p * 2 + the answer; 0: none yet */
    long long seen = atomic_load_explicit(&last, memory_order_relaxed);
    if (seen / 2 == p)
        return (int)(seen % 2);
    int both_mirror = 0, both_shift = 0;
    for (int r = 0; r < p; r++) {
        both_mirror += is_interior(p, r) && is_interior(p, p - 1 - r);
        both_shift += is_interior(p, r) && is_interior(p, (r + 1) % p);
    }
    int mirror = both_mirror <= both_shift;
    atomic_store_explicit(&last, (long long)p * 2 + mirror, memory_order_relaxed);
    return mirror;
}

static int position(int p, int mirror, int t, int rank)
{
    return t == 0 ? rank : mirror ? p - 1 - rank : (rank + 1) % p;
}

static int rank_at(int p, int mirror, int t, int pos)
{
    return t == 0 ? pos : mirror ? p - 1 - pos : tt_mod(pos - 1, p);
}

/* The step, if any, this rank runs in global round k for tree t's half. */
static tutti_status_t tree_step(const tt_coll_args_t *a, tt_sched_t *s, int mirror, int t, int k)
{
    int p = a->nranks, pos = position(p, mirror, t, a->rank);
    tree_node_t me = tree_node(p, pos);
    int up_rounds = 2 * me.height;
    tt_region_t in = tt_block_region(TT_BUF_INPUT, a->count, 2, t);
    tt_region_t out = tt_block_region(TT_BUF_OUTPUT, a->count, 2, t);
    /* Up: children at depth d + 1 report to depth d in rounds
     * 2 (height - 1 - d) (left child) and that + 1 (right child). */
    int first_up = 2 * (me.height - 1 - me.depth);
    for (int c = 0; c < 2; c++)
        if (me.child[c] >= 0 && k == first_up + c)
            return tt_sched_recv_reduce(s, rank_at(p, mirror, t, me.child[c]), out, c == 0 ? in : out);
    if (me.parent >= 0) {
        int side = tree_node(p, me.parent).child[1] == pos;
        if (k == 2 * (me.height - me.depth) + side)
            return tt_sched_send(s, rank_at(p, mirror, t, me.parent), me.child[0] >= 0 ? out : in);
        if (k == up_rounds + me.depth - 1)
            return tt_sched_recv(s, rank_at(p, mirror, t, me.parent), out);
    }
    /* Down: depth d passes the result on in round up_rounds + d. */
    if (k == up_rounds + me.depth)
        for (int c = 0; c < 2; c++)
            if (me.child[c] >= 0)
                TT_TRY(tt_sched_send(s, rank_at(p, mirror, t, me.child[c]), out));
    return TUTTI_SUCCESS;
}

static tutti_status_t double_tree_allreduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    int p = a->nranks, mirror = use_mirror(p);
    if (p == 1)
        return a->in_place ? TUTTI_SUCCESS
                           : tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, 0, a->count),
                                           tt_region(TT_BUF_INPUT, 0, a->count));
    /* Every rank lists all 3 * height global rounds, idle ones included, so
     * round numbers mean the same on every rank (and in tutti-explain). */
    for (int k = 0; k < 3 * tree_node(p, 0).height; k++) {
        TT_TRY(tt_sched_round(s));
        for (int t = 0; t < 2; t++)
            TT_TRY(tree_step(a, s, mirror, t, k));
    }
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_double_tree = {
    .name = "double_tree",
    .summary = "two complementary binary trees, each reducing and broadcasting half: ~3 lg p rounds",
    .build = {[TT_COLL_ALLREDUCE] = double_tree_allreduce},
};
