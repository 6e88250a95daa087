/* SPDX-License-Identifier: MIT */
/* The algorithm registry: which algorithms exist and which one a call uses. */
#ifndef TT_ALGO_H
#define TT_ALGO_H

#include "schedule.h"

extern const tt_algorithm_t *const tt_algorithms[];
extern const int tt_num_algorithms;

/* Name of a collective ("allreduce"). */
const char *tt_coll_name(tt_coll_t coll);
/* The registered algorithm with this name, or NULL. */
const tt_algorithm_t *tt_algo_named(const char *name);
/* What steers the choice, read from TUTTI_ALGO and TUTTI_SMALL_BYTES once
 * per communicator (environment look-ups cost more than a small call). */
typedef struct {
    const tt_algorithm_t *forced; /* NULL: tutti chooses */
    size_t small_bytes;
    int deterministic; /* TUTTI_DETERMINISTIC: reductions add in rank order */
} tt_algo_policy_t;

void tt_algo_policy_from_env(tt_algo_policy_t *policy);
/*
 * The algorithm that runs a call moving bytes bytes (the whole buffer). In
 * deterministic mode a reduction runs the ordered algorithm (or the direct
 * all-reduce, which adds in the same order, when small or forced). Else the
 * forced one when it serves the collective; up to small_bytes, recursive
 * doubling for all-reduce and binomial trees for broadcast and reduce; else
 * the first registered algorithm that serves it. NULL if none does.
 */
const tt_algorithm_t *tt_algo_choose(const tt_algo_policy_t *policy, const tt_coll_args_t *args,
                                     size_t bytes);
/* Builds this rank's schedule for args with algo. */
tutti_status_t tt_algo_build(const tt_algorithm_t *algo, const tt_coll_args_t *args, tt_sched_t *s);

#endif
