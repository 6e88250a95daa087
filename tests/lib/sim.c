/* SPDX-License-Identifier: MIT */
/* The schedule simulator (see sim.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"
#include "sched/job.h"
#include "tests/lib/sim.h"

typedef struct {
    tt_sim_t *sim;
    const tt_job_t *job;
    tt_reduce_fn reduce;
    int slice;
    char ***msgs; /* [rank][step]: what a send posted, until its receive takes it */
    size_t **lens;
} slice_run_t;

static char *region_ptr(const tt_sim_t *sim, int rank, tt_region_t r, int slice, size_t *bytes)
{
    char *bufs[3] = {sim->in[rank], sim->out[rank], sim->scratch[rank]};
    size_t off = r.off + tt_block_off(r.count, sim->nslices, slice);
    *bytes = tt_block_count(r.count, sim->nslices, slice) * sim->elem;
    return bufs[r.buf] + off * sim->elem;
}

/* Local steps and sends, in list order. */
static int start_round(void *arg, int r, int k)
{
    slice_run_t *sr = arg;
    tt_sim_t *sim = sr->sim;
    const tt_sched_t *s = &sr->job->s[r];
    for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
        const tt_step_t *st = &s->steps[i];
        size_t b1, b2;
        if (st->kind == TT_STEP_COPY || st->kind == TT_STEP_REDUCE) {
            char *dst = region_ptr(sim, r, st->dst, sr->slice, &b1);
            char *src = region_ptr(sim, r, st->src, sr->slice, &b2);
            if (st->kind == TT_STEP_COPY)
                memmove(dst, src, b1);
            else
                sr->reduce(dst, dst, src, b1 / sim->elem);
        } else if (st->kind == TT_STEP_SEND) {
            char *src = region_ptr(sim, r, st->src, sr->slice, &b1);
            if (!(sr->msgs[r][i] = malloc(b1 + 1)))
                return -1;
            memcpy(sr->msgs[r][i], src, b1);
            sr->lens[r][i] = b1;
        }
    }
    return 0;
}

/* Receives, each taking what its matching send posted. */
static int finish_round(void *arg, int r, int k)
{
    slice_run_t *sr = arg;
    tt_sim_t *sim = sr->sim;
    const tt_sched_t *s = &sr->job->s[r];
    for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
        const tt_step_t *st = &s->steps[i];
        if (st->kind != TT_STEP_RECV && st->kind != TT_STEP_RECV_REDUCE)
            continue;
        int q = st->peer, qs = sr->job->match[r][i];
        size_t bytes, b2;
        char *dst = region_ptr(sim, r, st->dst, sr->slice, &bytes);
        if (sr->lens[q][qs] != bytes) {
            snprintf(sim->error, sizeof sim->error,
                     "rank %d lane %d slice %d round %d: rank %d sent %zu bytes, %zu expected", r,
                     sr->slice % sim->nlanes, sr->slice, k, q, sr->lens[q][qs], bytes);
            return -1;
        }
        if (st->kind == TT_STEP_RECV)
            memcpy(dst, sr->msgs[q][qs], bytes);
        else
            sr->reduce(dst, region_ptr(sim, r, st->src, sr->slice, &b2), sr->msgs[q][qs], bytes / sim->elem);
        free(sr->msgs[q][qs]);
        sr->msgs[q][qs] = NULL;
    }
    return 0;
}

/* One slice of every rank through the job, ranks visited in a random order. */
static int run_slice(tt_sim_t *sim, const tt_job_t *job, tt_reduce_fn reduce, int slice)
{
    int p = sim->nranks, rc = 0;
    slice_run_t sr = {
        sim, job, reduce, slice, calloc((size_t)p, sizeof(char **)), calloc((size_t)p, sizeof(size_t *))};
    for (int r = 0; r < p && sr.msgs && sr.lens; r++) {
        sr.msgs[r] = calloc((size_t)job->s[r].nsteps + 1, sizeof(char *));
        sr.lens[r] = calloc((size_t)job->s[r].nsteps + 1, sizeof(size_t));
    }
    tt_job_visit_t v = {.start = start_round, .finish = finish_round, .arg = &sr};
    tt_job_walk_t w = {.seed = &sim->seed};
    int walked = tt_job_walk(job, &v, &w);
    if (walked > 0)
        snprintf(sim->error, sizeof sim->error,
                 "deadlock: %d ranks wait for messages that never come (slice %d)", w.stuck, slice);
    if (walked)
        rc = -1;
    for (int r = 0; r < p; r++) {
        for (int i = 0; i < job->s[r].nsteps; i++) {
            if (rc == 0 && job->s[r].steps[i].kind == TT_STEP_SEND && job->match[r][i] < 0) {
                snprintf(sim->error, sizeof sim->error, "a message was sent but never received");
                rc = -1;
            }
            free(sr.msgs[r][i]);
        }
        free(sr.msgs[r]);
        free(sr.lens[r]);
    }
    free(sr.msgs);
    free(sr.lens);
    return rc;
}

int tt_sim_run(tt_sim_t *sim, const tt_algorithm_t *algo, tt_coll_args_t args)
{
    int p = sim->nranks, rc = 0;
    tt_job_t job;
    sim->error[0] = '\0';
    if (tt_job_build(&job, algo, &args) != TUTTI_SUCCESS) {
        snprintf(sim->error, sizeof sim->error, "builder failed");
        return -1;
    }
    sim->scratch = calloc((size_t)p, sizeof(char *));
    tt_reduce_fn reduce = tt_reduce_get(sim->dtype, sim->op == TUTTI_AVG ? TUTTI_SUM : sim->op);
    for (int r = 0; r < p; r++)
        sim->scratch[r] = calloc(job.s[r].scratch_count + 1, sim->elem);
    /* Slices touch disjoint parts of every region (the engine's rule), so
     * each walks the job on its own. */
    int asked = sim->nslices;
    sim->nslices = tt_sched_slices(&job.s[0], asked);
    for (int k = 0; k < sim->nslices && rc == 0; k++)
        rc = run_slice(sim, &job, reduce, k);
    sim->nslices = asked;
    for (int r = 0; r < p; r++)
        free(sim->scratch[r]);
    free(sim->scratch);
    tt_job_free(&job);
    return rc;
}
