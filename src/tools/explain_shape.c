/* SPDX-License-Identifier: MIT */
/* The shape tutti-explain draws an algorithm in, read from its messages. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/hosts.h"
#include "tools/explain_shape.h"

const char *tt_shape_name(tt_shape_kind_t kind)
{
    return kind == TT_SHAPE_TREE ? "tree" : kind == TT_SHAPE_BUTTERFLY ? "butterfly" : "circle";
}

/* Every message joins r and r xor 2^k below the largest power of two q,
 * or folds rank q+i into rank i; and some pair is more than 1 apart (else
 * it is pairs, not a butterfly). */
static int is_butterfly(const tt_trace_t *t)
{
    int p = t->nranks, q = 1, far = 0;
    while (q * 2 <= p)
        q *= 2;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < t->s[r].nsteps; i++) {
            const tt_step_t *st = &t->s[r].steps[i];
            if (st->kind != TT_STEP_SEND)
                continue;
            int a = r < st->peer ? r : st->peer, b = r ^ a ^ st->peer, x = a ^ b;
            if (a < q && b < q && (x & (x - 1)) == 0)
                far |= x > 1;
            else if (!(b >= q && a == b - q))
                return 0;
        }
    return far;
}

/* Chunks grouped by the edges they travel (bit b of adj[c * p + a]: a
 * message of chunk c between a and b). group[c]: -1 for a chunk that never
 * moves. The number of groups, or -1 out of memory. */
static int group_chunks(const tt_trace_t *t, int *group, int *first_chunk)
{
    int p = t->nranks, n = (int)t->nout, ngroups = 0;
    uint64_t *adj = calloc((size_t)n * (size_t)p + 1, sizeof *adj);
    if (!adj)
        return -1;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < t->s[r].nsteps; i++) {
            const tt_sent_t *m = &t->sent[r][i];
            int peer = t->s[r].steps[i].peer;
            if (t->s[r].steps[i].kind != TT_STEP_SEND || m->lo < 0)
                continue;
            for (int c = m->lo; c <= m->hi && c < n; c++) {
                adj[(size_t)c * (size_t)p + (size_t)r] |= 1ull << peer;
                adj[(size_t)c * (size_t)p + (size_t)peer] |= 1ull << r;
            }
        }
    for (int c = 0; c < n; c++) {
        const uint64_t *mine = adj + (size_t)c * (size_t)p;
        group[c] = -1;
        for (int r = 0; r < p && group[c] < 0; r++)
            if (mine[r])
                group[c] = ngroups;
        for (int g = 0; g < ngroups && group[c] >= 0; g++)
            if (memcmp(mine, adj + (size_t)first_chunk[g] * (size_t)p, (size_t)p * sizeof *mine) == 0)
                group[c] = g;
        if (group[c] == ngroups)
            first_chunk[ngroups++] = c;
    }
    free(adj);
    return ngroups;
}

/* Subtrees side by side: leaves in depth-first order, a parent above the middle of its children. */
static double place(tt_shape_tree_t *tr, int p, int r, int *leaves)
{
    double sum = 0;
    int kids = 0;
    for (int c = 0; c < p; c++)
        if (tr->parent[c] == r && c != r) {
            sum += place(tr, p, c, leaves);
            kids++;
        }
    tr->x[r] = kids ? sum / kids : (double)(*leaves)++;
    return tr->x[r];
}

/* The tree chunk group g travels, rooted where its first messages lead:
 * toward the root where the collective reduces, else away from it. 0, or
 * -1 when those edges are not one tree spanning every rank. */
static int tree_of(const tt_trace_t *t, const int *group, int g, int reduces, tt_shape_tree_t *tr)
{
    int p = t->nranks, rc = -1, edges = 0, root = -1;
    long *first = malloc((size_t)p * (size_t)p * sizeof *first);
    int *sent_first = calloc((size_t)p, sizeof(int)), *got_first = calloc((size_t)p, sizeof(int));
    if (!first || !sent_first || !got_first)
        goto out;
    for (int k = 0; k < p * p; k++)
        first[k] = -1;
    /* first[a * p + b]: the earliest message from a to b carrying the group's chunks */
    for (int r = 0; r < p; r++)
        for (int i = 0; i < t->s[r].nsteps; i++) {
            const tt_sent_t *m = &t->sent[r][i];
            if (t->s[r].steps[i].kind != TT_STEP_SEND)
                continue;
            int mine = 0;
            for (int c = m->lo; c >= 0 && c <= m->hi && c < (int)t->nout; c++)
                mine |= group[c] == g;
            long *f = &first[r * p + t->s[r].steps[i].peer];
            if (mine && (*f < 0 || m->seq < *f))
                *f = m->seq;
        }
    for (int a = 0; a < p; a++)
        for (int b = a + 1; b < p; b++) {
            long ab = first[a * p + b], ba = first[b * p + a];
            if (ab < 0 && ba < 0)
                continue;
            edges++;
            int from = ba < 0 || (ab >= 0 && ab < ba) ? a : b;
            sent_first[from]++;
            got_first[from == a ? b : a]++;
        }
    /* A reduction's first message on each edge goes up, so every rank but
     * the root sends first on one edge, its parent's; a broadcast's goes
     * down. A path fits both readings: what the collective does decides. */
    const int *deg = reduces ? sent_first : got_first;
    int zero = -1, ones = 0;
    for (int r = 0; r < p && edges == p - 1; r++) {
        zero = deg[r] == 0 && zero < 0 ? r : zero;
        ones += deg[r] == 1;
    }
    if (zero >= 0 && ones == p - 1)
        root = zero;
    if (root < 0)
        goto out;
    /* parents and depths outward from the root; a rank never reached means no spanning tree */
    for (int r = 0; r < p; r++) {
        tr->depth[r] = r == root ? 0 : -1;
        tr->parent[r] = -1;
    }
    for (int d = 0, grew = 1; grew; d++) {
        grew = 0;
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p && tr->depth[a] == d; b++)
                if (tr->depth[b] < 0 && (first[a * p + b] >= 0 || first[b * p + a] >= 0)) {
                    tr->depth[b] = d + 1;
                    tr->parent[b] = a;
                    grew = 1;
                }
    }
    int leaves = 0, reached = 1;
    for (int r = 0; r < p; r++)
        reached &= tr->depth[r] >= 0;
    if (!reached)
        goto out;
    tr->root = root;
    place(tr, p, root, &leaves);
    for (int r = 0; r < p; r++)
        tr->x[r] = leaves > 1 ? tr->x[r] / (leaves - 1) : 0.5;
    rc = 0;
out:
    free(got_first);
    free(sent_first);
    free(first);
    return rc;
}

/* Trees for every group of chunks, or -1 (not trees, or out of memory). */
static int find_trees(tt_shape_t *sh, const tt_trace_t *t, tt_coll_t coll)
{
    int p = t->nranks, n = (int)t->nout;
    int reduces = coll == TT_COLL_ALLREDUCE || coll == TT_COLL_REDUCE || coll == TT_COLL_REDUCE_SCATTER;
    int *firsts = calloc((size_t)n + 1, sizeof *firsts);
    sh->tree_of_chunk = calloc((size_t)n + 1, sizeof *sh->tree_of_chunk);
    int ngroups = firsts && sh->tree_of_chunk ? group_chunks(t, sh->tree_of_chunk, firsts) : -1;
    free(firsts);
    if (ngroups < 1 || ngroups > TT_SHAPE_MAX_TREES)
        return -1;
    for (int g = 0; g < ngroups; g++) {
        tt_shape_tree_t *tr = &sh->tree[sh->ntrees++];
        tr->parent = calloc((size_t)p, sizeof(int));
        tr->depth = calloc((size_t)p, sizeof(int));
        tr->x = calloc((size_t)p, sizeof(double));
        if (!tr->parent || !tr->depth || !tr->x || tree_of(t, sh->tree_of_chunk, g, reduces, tr))
            return -1;
    }
    return 0;
}

/* The kind of shape, read at 8 ranks when the call has fewer. */
static tt_shape_kind_t kind_of(const tt_algorithm_t *algo, const tt_coll_args_t *args, const tt_trace_t *t)
{
    tt_trace_t big;
    tt_hosts_t hosts;
    uint64_t ids[8] = {0};
    const tt_trace_t *look = t;
    int traced = 0;
    if (t->nranks < 8 && tt_hosts_init(&hosts, 8, ids, NULL) == 0) {
        tt_coll_args_t a = *args;
        a.nranks = 8;
        a.hosts = &hosts;
        /* symbolic counts are one element per chunk: p of them, or 1 per rank */
        a.count = a.count > 1 ? 8 : a.count;
        traced = tt_trace_run(&big, algo, &a) == 0;
        look = traced ? &big : t;
        tt_hosts_free(&hosts);
    }
    tt_shape_t probe = {0};
    tt_shape_kind_t kind = is_butterfly(look)                          ? TT_SHAPE_BUTTERFLY
                           : find_trees(&probe, look, args->coll) == 0 ? TT_SHAPE_TREE
                                                                       : TT_SHAPE_CIRCLE;
    tt_shape_free(&probe);
    if (traced)
        tt_trace_free(&big);
    return kind;
}

int tt_shape_find(tt_shape_t *sh, const tt_algorithm_t *algo, const tt_coll_args_t *args, const tt_trace_t *t)
{
    memset(sh, 0, sizeof *sh);
    sh->kind = kind_of(algo, args, t);
    if (sh->kind == TT_SHAPE_TREE && find_trees(sh, t, args->coll)) {
        tt_shape_free(sh); /* a tree at 8 ranks need not be one at 3 */
        sh->kind = TT_SHAPE_CIRCLE;
    }
    return 0;
}

void tt_shape_free(tt_shape_t *sh)
{
    for (int g = 0; g < sh->ntrees; g++) {
        free(sh->tree[g].parent);
        free(sh->tree[g].depth);
        free(sh->tree[g].x);
    }
    free(sh->tree_of_chunk);
    tt_shape_kind_t kind = sh->kind;
    memset(sh, 0, sizeof *sh);
    sh->kind = kind;
}
