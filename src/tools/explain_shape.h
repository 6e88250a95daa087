/* SPDX-License-Identifier: MIT */
/*
 * The shape an algorithm is drawn in, read from its messages rather than
 * its name, so that a new algorithm gets one without a line here: a tree
 * when every part of the data travels over a tree's edges (its levels from
 * the root down), a butterfly when ranks pair with r xor 2^k (ranks beyond
 * the largest power of two folding in), else ranks on a circle (a ring
 * then shows as one).
 */
#ifndef TT_EXPLAIN_SHAPE_H
#define TT_EXPLAIN_SHAPE_H
#include "tools/explain_trace.h"

typedef enum { TT_SHAPE_CIRCLE, TT_SHAPE_TREE, TT_SHAPE_BUTTERFLY } tt_shape_kind_t;

#define TT_SHAPE_MAX_TREES 4

typedef struct {
    int root;
    int *parent; /* [rank]: -1 at the root */
    int *depth;  /* [rank]: 0 at the root */
    double *x;   /* [rank]: across the tree, 0 to 1, subtrees side by side */
} tt_shape_tree_t;

typedef struct {
    tt_shape_kind_t kind;
    int ntrees;
    tt_shape_tree_t tree[TT_SHAPE_MAX_TREES];
    int *tree_of_chunk; /* [t->nout]: the tree that carries each chunk, -1 none */
} tt_shape_t;

/* The shape of algo's schedules traced in t (args the call's, rank
 * ignored). The kind is read at 8 ranks or more, where patterns differ
 * (at 2 ranks every algorithm is one edge). 0, or -1 out of memory. */
int tt_shape_find(tt_shape_t *sh, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                  const tt_trace_t *t);
void tt_shape_free(tt_shape_t *sh);
const char *tt_shape_name(tt_shape_kind_t kind);
#endif
