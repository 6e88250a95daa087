/* SPDX-License-Identifier: MIT */
/*
 * The schedule simulator: runs every rank's schedule in one process over
 * plain memory, slice by slice as the engine cuts them, along the job walk
 * (sched/job.h) with ranks visited in a random order, each receive taking
 * what its matching send posted. Reports deadlocks, size mismatches and
 * unreceived messages instead of hanging.
 */
#ifndef TT_TEST_SIM_H
#define TT_TEST_SIM_H

#include "sched/schedule.h"
#include "tutti.h"

typedef struct {
    int nranks;
    char **in, **out, **scratch; /* per rank, allocated by the caller (scratch by sim) */
    size_t elem;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int nslices, nlanes;
    unsigned seed;
    char error[256];
} tt_sim_t;

/* Builds each rank's schedule from args (rank filled in) and runs them all.
 * Returns 0 on success, -1 with sim->error set otherwise. */
int tt_sim_run(tt_sim_t *sim, const tt_algorithm_t *algo, tt_coll_args_t args);

#endif
