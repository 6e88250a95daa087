/* SPDX-License-Identifier: MIT */
/* tutti-explain --measure across sizes: one rank of a job started by tutti-run. */
#ifndef TT_EXPLAIN_SWEEP_H
#define TT_EXPLAIN_SWEEP_H

#include <stddef.h>

#include "sched/schedule.h"

typedef struct {
    tt_coll_t coll;
    size_t minb, maxb; /* bytes of the whole buffer, doubling */
    tutti_dtype_t dtype;
    int root;
    int json;
} tt_sweep_opts_t;

/* Times coll at every size as the library runs it (TUTTI_ALGO and
 * TUTTI_TUNING_FILE steer it as usual) and prints, on rank 0, measured
 * against the tuner's prediction with a plot. Returns the exit status. */
int tt_explain_sweep(const tt_sweep_opts_t *o);

#endif
