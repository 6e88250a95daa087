/* SPDX-License-Identifier: MIT */
/*
 * A job: every rank's schedule for one call, with each send matched to the
 * receive it meets, and a walk of all ranks through their rounds in an
 * order the messages allow. The cost model times the walk, the schedule
 * simulator moves data along it and tutti-explain labels it, so all three
 * read one account of which message meets which.
 */
#ifndef TT_JOB_H
#define TT_JOB_H

#include "sched/schedule.h"

typedef struct {
    int nranks;
    tt_sched_t *s;        /* [rank] */
    tt_coll_args_t *args; /* [rank]: the call as that rank builds it */
    int **match;          /* [rank][step]: the matching step's index at the peer; -1: local or unmatched */
    int **round;          /* [rank][step]: the round the step belongs to */
} tt_job_t;

/*
 * Builds every rank's schedule for args (rank ignored) with algo and
 * matches the k-th send from a to b with the k-th receive at b from a,
 * as the transports' in-order channels deliver them. TUTTI_ERR_UNSUPPORTED
 * when algo does not serve the collective; j is empty after a failure.
 */
tutti_status_t tt_job_build(tt_job_t *j, const tt_algorithm_t *algo, const tt_coll_args_t *args);
void tt_job_free(tt_job_t *j);

/*
 * What a walk tells its visitor. A rank's round starts once its previous
 * round finished: start runs its local steps and posts its sends. The round
 * finishes once every receive's matching send has been posted (and, in a
 * rendezvous walk, every send's matching receive too). Each returns 0, or
 * -1 to stop the walk.
 */
typedef struct {
    int (*start)(void *arg, int rank, int round);
    int (*finish)(void *arg, int rank, int round);
    void *arg;
} tt_job_visit_t;

typedef struct {
    int rendezvous; /* a send also waits for its receiver to reach the receive's round */
    unsigned *seed; /* non-NULL: visit ranks from a random rank each pass (varied interleavings) */
    int stuck;      /* out: ranks left waiting when the walk could not finish */
} tt_job_walk_t;

/* Walks every rank through all its rounds. 0 when all finished; 1 when
 * some wait forever (a deadlock, or a step without a match: w->stuck says
 * how many ranks); -1 when the visitor stopped the walk. */
int tt_job_walk(const tt_job_t *j, const tt_job_visit_t *v, tt_job_walk_t *w);

#endif
