/* SPDX-License-Identifier: MIT */
/*
 * One process of a chaos schedule (chaos.c drives them): it joins, runs
 * steps of collectives whose results depend on who the members are, a
 * revocation or a grow, and recovers from every failure by revoke and
 * shrink, recording each communicator it holds in the shared state.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/stress/chaos.h"

/* One process of a schedule: its communicator and what it knows of it. */
typedef struct {
    int w; /* which process */
    tutti_comm_t comm;
    uint64_t id; /* the communicator's name (tutti_comm_id) */
    int at;      /* its record, -1: none */
    int step, n;
    int16_t order[MAXW]; /* the process at each rank */
} proc_t;

static void finish(const proc_t *m, int state, const char *why)
{
    C->state[m->w] = state;
    snprintf(C->why[m->w], sizeof C->why[m->w], "%s", why ? why : "");
    _exit(state);
}

/* A communicator this process now holds, made from the one named parent
 * (0: none): recorded at once under the name every member reads alike, so
 * that it counts even when no exchange on it ever succeeds (its members
 * recover from it at once, and their next records name it as parent). */
static void made(proc_t *m, uint64_t parent)
{
    int r, p;
    tutti_comm_rank(m->comm, &r);
    tutti_comm_size(m->comm, &p);
    tutti_comm_id(m->comm, &m->id);
    m->at = __atomic_fetch_add(&C->nrec, 1, __ATOMIC_SEQ_CST);
    if (m->at >= MAXREC) {
        m->at = -1;
        return;
    }
    rec_t *a = &C->rec[m->at];
    *a = (rec_t){.id = m->id, .parent = parent, .world = m->w, .rank = r, .size = p, .step = m->step};
    memset(a->order, 0xff, sizeof a->order);
    a->order[r] = (int16_t)m->w;
}

/* After a new communicator, made from the one named parent: its members
 * gather who they are, how far they got and where they came from, and
 * complete their records; the next step is after the furthest. A member
 * that came from elsewhere than the others is a split of the job: said,
 * and the process fails. */
static tutti_status_t sync_up(proc_t *m, uint64_t parent)
{
    int p;
    tutti_comm_size(m->comm, &p);
    int64_t mine[3] = {m->w, m->step, (int64_t)parent}, all[3 * MAXW];
    tutti_status_t st = tutti_allgather(mine, all, 3, TUTTI_INT64, m->comm, NULL);
    if (st)
        return st;
    int next = m->step;
    for (int q = 0; q < p; q++) {
        m->order[q] = (int16_t)all[3 * q];
        next = all[3 * q + 1] > next ? (int)all[3 * q + 1] : next;
        if (all[3 * q + 2] && parent && (uint64_t)all[3 * q + 2] != parent)
            finish(m, WRONG, "members of one communicator came from different ones");
    }
    m->n = p;
    m->step = next + 1;
    if (m->at >= 0) {
        memcpy(C->rec[m->at].order, m->order, sizeof m->order);
        C->rec[m->at].step = m->step;
        C->rec[m->at].synced = 1;
    }
    return TUTTI_SUCCESS;
}

/* comm is replaced by next, a new communicator made from it. */
static tutti_status_t move_to(proc_t *m, tutti_comm_t next)
{
    uint64_t parent = m->id;
    tutti_comm_abort(m->comm);
    m->comm = next;
    made(m, parent);
    return sync_up(m, parent);
}

/* One step's collectives; every result depends on the members and their
 * order. 0 right, else the failed call's status (*wrong: a wrong result). */
static tutti_status_t calls(const proc_t *m, int *wrong)
{
    int r, n = m->n, step = m->step;
    const int16_t *order = m->order;
    tutti_comm_rank(m->comm, &r);
    size_t count = 1 + (size_t)(mix((uint64_t)step * 31 + (uint64_t)n) % 30000), small = 1 + count % 200;
    int64_t *a = malloc(count * MAXW * 8), *b = malloc(count * MAXW * 8);
    tutti_status_t st = TUTTI_SUCCESS;
    for (size_t i = 0; i < count; i++)
        a[i] = order[r] * 7 + step + (int64_t)i;
    if (!(st = tutti_allreduce(a, b, count, TUTTI_INT64, TUTTI_SUM, m->comm, NULL))) {
        int64_t base = 0;
        for (int q = 0; q < n; q++)
            base += order[q] * 7;
        for (size_t i = 0; i < count; i++)
            *wrong |= b[i] != base + (int64_t)n * (step + (int64_t)i);
    }
    int root = step % n;
    for (size_t i = 0; !st && i < small; i++)
        a[i] = order[r] * 1000 + (int64_t)i;
    if (!st && !(st = tutti_broadcast(a, b, small, TUTTI_INT64, root, m->comm, NULL)))
        for (size_t i = 0; i < small; i++)
            *wrong |= b[i] != order[root] * 1000 + (int64_t)i;
    for (int q = 0; !st && q < n; q++)
        for (size_t i = 0; i < small; i++)
            a[(size_t)q * small + i] = order[r] * 100 + q;
    if (!st && !(st = tutti_alltoall(a, b, small, TUTTI_INT64, m->comm, NULL)))
        for (int q = 0; q < n; q++)
            for (size_t i = 0; i < small; i++)
                *wrong |= b[(size_t)q * small + i] != order[q] * 100 + r;
    free(a);
    free(b);
    return st;
}

/* A failure: revoke, then shrink to the ranks that remain (a few tries). */
static void recover(proc_t *m)
{
    tutti_comm_revoke(m->comm);
    for (int tries = 0; tries < 4; tries++) {
        tutti_comm_t next = NULL;
        tutti_status_t st = tutti_comm_shrink(m->comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
        if (st == TUTTI_ERR_REVOKED)
            finish(m, EXCLUDED, tutti_comm_last_error(m->comm));
        if (st)
            continue;
        if (move_to(m, next) == TUTTI_SUCCESS)
            return;
        tutti_comm_revoke(m->comm); /* it failed again at once: shrink this one */
    }
    finish(m, GAVE_UP, tutti_comm_last_error(m->comm));
}

/* Grows the communicator by one newcomer the driver starts. */
static tutti_status_t grow(proc_t *m)
{
    int r;
    tutti_comm_rank(m->comm, &r);
    tutti_unique_id_t uid;
    if (r == 0) {
        if (tutti_get_unique_id(&uid))
            return TUTTI_ERR_SYSTEM;
        C->grow_id = uid;
        C->grow_size = m->n + 1;
        __atomic_add_fetch(&C->grow_seq, 1, __ATOMIC_SEQ_CST);
    }
    tutti_comm_t big = NULL;
    tutti_status_t st = tutti_comm_grow(m->comm, m->n + 1, r == 0 ? &uid : NULL, &big);
    return st ? st : move_to(m, big);
}

/* Steps until the schedule ends, recovering from every failure. */
static void run(proc_t *m)
{
    made(m, 0);
    if (sync_up(m, 0))
        recover(m);
    while (m->step < STEPS) {
        C->step_now[m->w] = m->step;
        int busy = __atomic_exchange_n(&C->slow_ms[m->w], 0, __ATOMIC_SEQ_CST);
        for (int64_t until = now_ms() + busy; now_ms() < until;) {
        }
        int wrong = 0, r;
        tutti_comm_rank(m->comm, &r);
        uint64_t plan = mix(C->seed * 131 + (uint64_t)m->step);
        tutti_status_t st;
        if (plan % 7 == 0) { /* a rank revokes: the calls fail on every rank */
            if (r == (int)(plan / 7 % (uint64_t)m->n))
                tutti_comm_revoke(m->comm);
            st = calls(m, &wrong);
        } else if (plan % 7 == 1 && m->n < 8 && C->nworld < MAXW) {
            if ((st = grow(m)) == TUTTI_SUCCESS)
                continue; /* sync_up moved on to the next step */
        } else {
            st = calls(m, &wrong);
        }
        if (wrong)
            finish(m, WRONG, "a collective gave a wrong result");
        if (st) {
            recover(m);
            continue;
        }
        m->step++;
    }
    C->step_now[m->w] = STEPS;
    char last[32];
    snprintf(last, sizeof last, "%016llx", (unsigned long long)m->id);
    tutti_comm_destroy(m->comm);
    finish(m, DONE, last);
}

static tutti_comm_params_t params_of(int w)
{
    tutti_comm_params_t p = {.field_mask = C->nodes ? TUTTI_PARAM_NODE_ID : 0};
    p.node_id = C->nodes ? w / C->nodes : 0;
    return p;
}

pid_t chaos_start(int w, int nranks, int rank, const tutti_unique_id_t *uid, int step)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    proc_t m = {.w = w, .step = step};
    tutti_comm_params_t params = params_of(w);
    C->state[w] = RUNNING;
    C->step_now[w] = step;
    if (tutti_comm_init(&m.comm, nranks, rank, uid, &params))
        finish(&m, NOT_JOINED, tutti_comm_last_error(NULL));
    run(&m);
    return 0;
}
