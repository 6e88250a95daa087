/* SPDX-License-Identifier: MIT */
/* The cost model from a sample of the ranks' schedules (see cost_sample.h). */
#include <stdlib.h>
#include <string.h>

#include "tune/cost_sample.h"

/* Hosts whose ranks a sample holds: rank 0's, the root's, the last rank's and a middle one. */
#define SAMPLE_HOSTS 4

/* What a round costs apart from its links: the same on every rank when the
 * ranks run the same rounds against shifted peers. */
typedef struct {
    int sends, recvs, reduces, copies;
    size_t sent, received; /* elements */
} round_shape_t;

typedef struct {
    const tt_cost_model_t *m;
    size_t elem;
    const int *nslices;
    int count;
    double *per_round; /* [round * count + i]: the costliest sampled round, one slice of nslices[i] */
    int nrounds;
    double *work;         /* [i]: the busiest sampled rank's sending or receiving, every slice */
    round_shape_t *shape; /* the first sampled rank's rounds */
    int shape_rounds, alike, taken;
    int whole; /* the schedules run as one slice (tt_sched_slices) */
    double steps;
    int nhosts, host[SAMPLE_HOSTS], host_size[SAMPLE_HOSTS], host_seen[SAMPLE_HOSTS];
    double host_out[SAMPLE_HOSTS], host_in[SAMPLE_HOSTS]; /* bytes to and from other hosts */
} sample_t;

static round_shape_t round_shape(const tt_sched_t *s, int k)
{
    round_shape_t sh = {0};
    int n;
    const tt_step_t *st = tt_sched_round_steps(s, k, &n);
    for (int i = 0; i < n; i++) {
        sh.sends += st[i].kind == TT_STEP_SEND;
        sh.recvs += st[i].kind == TT_STEP_RECV || st[i].kind == TT_STEP_RECV_REDUCE;
        sh.reduces += st[i].kind == TT_STEP_RECV_REDUCE || st[i].kind == TT_STEP_REDUCE;
        sh.copies += st[i].kind == TT_STEP_COPY;
        sh.sent += st[i].kind == TT_STEP_SEND ? st[i].src.count : 0;
        sh.received += st[i].kind == TT_STEP_RECV || st[i].kind == TT_STEP_RECV_REDUCE ? st[i].dst.count : 0;
    }
    return sh;
}

static size_t apart(size_t a, size_t b)
{
    return a > b ? a - b : b - a;
}

/* Alike up to the element each step may carry more where the count does not divide evenly. */
static int shapes_alike(const round_shape_t *a, const round_shape_t *b)
{
    size_t slack = (size_t)(a->sends + a->recvs);
    return a->sends == b->sends && a->recvs == b->recvs && a->reduces == b->reduces &&
           a->copies == b->copies && apart(a->sent, b->sent) <= slack &&
           apart(a->received, b->received) <= slack;
}

/* Compares rank's rounds with the first sampled rank's, which it keeps. */
static int compare_shape(sample_t *sm, const tt_sched_t *s)
{
    if (!sm->shape) {
        sm->shape = malloc(((size_t)s->nrounds + 1) * sizeof *sm->shape);
        if (!sm->shape)
            return -1;
        for (int k = 0; k < s->nrounds; k++)
            sm->shape[k] = round_shape(s, k);
        sm->shape_rounds = s->nrounds;
        return 0;
    }
    if (s->nrounds != sm->shape_rounds)
        sm->alike = 0;
    for (int k = 0; k < s->nrounds && sm->alike; k++) {
        round_shape_t sh = round_shape(s, k);
        sm->alike = shapes_alike(&sh, &sm->shape[k]);
    }
    return 0;
}

static int grow_rounds(sample_t *sm, int nrounds)
{
    if (nrounds <= sm->nrounds)
        return 0;
    double *grown = realloc(sm->per_round, (size_t)nrounds * (size_t)sm->count * sizeof *grown);
    if (!grown)
        return -1;
    for (size_t x = (size_t)sm->nrounds * (size_t)sm->count; x < (size_t)nrounds * (size_t)sm->count; x++)
        grown[x] = 0;
    sm->per_round = grown;
    sm->nrounds = nrounds;
    return 0;
}

/* Builds rank a->rank's schedule and adds its rounds, work and host traffic to the sample. */
static int take_rank(sample_t *sm, const tt_algorithm_t *algo, const tt_coll_args_t *a)
{
    tt_sched_t s;
    if (tt_sched_build(algo, a, &s) != TUTTI_SUCCESS)
        return -1;
    int rc = compare_shape(sm, &s) || grow_rounds(sm, s.nrounds) ? -1 : 0;
    int h = 0;
    while (a->hosts && h < sm->nhosts && sm->host[h] != a->hosts->host_of[a->rank])
        h++;
    sm->whole = s.whole;
    for (int i = 0; i < sm->count && rc == 0; i++) {
        int ns = tt_sched_slices(&s, sm->nslices[i]);
        double send = 0, recv = 0;
        for (int k = 0; k < s.nrounds; k++) {
            tt_round_cost_t c = tt_cost_round(sm->m, a, &s, k, sm->elem, ns);
            double *worst = &sm->per_round[(size_t)k * (size_t)sm->count + (size_t)i];
            *worst = c.seconds > *worst ? c.seconds : *worst;
            send += c.send_seconds;
            recv += c.recv_seconds;
            if (i == 0 && h < sm->nhosts) {
                sm->host_out[h] += (double)c.sent_off_host;
                sm->host_in[h] += (double)c.received_off_host;
            }
        }
        double busy = (send > recv ? send : recv) * ns;
        sm->work[i] = busy > sm->work[i] ? busy : sm->work[i];
    }
    if (h < sm->nhosts)
        sm->host_seen[h]++;
    sm->steps += s.nsteps;
    sm->taken++;
    tt_sched_free(&s);
    return rc;
}

static int by_value(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* Adds up to TT_COST_SAMPLE_RANKS ranks of host h, spread evenly over it,
 * and records the host; returns the new number of ranks. */
static int add_host(sample_t *sm, const tt_coll_args_t *a, int h, int *ranks, int n)
{
    const tt_hosts_t *hosts = a->hosts;
    for (int i = 0; i < sm->nhosts; i++)
        if (sm->host[i] == h)
            return n;
    int size = 0;
    for (int r = 0; r < a->nranks; r++)
        size += hosts->host_of[r] == h;
    int take = size < TT_COST_SAMPLE_RANKS ? size : TT_COST_SAMPLE_RANKS;
    for (int r = 0, seen = 0, j = 0; r < a->nranks && j < take; r++)
        if (hosts->host_of[r] == h && seen++ == (int)((long long)j * size / take)) {
            ranks[n++] = r;
            j++;
        }
    sm->host[sm->nhosts] = h;
    sm->host_size[sm->nhosts++] = size;
    return n;
}

/* The sampled ranks, sorted, each once; *n gets their number. */
static int *sample_ranks(sample_t *sm, const tt_coll_args_t *a, int *n)
{
    int p = a->nranks, root = a->root >= 0 && a->root < p ? a->root : 0;
    int *ranks = malloc((3 + (1 + SAMPLE_HOSTS) * TT_COST_SAMPLE_RANKS) * sizeof *ranks);
    if (!ranks)
        return NULL;
    int k = 0;
    ranks[k++] = 0;
    ranks[k++] = root;
    ranks[k++] = p - 1;
    for (int i = 0; i < TT_COST_SAMPLE_RANKS && i < p; i++)
        ranks[k++] = (int)((long long)i * p / (p < TT_COST_SAMPLE_RANKS ? p : TT_COST_SAMPLE_RANKS));
    if (a->hosts && a->hosts->nhosts > 1) {
        const int *of = a->hosts->host_of;
        int hosts[SAMPLE_HOSTS] = {of[0], of[root], of[p - 1], a->hosts->nhosts / 2};
        for (int i = 0; i < SAMPLE_HOSTS; i++)
            k = add_host(sm, a, hosts[i], ranks, k);
    }
    qsort(ranks, (size_t)k, sizeof *ranks, by_value);
    *n = 0;
    for (int i = 0; i < k; i++)
        if (*n == 0 || ranks[*n - 1] != ranks[i])
            ranks[(*n)++] = ranks[i];
    return ranks;
}

/* The busiest sampled host's traffic to or from the others through its inter_links links. */
static double host_work(const sample_t *sm)
{
    double worst = 0;
    for (int h = 0; h < sm->nhosts; h++) {
        if (!sm->host_seen[h])
            continue;
        double bytes = sm->host_out[h] > sm->host_in[h] ? sm->host_out[h] : sm->host_in[h];
        bytes *= (double)sm->host_size[h] / sm->host_seen[h]; /* where the host was only sampled */
        double busy = bytes * sm->m->link[sm->m->inter].beta / sm->m->inter_links;
        worst = busy > worst ? busy : worst;
    }
    return worst;
}

int tt_cost_sample_price(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out, int *alike, double *steps)
{
    sample_t sm = {.m = m, .elem = elem, .nslices = nslices, .count = count, .alike = 1};
    int n = 0, *ranks = sample_ranks(&sm, args, &n);
    sm.work = calloc((size_t)count, sizeof *sm.work);
    int rc = ranks && sm.work ? 0 : -1;
    for (int i = 0; i < n && rc == 0; i++) {
        tt_coll_args_t a = *args;
        a.rank = ranks[i];
        rc = take_rank(&sm, algo, &a);
    }
    double hosts_busy = rc == 0 ? host_work(&sm) : 0;
    for (int i = 0; i < count && rc == 0; i++) {
        double trip = 0, work = sm.work[i] > hosts_busy ? sm.work[i] : hosts_busy;
        for (int k = 0; k < sm.nrounds; k++)
            trip += sm.per_round[(size_t)k * (size_t)count + (size_t)i];
        out[i] = trip + work * (1.0 - 1.0 / (sm.whole ? 1 : nslices[i]));
    }
    *alike = sm.alike;
    *steps = sm.taken ? sm.steps / sm.taken * args->nranks : 0;
    free(ranks);
    free(sm.work);
    free(sm.per_round);
    free(sm.shape);
    return rc;
}
