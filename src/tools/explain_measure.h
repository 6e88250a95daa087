/* SPDX-License-Identifier: MIT */
/* tutti-explain --measure: one rank of a job started by tutti-run. */
#ifndef TT_EXPLAIN_MEASURE_H
#define TT_EXPLAIN_MEASURE_H

#include <stddef.h>

#include "sched/schedule.h"

/* Runs coll on a buffer of bytes with algo (NULL: the tuner's pick) in one
 * slice, and on rank 0 prints, round by round, the median measured time
 * next to the cost model's. Returns the process exit status. */
int tt_explain_measure(tt_coll_t coll, const tt_algorithm_t *algo, size_t bytes, tutti_dtype_t dtype,
                       int root);

#endif
