/* SPDX-License-Identifier: MIT */
/* Every rank's schedule, sends matched to receives, and the walk (see job.h). */
#include <stdlib.h>

#include "sched/job.h"

void tt_job_free(tt_job_t *j)
{
    for (int r = 0; r < j->nranks; r++) {
        if (j->s)
            tt_sched_free(&j->s[r]);
        if (j->match)
            free(j->match[r]);
        if (j->round)
            free(j->round[r]);
    }
    free(j->s);
    free(j->args);
    free(j->match);
    free(j->round);
    *j = (tt_job_t){0};
}

static int is_recv(const tt_step_t *st)
{
    return st->kind == TT_STEP_RECV || st->kind == TT_STEP_RECV_REDUCE;
}

/* A receive step: who sends to it, and its index in the receiver's steps. */
typedef struct {
    int from, step;
} recv_key_t;

static int by_sender_then_step(const void *x, const void *y)
{
    const recv_key_t *a = x, *b = y;
    return a->from != b->from ? (a->from > b->from) - (a->from < b->from)
                              : (a->step > b->step) - (a->step < b->step);
}

/* Rank b's receives sorted by sender, in step order within one sender;
 * *n gets their number. NULL when memory runs out. */
static recv_key_t *sorted_receives(const tt_job_t *j, int b, int *n)
{
    const tt_sched_t *s = &j->s[b];
    recv_key_t *keys = malloc(((size_t)s->nsteps + 1) * sizeof *keys);
    *n = 0;
    for (int x = 0; keys && x < s->nsteps; x++)
        if (is_recv(&s->steps[x]))
            keys[(*n)++] = (recv_key_t){s->steps[x].peer, x};
    if (keys)
        qsort(keys, (size_t)*n, sizeof *keys, by_sender_then_step);
    return keys;
}

/* The first of keys[0 .. n) from rank a (n when there is none). */
static int first_from(const recv_key_t *keys, int n, int a)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (keys[mid].from < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The k-th send from a to b meets the k-th receive at b from a. Every
 * rank's receives are sorted by sender once, and each send finds its
 * receive by a binary search, so matching costs O(S log S) for S steps in
 * all, whatever the number of ranks each one talks to. */
static int match_all(tt_job_t *j)
{
    int p = j->nranks, rc = 0;
    recv_key_t **keys = calloc((size_t)p, sizeof *keys);
    int *nkeys = calloc((size_t)p, sizeof *nkeys), *sent = calloc((size_t)p, sizeof *sent);
    for (int b = 0; b < p && keys && nkeys && sent && rc == 0; b++)
        rc = (keys[b] = sorted_receives(j, b, &nkeys[b])) ? 0 : -1;
    for (int a = 0; a < p && keys && nkeys && sent && rc == 0; a++) {
        const tt_sched_t *s = &j->s[a];
        for (int i = 0; i < s->nsteps; i++) { /* sent[b]: a's sends to b so far */
            int b = s->steps[i].peer;
            if (s->steps[i].kind != TT_STEP_SEND || b < 0 || b >= p)
                continue;
            int at = first_from(keys[b], nkeys[b], a) + sent[b]++;
            if (at < nkeys[b] && keys[b][at].from == a) {
                j->match[a][i] = keys[b][at].step;
                j->match[b][keys[b][at].step] = i;
            }
        }
        for (int i = 0; i < s->nsteps; i++)
            if (s->steps[i].kind == TT_STEP_SEND && s->steps[i].peer >= 0 && s->steps[i].peer < p)
                sent[s->steps[i].peer] = 0;
    }
    for (int b = 0; keys && b < p; b++)
        free(keys[b]);
    if (!keys || !nkeys || !sent)
        rc = -1;
    free(keys);
    free(nkeys);
    free(sent);
    return rc;
}

tutti_status_t tt_job_build(tt_job_t *j, const tt_algorithm_t *algo, const tt_coll_args_t *args)
{
    int p = args->nranks;
    *j = (tt_job_t){.nranks = p};
    j->s = calloc((size_t)p, sizeof *j->s);
    j->args = calloc((size_t)p, sizeof *j->args);
    j->match = calloc((size_t)p, sizeof *j->match);
    j->round = calloc((size_t)p, sizeof *j->round);
    tutti_status_t st = j->s && j->args && j->match && j->round ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    for (int r = 0; r < p && !st; r++) {
        j->args[r] = *args;
        j->args[r].rank = r;
        st = tt_sched_build(algo, &j->args[r], &j->s[r]);
        if (st)
            break;
        const tt_sched_t *s = &j->s[r];
        j->match[r] = malloc(((size_t)s->nsteps + 1) * sizeof(int));
        j->round[r] = malloc(((size_t)s->nsteps + 1) * sizeof(int));
        if (!j->match[r] || !j->round[r]) {
            st = TUTTI_ERR_NO_MEMORY;
            break;
        }
        for (int k = 0; k < s->nrounds; k++)
            for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
                j->round[r][i] = k;
                j->match[r][i] = -1;
            }
    }
    if (!st && match_all(j))
        st = TUTTI_ERR_NO_MEMORY;
    if (st)
        tt_job_free(j);
    return st;
}

typedef struct {
    int *round;   /* [rank]: the round at hand (nrounds: finished) */
    int *started; /* [rank]: whether it started */
} walk_state_t;

/* Whether the round at hand of rank r can finish. */
static int round_ready(const tt_job_t *j, const walk_state_t *ws, int r, int rendezvous)
{
    const tt_sched_t *s = &j->s[r];
    int k = ws->round[r];
    for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
        const tt_step_t *st = &s->steps[i];
        if (st->peer < 0 || (st->kind == TT_STEP_SEND && !rendezvous))
            continue;
        int q = st->peer, qs = j->match[r][i];
        if (qs < 0)
            return 0; /* nothing will ever meet it */
        int qr = j->round[q][qs];
        if (ws->round[q] < qr || (ws->round[q] == qr && !ws->started[q]))
            return 0;
    }
    return 1;
}

/* Moves rank r as far as it can go; 1 if it moved, -1 if stopped. */
static int advance(const tt_job_t *j, const tt_job_visit_t *v, const tt_job_walk_t *w, walk_state_t *ws,
                   int r)
{
    int moved = 0;
    while (ws->round[r] < j->s[r].nrounds) {
        if (!ws->started[r]) {
            if (v->start && v->start(v->arg, r, ws->round[r]))
                return -1;
            ws->started[r] = 1;
            moved = 1;
        }
        if (!round_ready(j, ws, r, w->rendezvous))
            break;
        if (v->finish && v->finish(v->arg, r, ws->round[r]))
            return -1;
        ws->round[r]++;
        ws->started[r] = 0;
        moved = 1;
    }
    return moved;
}

int tt_job_walk(const tt_job_t *j, const tt_job_visit_t *v, tt_job_walk_t *w)
{
    int p = j->nranks, rc = 0;
    walk_state_t ws = {calloc((size_t)p, sizeof(int)), calloc((size_t)p, sizeof(int))};
    w->stuck = 0;
    if (!ws.round || !ws.started) {
        free(ws.round);
        free(ws.started);
        return -1;
    }
    for (int moved = 1; moved && rc == 0;) {
        moved = 0;
        int first = w->seed ? (int)(rand_r(w->seed) % (unsigned)p) : 0;
        for (int i = 0; i < p && rc == 0; i++) {
            int m = advance(j, v, w, &ws, (first + i) % p);
            if (m < 0)
                rc = -1;
            moved |= m > 0;
        }
    }
    for (int r = 0; r < p && rc == 0; r++)
        w->stuck += ws.round[r] < j->s[r].nrounds;
    if (rc == 0 && w->stuck)
        rc = 1;
    free(ws.round);
    free(ws.started);
    return rc;
}
