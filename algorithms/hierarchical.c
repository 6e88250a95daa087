/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical (two-level) all-reduce, reduce-scatter and all-gather for
 * ranks spread over H hosts with L ranks each. All-reduce: a ring
 * reduce-scatter among a host's L ranks leaves local rank l with one
 * host-summed chunk; the L ranks that share a local index then all-reduce
 * that chunk across hosts in a ring of H (L rings at once, so every local
 * rank's network link carries 1/L of the traffic); a ring all-gather inside
 * each host hands the finished chunks round. Reduce-scatter and all-gather
 * use the matching halves. The slow inter-host links then carry
 * 2 ((H-1)/H) (n/L) per rank instead of the flat ring's 2 ((p-1)/p) n over
 * its slowest hop.
 *
 * The buffer is cut once into L x H pieces (piece (l, h) of chunk l) and
 * every step moves whole pieces, so the engine's slices line up across the
 * phases. Without a uniform host layout (hosts holding different numbers of
 * ranks, or none known) all ranks count as one host: a plain ring.
 */
#include "sched/schedule.h"

typedef struct {
    const tt_coll_args_t *a;
    int L, H;           /* ranks per host, hosts */
    int local, host;    /* this rank's place */
    const int *rank_at; /* [host * L + local]; NULL: rank = local (one host) */
} layout_t;

static layout_t layout_of(const tt_coll_args_t *a)
{
    const tt_hosts_t *h = a->hosts;
    if (!h || h->per_host <= 0 || h->per_host * h->nhosts != a->nranks)
        return (layout_t){.a = a, .L = a->nranks, .H = 1, .local = a->rank};
    return (layout_t){.a = a,
                      .L = h->per_host,
                      .H = h->nhosts,
                      .local = h->local_of[a->rank],
                      .host = h->host_of[a->rank],
                      .rank_at = h->rank_at};
}

static int rank_of(const layout_t *y, int host, int local)
{
    return y->rank_at ? y->rank_at[host * y->L + local] : local;
}

/* Piece (l, h) in buffer buf. All-reduce: piece h of chunk l of the
 * buffer. Reduce-scatter and all-gather: the block of the rank at (h, l),
 * which in a reduce-scatter's output is the only block there is. */
static tt_region_t piece(const layout_t *y, int l, int h, tt_buf_t buf)
{
    size_t n = y->a->count;
    if (y->a->coll == TT_COLL_ALLREDUCE) {
        size_t chunk_off = tt_block_off(n, y->L, l), chunk = tt_block_count(n, y->L, l);
        return tt_region(buf, chunk_off + tt_block_off(chunk, y->H, h), tt_block_count(chunk, y->H, h));
    }
    if (y->a->coll == TT_COLL_REDUCE_SCATTER && buf == TT_BUF_OUTPUT)
        return tt_region(buf, 0, n);
    return tt_region(buf, (size_t)rank_of(y, h, l) * n, n);
}

/* A ring inside this host (its chunks are local indices, each made of H
 * pieces) or across hosts among the ranks of one local index (its chunks
 * are hosts, each the single piece (fixed_l, h)). */
typedef struct {
    const layout_t *y;
    int intra;
    int fixed_l;
} ring_t;

static int ring_size(const ring_t *g)
{
    return g->intra ? g->y->L : g->y->H;
}

static int ring_pos(const ring_t *g)
{
    return g->intra ? g->y->local : g->y->host;
}

static int ring_rank(const ring_t *g, int i)
{
    int m = ring_size(g);
    i = tt_mod(i, m);
    return g->intra ? rank_of(g->y, g->y->host, i) : rank_of(g->y, i, g->y->local);
}

/* One step per piece of chunk c: a send from src, a receive into dst, or a
 * receive added to src into dst. */
static tutti_status_t chunk_steps(tt_sched_t *s, const ring_t *g, int c, tt_step_kind_t kind, int peer,
                                  tt_buf_t dst, tt_buf_t src)
{
    int npieces = g->intra ? g->y->H : 1;
    c = tt_mod(c, ring_size(g));
    for (int i = 0; i < npieces; i++) {
        int l = g->intra ? c : g->fixed_l, h = g->intra ? i : c;
        tt_step_t st = {.kind = kind,
                        .peer = peer,
                        .dst = kind == TT_STEP_SEND ? tt_region(TT_BUF_INPUT, 0, 0) : piece(g->y, l, h, dst),
                        .src = kind == TT_STEP_RECV ? tt_region(TT_BUF_INPUT, 0, 0) : piece(g->y, l, h, src)};
        TT_TRY(tt_sched_add(s, st));
    }
    return TUTTI_SUCCESS;
}

/* Ring reduce-scatter: the member at position i ends with chunk i + shift
 * summed over the ring, in buffer last; running sums wait in partial, each
 * member's own terms come from contrib. */
static tutti_status_t ring_reduce_scatter(tt_sched_t *s, const ring_t *g, int shift, tt_buf_t contrib,
                                          tt_buf_t partial, tt_buf_t last)
{
    int m = ring_size(g), me = ring_pos(g), right = ring_rank(g, me + 1), left = ring_rank(g, me - 1);
    for (int k = 0; k < m - 1; k++) {
        TT_TRY(tt_sched_round(s));
        TT_TRY(chunk_steps(s, g, me + shift - 1 - k, TT_STEP_SEND, right, TT_BUF_INPUT,
                           k == 0 ? contrib : partial));
        TT_TRY(chunk_steps(s, g, me + shift - 2 - k, TT_STEP_RECV_REDUCE, left, k == m - 2 ? last : partial,
                           contrib));
    }
    return TUTTI_SUCCESS;
}

/* Ring all-gather in the output: the member at position i starts with
 * chunk i + shift. */
static tutti_status_t ring_allgather(tt_sched_t *s, const ring_t *g, int shift)
{
    int m = ring_size(g), me = ring_pos(g), right = ring_rank(g, me + 1), left = ring_rank(g, me - 1);
    for (int k = 0; k < m - 1; k++) {
        TT_TRY(tt_sched_round(s));
        TT_TRY(chunk_steps(s, g, me + shift - k, TT_STEP_SEND, right, TT_BUF_INPUT, TT_BUF_OUTPUT));
        TT_TRY(chunk_steps(s, g, me + shift - k - 1, TT_STEP_RECV, left, TT_BUF_OUTPUT, TT_BUF_INPUT));
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t hierarchical_allreduce(const tt_coll_args_t *a, tt_sched_t *s)
{
    layout_t y = layout_of(a);
    ring_t intra = {.y = &y, .intra = 1}, inter = {.y = &y, .intra = 0, .fixed_l = (y.local + 1) % y.L};
    tt_buf_t host_sums = TT_BUF_INPUT; /* alone on its host, a rank's input is its host's sum */
    if (y.L > 1) {                     /* local rank l ends with chunk l + 1 summed over its host */
        TT_TRY(ring_reduce_scatter(s, &intra, 1, TT_BUF_INPUT, TT_BUF_OUTPUT, TT_BUF_OUTPUT));
        host_sums = TT_BUF_OUTPUT;
    }
    if (y.H > 1) {
        TT_TRY(ring_reduce_scatter(s, &inter, 1, host_sums, TT_BUF_OUTPUT, TT_BUF_OUTPUT));
        TT_TRY(ring_allgather(s, &inter, 1));
    }
    if (y.L > 1)
        TT_TRY(ring_allgather(s, &intra, 1));
    if (a->nranks == 1 && !a->in_place)
        TT_TRY(tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, 0, a->count), tt_region(TT_BUF_INPUT, 0, a->count)));
    return TUTTI_SUCCESS;
}

static tutti_status_t hierarchical_reduce_scatter(const tt_coll_args_t *a, tt_sched_t *s)
{
    layout_t y = layout_of(a);
    ring_t intra = {.y = &y, .intra = 1}, inter = {.y = &y, .intra = 0, .fixed_l = y.local};
    tt_buf_t host_sums = TT_BUF_INPUT;
    if (y.L > 1) { /* local rank l sums, over its host, the blocks of every rank with local index l */
        TT_TRY(ring_reduce_scatter(s, &intra, 0, TT_BUF_INPUT, TT_BUF_SCRATCH,
                                   y.H > 1 ? TT_BUF_SCRATCH : TT_BUF_OUTPUT));
        host_sums = TT_BUF_SCRATCH;
    }
    if (y.H > 1)
        TT_TRY(ring_reduce_scatter(s, &inter, 0, host_sums, TT_BUF_SCRATCH, TT_BUF_OUTPUT));
    if (a->nranks == 1 && !a->in_place)
        TT_TRY(tt_sched_copy(s, tt_region(TT_BUF_OUTPUT, 0, a->count), tt_region(TT_BUF_INPUT, 0, a->count)));
    return TUTTI_SUCCESS;
}

static tutti_status_t hierarchical_allgather(const tt_coll_args_t *a, tt_sched_t *s)
{
    layout_t y = layout_of(a);
    ring_t intra = {.y = &y, .intra = 1}, inter = {.y = &y, .intra = 0, .fixed_l = y.local};
    TT_TRY(tt_sched_round(s));
    if (!a->in_place)
        TT_TRY(tt_sched_copy(s, piece(&y, y.local, y.host, TT_BUF_OUTPUT),
                             tt_region(TT_BUF_INPUT, 0, a->count)));
    if (y.H > 1) /* gather the blocks of this local index from every host */
        TT_TRY(ring_allgather(s, &inter, 0));
    if (y.L > 1) /* then swap them, a local index's blocks at a time, inside the host */
        TT_TRY(ring_allgather(s, &intra, 0));
    return TUTTI_SUCCESS;
}

const tt_algorithm_t tt_algo_hierarchical = {
    .name = "hierarchical",
    .summary = "ring inside each host, L rings across hosts, ring inside again: least inter-host traffic",
    .build = {[TT_COLL_ALLREDUCE] = hierarchical_allreduce,
              [TT_COLL_REDUCE_SCATTER] = hierarchical_reduce_scatter,
              [TT_COLL_ALLGATHER] = hierarchical_allgather},
    .flags = TT_ALGO_MULTI_HOST,
};
