/* SPDX-License-Identifier: MIT */
/*
 * tutti-explain's teaching view of one schedule: global steps on the cost
 * model's clock (idle rounds left out), each rank's work in a step with the
 * alpha-beta-gamma arithmetic of its round, the state of every rank's chunks
 * after each step, the fold of ranks beyond a power of two explained, and
 * the textbook formula beside the whole call's prediction.
 */
#ifndef TT_EXPLAIN_VIEW_H
#define TT_EXPLAIN_VIEW_H

#include <stddef.h>

#include "tools/explain_steps.h"
#include "tools/explain_trace.h"
#include "tune/policy.h"

typedef struct {
    const tt_algorithm_t *algo;
    const tt_coll_args_t *args; /* the real call (rank ignored) */
    size_t bytes;               /* the whole buffer, as the user gave it */
    size_t elem;
    int nodes;
    int json, mermaid; /* the view as JSON, or as a Mermaid diagram, instead of text */
} tt_view_opts_t;

/* The API's count for a buffer of bytes of elements of elem bytes (per
 * rank where the API counts per rank: reduce-scatter, all-gather, all-to-all). */
size_t tt_explain_count(tt_coll_t coll, int nranks, size_t bytes, size_t elem);
/* The count of the symbolic run: one element per chunk, enough to name
 * every chunk an algorithm cuts. */
size_t tt_explain_symbolic_count(tt_coll_t coll, int nranks);

/* Everything a view needs beside the trace: the global steps and each rank's
 * real schedule (the trace's are one element per chunk). */
typedef struct {
    const tt_view_opts_t *o;
    const tt_cost_model_t *m;
    const tt_trace_t *t;
    tt_steps_t steps;
    tt_sched_t *real; /* [rank] */
    int nslices;
} tt_view_t;

/* 0, or -1 with a message on stderr. tt_view_close frees it either way. */
int tt_view_open(tt_view_t *v, const tt_view_opts_t *o, const tt_algo_policy_t *policy, const tt_trace_t *t);
void tt_view_close(tt_view_t *v);
/* Rank r's output buffer after global step s (NULL before its first round). */
const tt_cell_t *tt_view_state_after(const tt_view_t *v, int r, int s);
/* A grid cell: "ace" for ranks 0, 2 and 4; "S" when all p are in; "." for none. */
void tt_view_grid_cell(uint64_t ranks, int p, char *out, size_t len);

/* Prints the view of trace t (the symbolic run of algo on args): as text,
 * as JSON or as Mermaid (tools/explain_json.h). 0, or 1 with a message on
 * stderr. */
int tt_explain_view(const tt_view_opts_t *o, const tt_algo_policy_t *policy, const tt_trace_t *t);

/* "12.3 us", "4.56 ms"; "-" when negative. */
void tt_explain_format_time(double s, char *out, size_t len);
/* "4 MiB", "6 KiB", "12 B". */
void tt_explain_format_bytes(size_t b, char *out, size_t len);

/* The fold of ranks beyond the largest power of two, in a paragraph; "" when
 * the algorithm has none at this rank count. */
void tt_explain_fold(const tt_algorithm_t *algo, int p, char *out, size_t len);

#endif
