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

#include "tests/stress/chaos.h"

static const char *const state_name[] = {"running", "done",       "excluded", "gave up",
                                         "wrong",   "not joined", "crashed",  "killed"};
enum { F_KILL, F_STOP, F_STOP_LONG, F_SLOW, F_KILL_STOP, F_KINDS };
static const char *const fault_name[] = {"kill -9", "SIGSTOP 0.2 s", "SIGSTOP past the timeout", "busy 1.5 s",
                                         "kill -9, then another SIGSTOP while they recover"};

chaos_t *C;
static int verbose, only_kind = -1; /* -k: every fault of this kind */
static const char *const kind_opt[] = {"kill", "stop", "stop-long", "busy", "kill-stop"};

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
    s->pid[w] = chaos_start(w, C->grow_size, C->grow_size - 1, &uid, 0);
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
        s.pid[w] = chaos_start(w, p, w, &uid, 0);
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
