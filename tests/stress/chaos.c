/* SPDX-License-Identifier: MIT */
/*
 * Chaos: random schedules of faults on forked ranks that recover through
 * revoke, shrink and grow, checked for what recovery must never do. Each
 * schedule starts 4-8 processes (over shm, tcp, or simulated hosts), which
 * run steps of collectives whose results depend on who the members are,
 * a revocation or a grow by a newcomer the driver starts; the driver kills
 * ranks (SIGKILL), stops them a moment or past TUTTI_TIMEOUT (SIGSTOP, then
 * SIGCONT), makes one busy past it, or kills one and, while the others
 * recover, stops another (a moment or past TUTTI_TIMEOUT). Every member of
 * a new communicator records it under its name (tutti_comm_id) and the one
 * it came from as soon as it holds it, then, once its first all-gather on
 * it succeeds, who the members are; at the end the driver checks that all
 * who recorded one agree on its members and their order, that no
 * communicator had two children (a job split in two), that every result
 * was right, and that the ranks still running end on one line of
 * communicators (the same, or one a rank left behind when its last calls
 * completed).
 * usage: chaos [-n SCHEDULES] [-s SEED] [-k FAULT] [-v]
 *                                               every check, exit 0 when all held;
 *                                               -k: every fault of that kind (kill,
 *                                               stop, stop-long, busy, kill-stop)
 *        chaos -R [-p RANKS] [-n RUNS]          kill to the first right 16 MiB
 *                                               all-reduce after the shrink, in ms
 * Only the public API: it builds against any tutti.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

#define MAXW 16 /* processes of one schedule: the first ranks and newcomers */
#define MAXREC 512
#define STEPS 8
#define SLOW_MS 1500 /* TUTTI_TIMEOUT is 1 s */

enum { RUNNING, DONE, EXCLUDED, GAVE_UP, WRONG, NOT_JOINED, CRASHED, KILLED };
static const char *const state_name[] = {"running", "done",       "excluded", "gave up",
                                         "wrong",   "not joined", "crashed",  "killed"};
enum { F_KILL, F_STOP, F_STOP_LONG, F_SLOW, F_KILL_STOP, F_KINDS };
static const char *const fault_name[] = {"kill -9", "SIGSTOP 0.2 s", "SIGSTOP past the timeout", "busy 1.5 s",
                                         "kill -9, then another SIGSTOP while they recover"};

typedef struct {
    uint64_t id, parent; /* the communicator's name, and the one it came from (0: init) */
    int world, rank, size, step;
    int synced;          /* its members all-gathered who they are: order holds them all */
    int16_t order[MAXW]; /* the process at each rank (-1: not known) */
} rec_t;

typedef struct {
    uint64_t seed;
    int nodes;          /* ranks per simulated host; 0: one host */
    int nworld;         /* processes started */
    int step_now[MAXW]; /* each process's step */
    int slow_ms[MAXW];  /* driver -> process: be busy that long before the next step */
    int state[MAXW];
    char why[MAXW][200];
    int grow_seq, grow_served, grow_size; /* a grow asks the driver for a newcomer */
    tutti_unique_id_t grow_id;
    int nrec;
    rec_t rec[MAXREC];
} chaos_t;

static chaos_t *C;
static int verbose, only_kind = -1; /* -k: every fault of this kind */
static const char *const kind_opt[] = {"kill", "stop", "stop-long", "busy", "kill-stop"};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

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

/* A process of the schedule: rank w of nranks, or a newcomer to a grow. */
static pid_t start(int w, int nranks, int rank, const tutti_unique_id_t *uid, int step)
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

/* The driver's view of one schedule. */
typedef struct {
    pid_t pid[MAXW];
    int reaped[MAXW], killed[MAXW], stopped[MAXW];
    int64_t resume_at[MAXW];
    int nfaults, next_fault;
    struct {
        int kind, step;
    } fault[2];
    int64_t stop_at; /* F_KILL_STOP: when to stop another (0: none due) */
    int stop_ms;     /* ... and for how long */
    uint64_t rng;
} sched_t;

static int alive_running(const sched_t *s, int w)
{
    return !s->reaped[w] && !s->killed[w] && !s->stopped[w] && C->state[w] == RUNNING;
}

static int furthest(const sched_t *s)
{
    int f = 0;
    for (int w = 0; w < C->nworld; w++)
        if (!s->reaped[w] && !s->killed[w] && C->step_now[w] > f)
            f = C->step_now[w];
    return f;
}

/* A process running, drawn at random; -1 when fewer than two run (the
 * last one is left be). */
static int draw_live(sched_t *s)
{
    int live[MAXW], n = 0;
    for (int w = 0; w < C->nworld; w++)
        if (alive_running(s, w))
            live[n++] = w;
    return n < 2 ? -1 : live[(s->rng = mix(s->rng)) % (uint64_t)n];
}

static void stop(sched_t *s, int v, int ms)
{
    kill(s->pid[v], SIGSTOP);
    s->stopped[v] = 1;
    s->resume_at[v] = now_ms() + ms;
}

/* F_KILL_STOP's second half: another process stopped while the others
 * recover from the kill (they noticed it within a few ms, and revoke,
 * agree and set the successor up for tens). */
static void stop_later(sched_t *s)
{
    if (!s->stop_at || now_ms() < s->stop_at)
        return;
    s->stop_at = 0;
    int v = draw_live(s);
    if (verbose)
        printf(v < 0 ? "  no other process to stop\n" : "  SIGSTOP %d ms on process %d at step %d\n",
               s->stop_ms, v, v < 0 ? 0 : C->step_now[v]);
    if (v < 0)
        return;
    stop(s, v, s->stop_ms);
}

static void inject(sched_t *s)
{
    if (s->next_fault >= s->nfaults || furthest(s) < s->fault[s->next_fault].step || s->stop_at)
        return;
    int v = draw_live(s);
    if (v < 0)
        return;
    int kind = s->fault[s->next_fault++].kind;
    usleep((useconds_t)(s->rng >> 40) % 20000); /* somewhere inside the step's calls */
    if (verbose)
        printf("  %s on process %d at step %d\n", fault_name[kind], v, C->step_now[v]);
    if (kind == F_KILL || kind == F_KILL_STOP) {
        kill(s->pid[v], SIGKILL);
        s->killed[v] = 1;
        if (kind == F_KILL_STOP) { /* within 80 ms, for a moment or past the timeout */
            s->rng = mix(s->rng);
            s->stop_at = now_ms() + (int64_t)(s->rng % 80);
            s->stop_ms = s->rng >> 32 & 1 ? 200 : 2500;
        }
    } else if (kind == F_SLOW) {
        C->slow_ms[v] = SLOW_MS;
    } else {
        stop(s, v, kind == F_STOP ? 200 : 2500);
    }
}

/* Forks the newcomer a grow asked for. */
static void serve_grow(sched_t *s)
{
    int seq = __atomic_load_n(&C->grow_seq, __ATOMIC_SEQ_CST);
    if (seq == C->grow_served || C->nworld >= MAXW)
        return;
    C->grow_served = seq;
    int w = C->nworld++;
    tutti_unique_id_t uid = C->grow_id;
    s->pid[w] = start(w, C->grow_size, C->grow_size - 1, &uid, 0);
}

static void reap(sched_t *s)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int w = 0; w < C->nworld; w++)
            if (s->pid[w] == pid) {
                s->reaped[w] = 1;
                if (s->killed[w])
                    C->state[w] = KILLED;
                else if (!WIFEXITED(status) || WEXITSTATUS(status) != C->state[w]) {
                    snprintf(C->why[w], sizeof C->why[w], "ended with status %d", status);
                    C->state[w] = CRASHED;
                }
            }
}

/* Whether communicator id was made, by shrinks and grows, from `from`
 * (or is it). A rank may end in an ancestor of the others' last one: its
 * last calls completed before the others' failed, and they went on
 * without it, as a rank that finished may be left behind. */
static int descends(uint64_t id, uint64_t from)
{
    for (int hops = 0; id && hops <= MAXREC; hops++) {
        if (id == from)
            return 1;
        uint64_t up = 0;
        for (int i = 0; i < C->nrec && i < MAXREC && !up; i++)
            up = C->rec[i].id == id ? C->rec[i].parent : 0;
        id = up;
    }
    return 0;
}

/* Whether two processes' records of one communicator disagree: its size,
 * where it came from, their ranks, and its members where both know them. */
static int disagree(const rec_t *a, const rec_t *b)
{
    if (a->size != b->size || (a->parent && b->parent && a->parent != b->parent) || a->rank == b->rank)
        return 1;
    return a->synced && b->synced && memcmp(a->order, b->order, sizeof *a->order * (size_t)a->size) != 0;
}

/* The checks; the number of problems found (each said). */
static int verify(int sched)
{
    int bad = 0;
    for (int i = 0; i < C->nrec && i < MAXREC; i++) {
        const rec_t *a = &C->rec[i];
        if (a->order[a->rank] != a->world) {
            printf("schedule %d: process %d recorded itself at rank %d, where process %d is\n", sched,
                   a->world, a->rank, a->order[a->rank]);
            bad++;
        }
        for (int j = 0; j < i; j++) {
            const rec_t *b = &C->rec[j];
            if (a->id == b->id && disagree(a, b)) {
                printf("schedule %d: processes %d and %d disagree on communicator %016llx\n", sched, a->world,
                       b->world, (unsigned long long)a->id);
                bad++;
            }
            if (a->id != b->id && a->parent == b->parent && a->parent) {
                printf("schedule %d: communicator %016llx split in two: %016llx (process %d) and %016llx "
                       "(process %d)\n",
                       sched, (unsigned long long)a->parent, (unsigned long long)a->id, a->world,
                       (unsigned long long)b->id, b->world);
                bad++;
            }
        }
    }
    uint64_t last = 0;
    for (int w = 0; w < C->nworld; w++) {
        int st = C->state[w];
        if (st == WRONG || st == CRASHED || st == RUNNING) {
            printf("schedule %d: process %d %s: %s\n", sched, w, state_name[st], C->why[w]);
            bad++;
        }
        uint64_t mine = st == DONE ? strtoull(C->why[w], NULL, 16) : 0;
        if (mine && last && !descends(mine, last) && !descends(last, mine)) {
            printf("schedule %d: processes still running ended in communicators of different lines\n", sched);
            bad++;
        }
        last = mine && (!last || descends(mine, last)) ? mine : last;
    }
    return bad;
}

/* One schedule; returns the problems found, and counts the outcomes. */
static int schedule(int idx, uint64_t seed, int *outcomes)
{
    static const char *const how[] = {"shm,tcp", "tcp", "shm,tcp"};
    memset(C, 0, sizeof *C);
    sched_t s = {.rng = mix(seed)};
    C->seed = seed;
    int p = 4 + (int)(s.rng % 5), tp = (int)(mix(seed + 1) % 3);
    C->nodes = tp == 2 ? 2 : 0;
    setenv("TUTTI_TRANSPORTS", how[tp], 1);
    s.nfaults = 1 + (int)(mix(seed + 2) % 2);
    for (int f = 0; f < s.nfaults; f++) {
        uint64_t x = mix(seed + 3 + (uint64_t)f);
        s.fault[f].step = 1 + (int)(x % (STEPS - 3)); /* none in the last steps: the stopped resume in time */
        s.fault[f].kind = only_kind >= 0   ? only_kind
                          : x / 8 % 10 < 6 ? F_KILL
                                           : (int)(x / 80 % (F_KINDS - 1)) + 1;
    }
    if (s.nfaults == 2 && s.fault[1].step < s.fault[0].step) {
        int t = s.fault[0].step;
        s.fault[0].step = s.fault[1].step;
        s.fault[1].step = t;
    }
    if (verbose)
        printf("schedule %d: seed %llu, %d ranks over %s%s\n", idx, (unsigned long long)seed, p, how[tp],
               C->nodes ? " (hosts of 2)" : "");
    tutti_unique_id_t uid;
    if (tutti_get_unique_id(&uid))
        return 1;
    C->nworld = p;
    for (int w = 0; w < p; w++)
        s.pid[w] = start(w, p, w, &uid, 0);
    int64_t deadline = now_ms() + 60000;
    for (int left = 1; left && now_ms() < deadline;) {
        usleep(1000);
        reap(&s);
        serve_grow(&s);
        inject(&s);
        stop_later(&s);
        left = 0;
        for (int w = 0; w < C->nworld; w++) {
            if (s.stopped[w] && now_ms() >= s.resume_at[w]) {
                kill(s.pid[w], SIGCONT);
                s.stopped[w] = 0;
            }
            left += !s.reaped[w];
        }
    }
    for (int w = 0; w < C->nworld; w++)
        if (!s.reaped[w]) {
            kill(s.pid[w], SIGKILL);
            waitpid(s.pid[w], NULL, 0);
            snprintf(C->why[w], sizeof C->why[w], "still running after 60 s");
        }
    int bad = verify(idx);
    for (int i = 0; (bad || verbose > 1) && i < C->nrec && i < MAXREC; i++) {
        const rec_t *a = &C->rec[i];
        printf("  process %d: rank %d of %d in %016llx (from %016llx), step %d:", a->world, a->rank, a->size,
               (unsigned long long)a->id, (unsigned long long)a->parent, a->step);
        for (int q = 0; q < a->size; q++)
            printf(" %d", a->order[q]);
        printf("%s\n", a->synced ? "" : " (its first all-gather failed)");
    }
    if (bad)
        printf("schedule %d failed: replay it with tests/stress/chaos -n 1 -s %llu -v\n", idx,
               (unsigned long long)seed);
    for (int w = 0; w < C->nworld; w++)
        outcomes[C->state[w]]++;
    return bad;
}

/* Kill to recovery: p ranks all-reduce 16 MiB until rank 1 is killed; the
 * survivors revoke, shrink and all-reduce 16 MiB on the shrunk
 * communicator, checked. Prints the kill to the last survivor's right
 * result, in ms. */
static int recovery_time(int p)
{
    enum { COUNT = 4 << 20 };
    memset(C, 0, sizeof *C);
    tutti_unique_id_t uid;
    if (tutti_get_unique_id(&uid))
        return 1;
    int64_t *done = (int64_t *)C->rec; /* per rank: when its check passed, ms */
    pid_t pid[MAXW];
    for (int r = 0; r < p; r++)
        if ((pid[r] = fork()) == 0) {
            tutti_comm_t comm, small;
            float *x = malloc(sizeof(float) * COUNT);
            if (tutti_comm_init(&comm, p, r, &uid, NULL))
                _exit(2);
            for (int iter = 0;; iter++) {
                for (size_t i = 0; i < COUNT; i++)
                    x[i] = 1.0f;
                if (tutti_allreduce(x, x, COUNT, TUTTI_FP32, TUTTI_SUM, comm, NULL))
                    break;
                if (iter == 1)
                    __atomic_add_fetch(&C->nworld, 1, __ATOMIC_SEQ_CST);
            }
            tutti_comm_revoke(comm);
            if (tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &small))
                _exit(3);
            for (size_t i = 0; i < COUNT; i++)
                x[i] = 1.0f;
            if (tutti_allreduce(x, x, COUNT, TUTTI_FP32, TUTTI_SUM, small, NULL) ||
                x[COUNT - 1] != (float)(p - 1))
                _exit(4);
            done[r] = now_ms();
            tutti_comm_destroy(small);
            tutti_comm_abort(comm);
            _exit(0);
        }
    while (__atomic_load_n(&C->nworld, __ATOMIC_SEQ_CST) < p)
        usleep(1000);
    usleep(20000);
    int64_t t0 = now_ms(), last = 0;
    kill(pid[1], SIGKILL);
    int bad = 0;
    for (int r = 0; r < p; r++) {
        int status;
        waitpid(pid[r], &status, 0);
        bad += r != 1 && (!WIFEXITED(status) || WEXITSTATUS(status));
        last = r != 1 && done[r] > last ? done[r] : last;
    }
    if (!bad)
        printf("recovery %d ranks: %lld ms\n", p, (long long)(last - t0));
    return bad;
}

int main(int argc, char **argv)
{
    int n = 200, opt, ranks = 4, recovery = 0;
    uint64_t seed = (uint64_t)time(NULL);
    while ((opt = getopt(argc, argv, "n:s:k:p:Rvh")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'k':
            for (int k = 0; k < F_KINDS; k++)
                only_kind = strcmp(optarg, kind_opt[k]) == 0 ? k : only_kind;
            if (only_kind < 0) {
                printf("chaos: -k takes kill, stop, stop-long, busy or kill-stop\n");
                return 2;
            }
            break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'p': ranks = atoi(optarg); break;
        case 'R': recovery = 1; break;
        case 'v': verbose = 1; break;
        default:
            printf("usage: chaos [-n SCHEDULES] [-s SEED] [-k FAULT] [-v] | chaos -R [-p RANKS] [-n RUNS]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    C = mmap(NULL, sizeof *C, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (C == MAP_FAILED || n < 1 || ranks < 2 || ranks > MAXW)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    if (recovery) {
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += recovery_time(ranks);
        return bad ? 1 : 0;
    }
    setenv("TUTTI_TIMEOUT", "1", 1);
    setenv("TUTTI_LOG", "error", 0);
    int bad = 0, outcomes[KILLED + 1] = {0};
    int64_t t0 = now_ms();
    printf("chaos: %d schedules from seed %llu%s%s\n", n, (unsigned long long)seed,
           only_kind >= 0 ? ", faults: " : "", only_kind >= 0 ? kind_opt[only_kind] : "");
    for (int i = 0; i < n; i++)
        bad += schedule(i, seed + (uint64_t)i, outcomes);
    printf("chaos: %d schedules in %.1f s, %d problems; processes:", n, (double)(now_ms() - t0) / 1000, bad);
    for (int k = DONE; k <= KILLED; k++)
        printf(" %d %s%s", outcomes[k], state_name[k], k < KILLED ? "," : "\n");
    return bad ? 1 : 0;
}
