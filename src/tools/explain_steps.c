/* SPDX-License-Identifier: MIT */
/* Every rank's rounds on the cost model's clock, grouped into global steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/job.h"
#include "tools/explain_steps.h"

static int by_key(const void *a, const void *b)
{
    const tt_step_slot_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank != y->rank ? x->rank - y->rank : x->round - y->round;
}

static int by_step(const void *a, const void *b)
{
    const tt_step_slot_t *x = a, *y = b;
    if (x->step != y->step)
        return x->step - y->step;
    return x->rank != y->rank ? x->rank - y->rank : x->round - y->round;
}

/* Each rank's round ends (one slice) from the model, or the round index where it cannot tell. */
static double **round_times(const tt_job_t *job, const tt_cost_model_t *m, const tt_algorithm_t *algo,
                            const tt_coll_args_t *args, size_t elem, int nslices, int *timed)
{
    int p = args->nranks;
    double **end = calloc((size_t)p, sizeof *end);
    *timed = 1;
    for (int r = 0; end && r < p; r++) {
        tt_coll_args_t a = *args;
        a.rank = r;
        int n = job->s[r].nrounds;
        if (!(end[r] = calloc((size_t)n + 1, sizeof(double))))
            return end;
        if (*timed && tt_cost_round_ends(m, algo, &a, elem, nslices, end[r], n))
            *timed = 0;
    }
    for (int r = 0; end && !*timed && r < p; r++)
        for (int k = 0; end[r] && k < job->s[r].nrounds; k++)
            end[r][k] = k + 1;
    return end;
}

/* Each round's key: when its messages start, both ends being there. */
static void keys(const tt_job_t *job, double **end, tt_step_slot_t *slots, int *n)
{
    *n = 0;
    for (int r = 0; r < job->nranks; r++) {
        const tt_sched_t *s = &job->s[r];
        for (int k = 0; k < s->nrounds; k++) {
            if (s->round_first[k + 1] == s->round_first[k])
                continue; /* idle */
            tt_step_slot_t sl = {.rank = r, .round = k, .start = k ? end[r][k - 1] : 0, .end = end[r][k]};
            sl.key = sl.start;
            for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
                int q = s->steps[i].peer, qi = job->match[r][i];
                if (q < 0)
                    continue;
                sl.messages++;
                if (qi >= 0) {
                    int kq = job->round[q][qi];
                    double qstart = kq ? end[q][kq - 1] : 0;
                    sl.key = qstart > sl.key ? qstart : sl.key;
                }
            }
            slots[(*n)++] = sl;
        }
    }
}

/* Local-only rounds take the key of the rank's next round with messages, else its last one's. */
static void attach_local(tt_step_slot_t *slots, int n)
{
    for (int i = 0; i < n; i++) {
        if (slots[i].messages)
            continue;
        int next = -1, prev = -1;
        for (int j = 0; j < n; j++) {
            if (slots[j].rank != slots[i].rank || !slots[j].messages)
                continue;
            if (slots[j].round > slots[i].round && (next < 0 || slots[j].round < slots[next].round))
                next = j;
            if (slots[j].round < slots[i].round && (prev < 0 || slots[j].round > slots[prev].round))
                prev = j;
        }
        if (next >= 0 || prev >= 0)
            slots[i].key = slots[next >= 0 ? next : prev].key;
    }
}

static int find(int *parent, int i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* The slot of rank r's round k, or -1. */
static int slot_of(const tt_step_slot_t *slots, int n, int r, int k)
{
    for (int i = 0; i < n; i++)
        if (slots[i].rank == r && slots[i].round == k)
            return i;
    return -1;
}

/* Rounds joined by a message share a step: each component of that relation
 * takes its members' latest key, so both ends of every message meet. */
static int join_messages(const tt_job_t *job, tt_step_slot_t *slots, int n)
{
    int *parent = malloc(((size_t)n + 1) * sizeof *parent);
    double *key = malloc(((size_t)n + 1) * sizeof *key);
    if (!parent || !key) {
        free(parent);
        free(key);
        return -1;
    }
    for (int i = 0; i < n; i++)
        parent[i] = i;
    for (int r = 0; r < job->nranks; r++)
        for (int s = 0; s < job->s[r].nsteps; s++) {
            int q = job->s[r].steps[s].peer, qs = job->match[r][s];
            if (q < 0 || qs < 0)
                continue;
            int a = slot_of(slots, n, r, job->round[r][s]), b = slot_of(slots, n, q, job->round[q][qs]);
            if (a >= 0 && b >= 0)
                parent[find(parent, a)] = find(parent, b);
        }
    for (int i = 0; i < n; i++)
        key[i] = -1;
    for (int i = 0; i < n; i++) {
        int root = find(parent, i);
        key[root] = slots[i].key > key[root] ? slots[i].key : key[root];
    }
    for (int i = 0; i < n; i++)
        slots[i].key = key[find(parent, i)];
    free(parent);
    free(key);
    return 0;
}

int tt_explain_steps(tt_steps_t *out, const tt_cost_model_t *m, const tt_algorithm_t *algo,
                     const tt_coll_args_t *args, size_t elem, int nslices)
{
    memset(out, 0, sizeof *out);
    tt_job_t job;
    if (tt_job_build(&job, algo, args) != TUTTI_SUCCESS)
        return -1;
    int total = 0, rc = -1;
    for (int r = 0; r < job.nranks; r++)
        total += job.s[r].nrounds;
    double **end = round_times(&job, m, algo, args, elem, nslices, &out->timed);
    out->slots = calloc((size_t)total + 1, sizeof *out->slots);
    out->step_time = calloc((size_t)total + 1, sizeof *out->step_time);
    if (end && out->slots && out->step_time) {
        keys(&job, end, out->slots, &out->nslots);
        if (join_messages(&job, out->slots, out->nslots))
            goto out;
        attach_local(out->slots, out->nslots);
        qsort(out->slots, (size_t)out->nslots, sizeof *out->slots, by_key);
        for (int i = 0; i < out->nslots; i++) {
            tt_step_slot_t *sl = &out->slots[i];
            /* one picosecond apart, or a whole round apart when untimed, is another step */
            if (i == 0 || sl->key > out->step_time[out->nsteps - 1] + 1e-12)
                out->step_time[out->nsteps++] = sl->key;
            sl->step = out->nsteps - 1;
        }
        for (int s = 0, i = 0; s < out->nsteps; s++) {
            int comm = 0;
            for (; i < out->nslots && out->slots[i].step == s; i++)
                comm |= out->slots[i].messages > 0;
            out->comm_steps += comm;
        }
        qsort(out->slots, (size_t)out->nslots, sizeof *out->slots, by_step);
        rc = 0;
    }
out:
    for (int r = 0; end && r < job.nranks; r++)
        free(end[r]);
    free(end);
    tt_job_free(&job);
    if (rc)
        tt_explain_steps_free(out);
    return rc;
}

void tt_explain_steps_free(tt_steps_t *s)
{
    free(s->slots);
    free(s->step_time);
    memset(s, 0, sizeof *s);
}
