/* SPDX-License-Identifier: MIT */
/*
 * Global steps for tutti-explain: every rank's rounds placed on the cost
 * model's clock. A round's place is the moment its messages start moving
 * (a transfer starts once both its ends have reached it); rounds whose
 * messages start together form one step. A round with only local work
 * (a copy, an addition) joins the step of that rank's next round with
 * messages, or its last one; a round with nothing to do (idle) is dropped.
 */
#ifndef TT_EXPLAIN_STEPS_H
#define TT_EXPLAIN_STEPS_H

#include <stddef.h>

#include "tune/cost.h"

typedef struct {
    int rank, round;
    int step;          /* the global step, 0-based */
    int messages;      /* sends and receives in the round */
    double start, end; /* the round's start and end on the model's clock, seconds */
    double key;        /* when its messages start moving (its start if it has none) */
} tt_step_slot_t;

typedef struct {
    int nslots;
    tt_step_slot_t *slots; /* by step, then rank */
    int nsteps;            /* global steps */
    int comm_steps;        /* of those, steps in which messages move */
    double *step_time;     /* [nsteps]: when each step's messages start */
    int timed;             /* the model gave times (up to 64 ranks); else rounds are aligned by index */
} tt_steps_t;

/* Places every rank's rounds of algo on args (rank ignored) for elements of
 * elem bytes in nslices slices. 0, or -1 when the schedule cannot be built. */
int tt_explain_steps(tt_steps_t *out, const tt_cost_model_t *m, const tt_algorithm_t *algo,
                     const tt_coll_args_t *args, size_t elem, int nslices);
void tt_explain_steps_free(tt_steps_t *s);

#endif
