/* SPDX-License-Identifier: MIT */
/* The algorithm registry: which algorithms exist and which one a collective uses. */
#ifndef TT_ALGO_H
#define TT_ALGO_H

#include "schedule.h"

extern const tt_algorithm_t *const tt_algorithms[];
extern const int tt_num_algorithms;

/* Name of a collective ("allreduce"). */
const char *tt_coll_name(tt_coll_t coll);
/* The algorithm that runs coll, or NULL if none serves it. */
const tt_algorithm_t *tt_algo_for(tt_coll_t coll);
/* Builds this rank's schedule for args with the chosen algorithm. */
tutti_status_t tt_algo_build(const tt_coll_args_t *args, tt_sched_t *s);

#endif
