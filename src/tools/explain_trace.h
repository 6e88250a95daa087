/* SPDX-License-Identifier: MIT */
/*
 * Symbolic runs of schedules for tutti-explain: every element of every
 * buffer holds the set of ranks whose data has been added into it and the
 * chunk it belongs to, so each step can be described as "a2+b2+c2".
 */
#ifndef TT_EXPLAIN_TRACE_H
#define TT_EXPLAIN_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "sched/schedule.h"

typedef struct {
    uint64_t ranks; /* bit r: rank r's term is in; 0: nothing yet */
    int chunk;
} tt_cell_t;

/* What one send carried: its lowest and highest chunk (-1 when empty), and
 * its place in one causal order of every rank's sends (the job walk's). */
typedef struct {
    int lo, hi;
    long seq;
} tt_sent_t;

typedef struct {
    int nranks;
    tt_sched_t *s;     /* [rank], built with a count of one element per chunk */
    char ***labels;    /* [rank][step]: what the step moved or left behind */
    tt_sent_t **sent;  /* [rank][step]: for sends, what they carried */
    tt_cell_t **out;   /* [rank]: the output buffer at the end */
    tt_cell_t ***snap; /* [rank][round]: the output buffer when that round finished */
    size_t nout;       /* its elements */
    char error[160];
} tt_trace_t;

/* Builds every rank's schedule for args (one element per chunk) and runs it
 * symbolically. 0, or -1 with error set (deadlock, unmatched message). */
int tt_trace_run(tt_trace_t *t, const tt_algorithm_t *algo, const tt_coll_args_t *args);
void tt_trace_free(tt_trace_t *t);
/* The name of rank r's data: a, b, ... z, then r26, r27, ... */
void tt_trace_rank_name(int r, char *out, size_t len);

#endif
