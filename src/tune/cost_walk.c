/* SPDX-License-Identifier: MIT */
/*
 * The price of a whole schedule (see cost.h): every rank's schedule walked
 * round by round, each round priced by tt_cost_round (cost.c), a rank
 * waiting for the peers it receives from; beyond 64 ranks a sample of the
 * ranks where they run alike (cost_sample.c).
 */
#include <stdlib.h>

#include "sched/job.h"
#include "tune/cost.h"
#include "tune/cost_sample.h"

/* Every rank's schedule and, per rank and round, one slice's cost and when
 * the round starts in the walk (-1 until the rank gets there). */
typedef struct {
    tt_job_t job;
    double **round_start; /* [rank][round]; [nrounds]: when the rank finishes */
    double **round_cost;  /* [rank][round]: one slice */
} job_t;

static void job_free(job_t *j)
{
    for (int r = 0; r < j->job.nranks; r++) {
        if (j->round_start)
            free(j->round_start[r]);
        if (j->round_cost)
            free(j->round_cost[r]);
    }
    free(j->round_start);
    free(j->round_cost);
    tt_job_free(&j->job);
}

static int job_build(job_t *j, const tt_algorithm_t *algo, const tt_coll_args_t *args)
{
    if (tt_job_build(&j->job, algo, args) != TUTTI_SUCCESS)
        return -1;
    int p = j->job.nranks;
    j->round_start = calloc((size_t)p, sizeof *j->round_start);
    j->round_cost = calloc((size_t)p, sizeof *j->round_cost);
    if (!j->round_start || !j->round_cost)
        return -1;
    for (int r = 0; r < p; r++) {
        j->round_start[r] = malloc(((size_t)j->job.s[r].nrounds + 1) * sizeof(double));
        j->round_cost[r] = malloc(((size_t)j->job.s[r].nrounds + 1) * sizeof(double));
        if (!j->round_start[r] || !j->round_cost[r])
            return -1;
    }
    return 0;
}

typedef struct {
    job_t *j;
    const tt_cost_model_t *m;
    size_t elem;
    int nslices;
} trip_t;

/* A round ends when its own work is done and its last transfer has
 * arrived; a transfer starts once both ends have reached their rounds. On
 * crowded CPUs a rank that got to a receive first has slept meanwhile, and
 * the data is taken only once it has its CPU back: every hop of a chain of
 * such waits pays a switch, which is what makes a long chain slow there. */
static int trip_finish(void *arg, int r, int k)
{
    trip_t *t = arg;
    const tt_job_t *job = &t->j->job;
    const tt_sched_t *s = &job->s[r];
    double start = t->j->round_start[r][k], end = start + t->j->round_cost[r][k];
    double wake = t->m->crowding > 1 ? t->m->wake_s * t->m->crowding : 0;
    for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
        const tt_step_t *st = &s->steps[i];
        if (st->peer < 0)
            continue;
        int q = st->peer, qstep = job->match[r][i];
        double peer_start = t->j->round_start[q][job->round[q][qstep]];
        size_t bytes = (st->kind == TT_STEP_SEND ? st->src.count : st->dst.count) * t->elem;
        const tt_link_cost_t *c = &t->m->link[tt_cost_link(t->m, job->args[r].hosts, r, q)];
        double ready = peer_start <= start        ? start
                       : st->kind == TT_STEP_SEND ? peer_start
                                                  : peer_start + wake;
        double arrive = ready + c->alpha + (double)bytes / t->nslices * c->beta;
        if (arrive > end)
            end = arrive;
    }
    t->j->round_start[r][k + 1] = end;
    return 0;
}

/* One slice through the whole job, each transfer waiting for both its
 * ends. Returns the last rank's finish time, or -1 on a deadlock. */
static double one_slice_trip(job_t *j, const tt_cost_model_t *m, size_t elem, int nslices)
{
    for (int r = 0; r < j->job.nranks; r++) {
        j->round_start[r][0] = 0;
        for (int k = 1; k <= j->job.s[r].nrounds; k++)
            j->round_start[r][k] = -1;
    }
    trip_t t = {j, m, elem, nslices};
    tt_job_visit_t v = {.finish = trip_finish, .arg = &t};
    tt_job_walk_t w = {.rendezvous = 1};
    if (tt_job_walk(&j->job, &v, &w) != 0)
        return -1;
    double finish = 0;
    for (int r = 0; r < j->job.nranks; r++)
        if (j->round_start[r][j->job.s[r].nrounds] > finish)
            finish = j->round_start[r][j->job.s[r].nrounds];
    return finish;
}

#define TT_COST_EXACT_RANKS 64
/* Beyond TT_COST_EXACT_RANKS, the walk's budget: this many steps per rank and log2 of the ranks. */
#define TT_COST_WALK_STEPS_PER_RANK_LOG 4

/* Fills each rank's per-slice round costs; returns W: the busiest rank's
 * sending or receiving time over all slices, or the busiest host's
 * traffic to other hosts through its shared links, whichever is longer. */
static double job_costs(job_t *j, const tt_cost_model_t *m, size_t elem, int nslices)
{
    const tt_job_t *job = &j->job;
    const tt_hosts_t *hosts = job->args[0].hosts;
    int nhosts = hosts ? hosts->nhosts : 1;
    double work = 0, *host_out = calloc((size_t)nhosts, sizeof(double)),
           *host_in = calloc((size_t)nhosts, sizeof(double));
    for (int r = 0; r < job->nranks; r++) {
        double send = 0, recv = 0;
        for (int k = 0; k < job->s[r].nrounds; k++) {
            tt_round_cost_t rc = tt_cost_round(m, &job->args[r], &job->s[r], k, elem, nslices);
            j->round_cost[r][k] = rc.seconds;
            send += rc.send_seconds;
            recv += rc.recv_seconds;
            if (hosts && host_out && host_in) {
                host_out[hosts->host_of[r]] += (double)rc.sent_off_host;
                host_in[hosts->host_of[r]] += (double)rc.received_off_host;
            }
        }
        double busy = (send > recv ? send : recv) * nslices;
        if (busy > work)
            work = busy;
    }
    for (int h = 0; host_out && host_in && h < nhosts; h++) {
        double bytes = host_out[h] > host_in[h] ? host_out[h] : host_in[h];
        double busy = bytes * m->link[m->inter].beta / m->inter_links;
        if (busy > work)
            work = busy;
    }
    free(host_out);
    free(host_in);
    return work;
}

int tt_cost_round_ends(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                       size_t elem, int nslices, double *ends, int nrounds)
{
    job_t j = {0};
    int rc = -1;
    if (args->nranks <= TT_COST_EXACT_RANKS && job_build(&j, algo, args) == 0) {
        nslices = tt_sched_slices(&j.job.s[0], nslices);
        job_costs(&j, m, elem, nslices);
        if (one_slice_trip(&j, m, elem, nslices) >= 0 && j.job.s[args->rank].nrounds == nrounds) {
            for (int k = 0; k < nrounds; k++)
                ends[k] = j.round_start[args->rank][k + 1];
            rc = 0;
        }
    }
    job_free(&j);
    return rc;
}

int tt_cost_predict_walk(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out)
{
    job_t j = {0};
    int rc = job_build(&j, algo, args); /* the schedules once, priced per slice count */
    for (int i = 0; i < count && rc == 0; i++) {
        int ns = tt_sched_slices(&j.job.s[0], nslices[i]);
        double work = job_costs(&j, m, elem, ns);
        double trip = one_slice_trip(&j, m, elem, ns);
        out[i] = trip < 0 ? -1 : trip + work * (1.0 - 1.0 / ns);
        rc = trip < 0 ? -1 : 0;
    }
    job_free(&j);
    return rc;
}

int tt_cost_walk_affordable(double steps, int p)
{
    int lg = 1;
    while ((1 << lg) < p)
        lg++;
    return steps <= TT_COST_WALK_STEPS_PER_RANK_LOG * (double)p * lg;
}

int tt_cost_predict_each(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out)
{
    if (args->nranks <= TT_COST_EXACT_RANKS)
        return tt_cost_predict_walk(m, algo, args, elem, nslices, count, out);
    /* A sample stands for the job where its ranks run alike: each round
     * then costs what its costliest sampled rank's does, as in the walk.
     * Where they do not (a tree, a chain), the walk decides. */
    int alike;
    double steps;
    if (tt_cost_sample_price(m, algo, args, elem, nslices, count, out, &alike, &steps))
        return -1;
    if (!alike && tt_cost_walk_affordable(steps, args->nranks))
        return tt_cost_predict_walk(m, algo, args, elem, nslices, count, out);
    return 0;
}

double tt_cost_predict(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                       size_t elem, int nslices)
{
    double t;
    return tt_cost_predict_each(m, algo, args, elem, &nslices, 1, &t) ? -1 : t;
}
