/* SPDX-License-Identifier: MIT */
/*
 * tutti-explain's teaching view of one schedule: global steps on the cost
 * model's clock (idle rounds left out), each rank's work in a step with the
 * alpha-beta-gamma arithmetic of its round, the state of every rank's chunks
 * after each step, the fold of ranks beyond a power of two explained, and
 * the textbook formula beside the whole call's prediction. As text, or as
 * JSON for perf/report/report's animation.
 */
#ifndef TT_EXPLAIN_VIEW_H
#define TT_EXPLAIN_VIEW_H

#include <stddef.h>

#include "tools/explain_trace.h"
#include "tune/policy.h"

typedef struct {
    const tt_algorithm_t *algo;
    const tt_coll_args_t *args; /* the real call (rank ignored) */
    size_t bytes;               /* the whole buffer, as the user gave it */
    size_t elem;
    int nodes;
    int json;
} tt_view_opts_t;

/* Prints the view of trace t (the symbolic run of algo on args). 0, or 1
 * with a message on stderr. */
int tt_explain_view(const tt_view_opts_t *o, const tt_algo_policy_t *policy, const tt_trace_t *t);

/* "12.3 us", "4.56 ms"; "-" when negative. */
void tt_explain_format_time(double s, char *out, size_t len);
/* "4 MiB", "6 KiB", "12 B". */
void tt_explain_format_bytes(size_t b, char *out, size_t len);

/* The fold of ranks beyond the largest power of two, in a paragraph; "" when
 * the algorithm has none at this rank count. */
void tt_explain_fold(const tt_algorithm_t *algo, int p, char *out, size_t len);

#endif
