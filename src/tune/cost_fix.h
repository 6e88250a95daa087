/* SPDX-License-Identifier: MIT */
/*
 * Measured corrections of the cost model: for one collective on one job
 * shape (ranks, hosts) and one power-of-two size class, how much longer an
 * algorithm took than the model predicted. tutti-bw --fit measures them;
 * the tuner multiplies its predictions by them, so on the shapes that were
 * measured it ranks the algorithms by what they did, and elsewhere by the
 * model alone. Lines of the tuning file:
 *     fix COLL ALGO NRANKS NHOSTS SIZE_CLASS FACTOR
 * ("fix allreduce double_tree 8 1 16 0.68": 64 KiB to 128 KiB - 1).
 */
#ifndef TT_COST_FIX_H
#define TT_COST_FIX_H

#include <stdio.h>

#include "sched/schedule.h"

#define TT_COST_FIX_MAX 1024 /* about 9 job shapes of 5 algorithms over 22 sizes */
#define TT_COST_FIX_NAME 24

typedef struct {
    char algo[TT_COST_FIX_NAME];
    int coll, nranks, nhosts, size_class;
    double factor;
} tt_cost_fix_entry_t;

typedef struct {
    int n;
    tt_cost_fix_entry_t e[TT_COST_FIX_MAX];
} tt_cost_fix_t;

/* The size class of a buffer of bytes: floor(log2(bytes)), 0 for 0 and 1. */
int tt_cost_size_class(size_t bytes);
/* Reads one "fix ..." line into f: 0, or -1 when it is malformed or f is full. */
int tt_cost_fix_parse(tt_cost_fix_t *f, const char *line);
/* Adds or replaces the entry for its key; -1 when f is full. */
int tt_cost_fix_set(tt_cost_fix_t *f, const tt_cost_fix_entry_t *e);
/* Whether f has entries for args's collective and job shape. */
int tt_cost_fix_covers(const tt_cost_fix_t *f, const tt_coll_args_t *args);
/* The factor for algo on args's shape at bytes, 1 when none was measured. */
double tt_cost_fix_factor(const tt_cost_fix_t *f, const char *algo, const tt_coll_args_t *args, size_t bytes);
/* Writes f's lines; 0, or -1 when writing failed. */
int tt_cost_fix_save(const tt_cost_fix_t *f, FILE *out);

#endif
