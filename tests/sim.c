/* SPDX-License-Identifier: MIT */
/* The schedule simulator (see sim.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"
#include "sim.h"

typedef struct msg {
    struct msg *next;
    size_t len;
    char data[];
} msg_t;

typedef struct {
    int slice, round; /* slice -1: done */
    int started;      /* local steps and sends of this round done */
    int recvs_done;   /* receives of this round completed so far (in order) */
} lane_t;

typedef struct {
    tt_sched_t s;
    lane_t *lanes;
} rank_t;

static char *region_ptr(const tt_sim_t *sim, int rank, tt_region_t r, int slice, size_t *bytes)
{
    char *bufs[3] = {sim->in[rank], sim->out[rank], sim->scratch[rank]};
    size_t off = r.off + tt_block_off(r.count, sim->nslices, slice);
    *bytes = tt_block_count(r.count, sim->nslices, slice) * sim->elem;
    return bufs[r.buf] + off * sim->elem;
}

static msg_t **queue(msg_t **queues, const tt_sim_t *sim, int from, int to, int lane)
{
    return &queues[((size_t)from * (size_t)sim->nranks + (size_t)to) * (size_t)sim->nlanes + (size_t)lane];
}

/* Tries to move one lane on; returns 1 if it did anything. */
static int step_lane(tt_sim_t *sim, rank_t *ranks, msg_t **queues, int r, int l, tt_reduce_fn reduce,
                     int *err)
{
    rank_t *rk = &ranks[r];
    lane_t *lane = &rk->lanes[l];
    if (lane->slice < 0)
        return 0;
    int n;
    const tt_step_t *steps = tt_sched_round_steps(&rk->s, lane->round, &n);
    int moved = 0;
    if (!lane->started) {
        for (int i = 0; i < n; i++) {
            const tt_step_t *st = &steps[i];
            size_t b1, b2;
            if (st->kind == TT_STEP_COPY || st->kind == TT_STEP_REDUCE) {
                char *dst = region_ptr(sim, r, st->dst, lane->slice, &b1);
                char *src = region_ptr(sim, r, st->src, lane->slice, &b2);
                if (st->kind == TT_STEP_COPY)
                    memmove(dst, src, b1);
                else
                    reduce(dst, dst, src, b1 / sim->elem);
            } else if (st->kind == TT_STEP_SEND) {
                char *src = region_ptr(sim, r, st->src, lane->slice, &b1);
                msg_t *m = malloc(sizeof *m + b1 + 1);
                m->next = NULL;
                m->len = b1;
                memcpy(m->data, src, b1);
                msg_t **q = queue(queues, sim, r, st->peer, l);
                while (*q)
                    q = &(*q)->next;
                *q = m;
            }
        }
        lane->started = 1;
        lane->recvs_done = 0;
        moved = 1;
    }
    /* Receives complete in step order, each taking the head of its queue. */
    int seen = 0;
    for (int i = 0; i < n; i++) {
        const tt_step_t *st = &steps[i];
        if (st->kind != TT_STEP_RECV && st->kind != TT_STEP_RECV_REDUCE)
            continue;
        if (seen++ < lane->recvs_done)
            continue;
        msg_t **q = queue(queues, sim, st->peer, r, l);
        if (!*q)
            return moved;
        msg_t *m = *q;
        size_t bytes, b2;
        char *dst = region_ptr(sim, r, st->dst, lane->slice, &bytes);
        if (m->len != bytes) {
            snprintf(sim->error, sizeof sim->error,
                     "rank %d lane %d slice %d round %d: rank %d sent %zu bytes, %zu expected", r, l,
                     lane->slice, lane->round, st->peer, m->len, bytes);
            *err = 1;
            return 0;
        }
        if (st->kind == TT_STEP_RECV)
            memcpy(dst, m->data, bytes);
        else
            reduce(dst, region_ptr(sim, r, st->src, lane->slice, &b2), m->data, bytes / sim->elem);
        *q = m->next;
        free(m);
        lane->recvs_done++;
        moved = 1;
    }
    /* Round complete. */
    lane->started = 0;
    if (++lane->round >= rk->s.nrounds) {
        lane->round = 0;
        lane->slice += sim->nlanes;
        if (lane->slice >= sim->nslices)
            lane->slice = -1;
    }
    return 1;
}

int tt_sim_run(tt_sim_t *sim, const tt_algorithm_t *algo, tt_coll_args_t args)
{
    int p = sim->nranks, rc = 0;
    rank_t *ranks = calloc((size_t)p, sizeof *ranks);
    msg_t **queues = calloc((size_t)p * (size_t)p * (size_t)sim->nlanes, sizeof *queues);
    sim->scratch = calloc((size_t)p, sizeof(char *));
    tt_reduce_fn reduce = tt_reduce_get(sim->dtype, sim->op == TUTTI_AVG ? TUTTI_SUM : sim->op);
    sim->error[0] = '\0';
    for (int r = 0; r < p; r++) {
        args.rank = r;
        tt_sched_init(&ranks[r].s);
        if (algo->build[args.coll](&args, &ranks[r].s)) {
            snprintf(sim->error, sizeof sim->error, "rank %d: builder failed", r);
            rc = -1;
            goto out;
        }
        sim->scratch[r] = calloc(ranks[r].s.scratch_count + 1, sim->elem);
        ranks[r].lanes = calloc((size_t)sim->nlanes, sizeof(lane_t));
        for (int l = 0; l < sim->nlanes; l++)
            ranks[r].lanes[l].slice = ranks[r].s.nrounds == 0 || l >= sim->nslices ? -1 : l;
    }
    for (;;) {
        int active = 0, moved = 0, err = 0;
        /* Visit (rank, lane) pairs from a random start so interleavings vary. */
        int total = p * sim->nlanes, start = (int)(rand_r(&sim->seed) % (unsigned)total);
        for (int k = 0; k < total && !err; k++) {
            int idx = (start + k) % total, r = idx / sim->nlanes, l = idx % sim->nlanes;
            if (ranks[r].lanes[l].slice >= 0)
                active++;
            moved |= step_lane(sim, ranks, queues, r, l, reduce, &err);
        }
        if (err) {
            rc = -1;
            break;
        }
        if (!active)
            break;
        if (!moved) {
            snprintf(sim->error, sizeof sim->error, "deadlock: %d lanes wait for messages that never come",
                     active);
            rc = -1;
            break;
        }
    }
    for (size_t i = 0; rc == 0 && i < (size_t)p * (size_t)p * (size_t)sim->nlanes; i++)
        if (queues[i]) {
            snprintf(sim->error, sizeof sim->error, "a message was sent but never received");
            rc = -1;
        }
out:
    for (size_t i = 0; i < (size_t)p * (size_t)p * (size_t)sim->nlanes; i++)
        while (queues[i]) {
            msg_t *m = queues[i];
            queues[i] = m->next;
            free(m);
        }
    for (int r = 0; r < p; r++) {
        tt_sched_free(&ranks[r].s);
        free(ranks[r].lanes);
        free(sim->scratch[r]);
    }
    free(sim->scratch);
    free(queues);
    free(ranks);
    return rc;
}
