/* SPDX-License-Identifier: MIT */
/*
 * Surviving a lost rank, on forked ranks: a revocation ends the calls that
 * wait on every rank with TUTTI_ERR_REVOKED well before the timeout; after
 * kill -9 of one rank (rank 0 too) on 2-8 ranks, over shm, tcp and across
 * simulated hosts, the survivors shrink and every collective on the new
 * communicator is right; a rank that dies during the shrink is excluded
 * with TUTTI_SHRINK_DEAD and fails the shrink cleanly without it; ranks
 * that disagree are told; a replacement joins with tutti_comm_grow; error
 * feedback carries over to the new number of ranks.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compress/allreduce.h"
#include "core/clock.h"
#include "tests/lib/harness.h"

#define TIMEOUT_S 20 /* TUTTI_TIMEOUT: every wait here must end well before it */
#define PROMPT_MS 5000

/* What the forked ranks share with the test: a counter and a rendezvous id. */
typedef struct {
    int ready;  /* ranks past their first collective */
    int victim; /* the rank the test kills */
    int second; /* a rank that dies during the shrink, -1 */
    int id_set; /* the grow's id is in id */
    int joined; /* the newcomer's outcome: 1 fine, 2 failed */
    tutti_unique_id_t id;
} shared_t;

static shared_t *shared_new(void)
{
    shared_t *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(s, MAP_FAILED);
    memset(s, 0, sizeof *s);
    s->second = -1;
    return s;
}

#define N 257 /* elements per rank: odd, so the blocks are uneven */

/* Every collective on comm, each result checked; 0 when all are right. */
static int every_collective(tutti_comm_t comm)
{
    int r = tt_rank_of(comm), p = tt_size_of(comm), bad = 0;
    float *a = malloc(sizeof(float) * N * (size_t)p), *b = malloc(sizeof(float) * N * (size_t)p);
    for (size_t i = 0; i < (size_t)N * (size_t)p; i++)
        a[i] = (float)(r + (int)(i % 7));
    TT_FAIL_IF(tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL), "allreduce: %s",
               tutti_comm_last_error(comm));
    for (int i = 0; i < N; i++)
        bad += b[i] != (float)(p * (p - 1) / 2 + p * (i % 7));
    TT_FAIL_IF(tutti_reduce_scatter(a, b, N, TUTTI_FP32, TUTTI_MAX, comm, NULL), "reduce_scatter: %s",
               tutti_comm_last_error(comm));
    for (int i = 0; i < N; i++)
        bad += b[i] != (float)(p - 1 + (int)(((size_t)r * N + (size_t)i) % 7));
    TT_FAIL_IF(tutti_allgather(a, b, N, TUTTI_FP32, comm, NULL), "allgather: %s",
               tutti_comm_last_error(comm));
    for (int q = 0; q < p; q++)
        for (int i = 0; i < N; i++)
            bad += b[q * N + i] != (float)(q + i % 7);
    memcpy(b, a, sizeof(float) * N);
    TT_FAIL_IF(tutti_broadcast(b, b, N, TUTTI_FP32, p - 1, comm, NULL), "broadcast: %s",
               tutti_comm_last_error(comm));
    for (int i = 0; i < N; i++)
        bad += b[i] != (float)(p - 1 + i % 7);
    TT_FAIL_IF(tutti_reduce(a, b, N, TUTTI_FP32, TUTTI_MIN, 0, comm, NULL), "reduce: %s",
               tutti_comm_last_error(comm));
    for (int i = 0; r == 0 && i < N; i++)
        bad += b[i] != (float)(i % 7);
    for (int q = 0; q < p; q++)
        for (int i = 0; i < N; i++)
            a[q * N + i] = (float)(r * p + q);
    TT_FAIL_IF(tutti_alltoall(a, b, N, TUTTI_FP32, comm, NULL), "alltoall: %s", tutti_comm_last_error(comm));
    for (int q = 0; q < p; q++)
        for (int i = 0; i < N; i++)
            bad += b[q * N + i] != (float)(q * p + r);
    TT_FAIL_IF(tutti_barrier(comm, NULL), "barrier: %s", tutti_comm_last_error(comm));
    if (p > 1 && r == 0)
        TT_FAIL_IF(tutti_send(a, N, TUTTI_FP32, p - 1, comm, NULL), "send: %s", tutti_comm_last_error(comm));
    if (p > 1 && r == p - 1) {
        TT_FAIL_IF(tutti_recv(b, N, TUTTI_FP32, 0, comm, NULL), "recv: %s", tutti_comm_last_error(comm));
        for (int i = 0; i < N; i++)
            bad += b[i] != (float)(i / N);
    }
    free(a);
    free(b);
    TT_FAIL_IF(bad, "rank %d of %d: %d wrong elements", r, p, bad);
    return 0;
}

/* All-reduces until one fails (a rank was killed); that failure must name a peer. */
static int until_failure(tutti_comm_t comm, int r, shared_t *sh)
{
    float x[1 << 16];
    memset(x, 0, sizeof x);
    for (int iter = 0;; iter++) {
        tutti_status_t st = tutti_allreduce(x, x, 1 << 16, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        if (iter == 0)
            __atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
        if (st == TUTTI_SUCCESS)
            continue;
        TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED, "rank %d: %s: %s", r, tutti_status_name(st),
                   tutti_comm_last_error(comm));
        return 0;
    }
}

/* The new communicator: its size, this rank's place in it, every collective. */
static int check_shrunk(tutti_comm_t comm, tutti_comm_t next, int r, int p, const unsigned char *gone)
{
    int want = r, left = p;
    for (int q = 0; q < p; q++) {
        left -= gone[q];
        want -= q < r && gone[q];
    }
    TT_FAIL_IF(tt_size_of(next) != left || tt_rank_of(next) != want,
               "rank %d: rank %d of %d after the shrink, want %d of %d", r, tt_rank_of(next), tt_size_of(next),
               want, left);
    TT_FAIL_IF(every_collective(next), "rank %d: a collective failed on the shrunk communicator", r);
    TT_FAIL_IF(tutti_comm_destroy(next), "rank %d: destroy of the new communicator: %s", r,
               tutti_comm_last_error(NULL));
    TT_FAIL_IF(tutti_comm_destroy(comm), "rank %d: destroy of the old one: %s", r,
               tutti_comm_last_error(NULL));
    return -1;
}

static int shrink_after_kill(tutti_comm_t comm, int r, int p, void *arg)
{
    shared_t *sh = arg;
    TT_FAIL_IF(until_failure(comm, r, sh), "rank %d: the kill went unnoticed", r);
    tutti_comm_t next = NULL;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
    TT_FAIL_IF(st, "rank %d: shrink: %s: %s", r, tutti_status_name(st), tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_now_ms() - t0 > PROMPT_MS, "rank %d: the shrink took %lld ms", r,
               (long long)(tt_now_ms() - t0));
    unsigned char gone[64] = {0};
    gone[sh->victim] = 1;
    return check_shrunk(comm, next, r, p, gone);
}

/* Starts p ranks running body, kills the victim once all are in their
 * collectives, and expects the others to exit 0. */
static void kill_and_wait(int p, tt_rank_fn body, void *arg, shared_t *sh)
{
    pid_t pids[64];
    int codes[64];
    setenv("TUTTI_TIMEOUT", "20", 1);
    tt_spawn_ranks(p, body, arg, pids);
    while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < p)
        usleep(1000);
    usleep(5000);
    kill(pids[sh->victim], SIGKILL);
    ck_assert(!tt_wait_ranks(p, pids, codes, 3 * TIMEOUT_S));
    for (int r = 0; r < p; r++)
        if (r == sh->victim)
            ck_assert_int_eq(codes[r], 128 + SIGKILL);
        else if (r != sh->second)
            ck_assert_msg(codes[r] == 0, "rank %d of %d exited %d", r, p, codes[r]);
    unsetenv("TUTTI_TIMEOUT");
}

/* Case i of 0..20: transports (shm, tcp, simulated hosts of two ranks) by
 * i / 7, 2 + i % 7 ranks, the victim walking through the ranks, rank 0 too. */
START_TEST(shrink_after_kill_9)
{
    static const char *const how[] = {"shm,tcp", "tcp", "shm,tcp"};
    int p = 2 + _i % 7;
    setenv("TUTTI_TRANSPORTS", how[_i / 7], 1);
    tt_set_ranks_per_node(_i / 7 == 2 ? 2 : 0);
    shared_t *sh = shared_new();
    sh->victim = (_i * 3) % p;
    kill_and_wait(p, shrink_after_kill, sh, sh);
    tt_set_ranks_per_node(0);
    ck_assert_int_eq(tt_count_job_segments(tt_last_job_tag()), 0);
    munmap(sh, sizeof *sh);
}
END_TEST

/* Rank 3 revokes from a helper thread while its main thread and ranks 1
 * and 2 wait in an all-reduce that rank 0 has not reached. */
static void *revoke_later(void *arg)
{
    usleep(300000);
    tutti_comm_revoke((tutti_comm_t)arg);
    return NULL;
}

static int revoke_while_waiting(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float x[64] = {0};
    pthread_t t;
    if (r == 3)
        pthread_create(&t, NULL, revoke_later, comm);
    if (r == 0)
        usleep(1000000); /* the others wait for this rank meanwhile */
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_allreduce(x, x, 64, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    int64_t took = tt_now_ms() - t0;
    if (r == 3)
        pthread_join(t, NULL);
    TT_FAIL_IF(st != TUTTI_ERR_REVOKED || took > PROMPT_MS, "rank %d: %s after %lld ms: %s", r,
               tutti_status_name(st), (long long)took, tutti_comm_last_error(comm));
    TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "revoked"), "rank %d: %s", r,
               tutti_comm_last_error(comm));
    /* Later calls end alike, and the communicator still shrinks (to all of it). */
    TT_FAIL_IF(tutti_barrier(comm, NULL) != TUTTI_ERR_REVOKED, "rank %d: a barrier after the revocation", r);
    TT_FAIL_IF(tutti_comm_revoke(comm), "rank %d: revoking twice", r);
    tutti_comm_t next;
    TT_FAIL_IF(tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEFAULT, &next), "rank %d: shrink: %s", r,
               tutti_comm_last_error(comm));
    unsigned char gone[8] = {0};
    return check_shrunk(comm, next, r, p, gone);
}

START_TEST(revoke_ends_every_waiting_call)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", _i ? "tcp" : "shm,tcp", 1);
    tt_run_ranks(4, revoke_while_waiting, NULL, 60);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* A rank that was to remain dies during the shrink: rank `second` never
 * calls it (dies as the others wait for it), or calls it on a thread and
 * dies while the coordinator waits for rank 4, which comes late. With
 * TUTTI_SHRINK_DEAD the others leave it out too; without, all of them fail
 * with TUTTI_ERR_PEER_FAILED. */
typedef struct {
    shared_t *sh;
    int dead_flag, in_shrink;
} during_t;

static void *shrink_thread(void *arg)
{
    tutti_comm_t next;
    tutti_comm_shrink((tutti_comm_t)arg, NULL, 0, TUTTI_SHRINK_DEAD, &next);
    return NULL;
}

static int die_during_shrink(tutti_comm_t comm, int r, int p, void *arg)
{
    during_t *d = arg;
    shared_t *sh = d->sh;
    TT_FAIL_IF(until_failure(comm, r, sh), "rank %d: the kill went unnoticed", r);
    if (r == sh->second) {
        pthread_t t;
        if (d->in_shrink)
            pthread_create(&t, NULL, shrink_thread, comm);
        usleep(d->in_shrink ? 50000 : 300000);
        raise(SIGKILL);
    }
    if (d->in_shrink && r == p - 1)
        usleep(300000);
    tutti_comm_t next = NULL;
    int64_t t0 = tt_now_ms();
    int excl[1] = {sh->victim};
    tutti_status_t st = d->dead_flag ? tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next)
                                     : tutti_comm_shrink(comm, excl, 1, TUTTI_SHRINK_DEFAULT, &next);
    int64_t took = tt_now_ms() - t0;
    TT_FAIL_IF(took > PROMPT_MS, "rank %d: the shrink took %lld ms", r, (long long)took);
    if (!d->dead_flag) {
        TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED, "rank %d: shrink gave %s: %s", r, tutti_status_name(st),
                   tutti_comm_last_error(comm));
        TT_FAIL_IF(!tt_named_as_dead(tutti_comm_last_error(comm), sh->second), "rank %d: %s", r,
                   tutti_comm_last_error(comm));
        tutti_comm_abort(comm);
        return -1;
    }
    TT_FAIL_IF(st, "rank %d: shrink: %s: %s", r, tutti_status_name(st), tutti_comm_last_error(comm));
    unsigned char gone[64] = {0};
    gone[sh->victim] = gone[sh->second] = 1;
    return check_shrunk(comm, next, r, p, gone);
}

/* 0: a rank dies as the coordinator waits for it (excluded); 1: the same
 * without TUTTI_SHRINK_DEAD (all fail); 2: the coordinator, rank 0, dies
 * with ranks 2 and 3 waiting for its answer; 3: rank 2 dies after joining
 * the coordinator. */
START_TEST(a_rank_dies_during_the_shrink)
{
    static const int second[] = {3, 3, 0, 2}, in_shrink[] = {0, 0, 1, 1};
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    shared_t *sh = shared_new();
    sh->victim = 1;
    sh->second = second[_i];
    during_t d = {sh, _i != 1, in_shrink[_i]};
    kill_and_wait(5, die_during_shrink, &d, sh);
    munmap(sh, sizeof *sh);
}
END_TEST

/* The lists must agree, and a rank may not exclude itself; excluded live
 * ranks call nothing, and destroy the old communicator with the others. */
static int lists_and_live_exclusion(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    tutti_comm_t next = NULL;
    int self[1] = {r}, far[1] = {p}, one[1] = {1};
    TT_FAIL_IF(tutti_comm_shrink(comm, self, 1, 0, &next) != TUTTI_ERR_INVALID_ARG,
               "rank %d: excluded itself", r);
    TT_FAIL_IF(tutti_comm_shrink(comm, far, 1, 0, &next) != TUTTI_ERR_INVALID_ARG,
               "rank %d: excluded rank %d", r, p);
    TT_FAIL_IF(tutti_comm_shrink(comm, NULL, 0, 0x80, &next) != TUTTI_ERR_INVALID_ARG, "rank %d: flag 0x80",
               r);
    /* Rank 1 is left out alive; rank 0 first passes another flag than
     * ranks 2 and 3, and all three are told. */
    if (r != 1) {
        tutti_status_t st = tutti_comm_shrink(comm, one, 1, r == 0 ? TUTTI_SHRINK_DEAD : 0, &next);
        TT_FAIL_IF(st != TUTTI_ERR_MISMATCH, "rank %d: disagreeing shrink gave %s: %s", r,
                   tutti_status_name(st), tutti_comm_last_error(comm));
        TT_FAIL_IF(tutti_comm_shrink(comm, one, 1, 0, &next), "rank %d: shrink: %s", r,
                   tutti_comm_last_error(comm));
        TT_FAIL_IF(every_collective(next), "rank %d: collectives on the new communicator", r);
        tutti_comm_destroy(next);
    }
    TT_FAIL_IF(every_collective(comm), "rank %d: the old communicator stays usable", r);
    return 0;
}

START_TEST(shrink_arguments_and_live_ranks)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(4, lists_and_live_exclusion, NULL, 60);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* Kill rank 2 of 4, shrink to 3, and grow back to 4 with a newcomer that
 * joins through rank 0's id (it waits in shared memory). */
static int shrink_then_grow(tutti_comm_t comm, int r, int p, void *arg)
{
    shared_t *sh = arg;
    (void)p;
    TT_FAIL_IF(until_failure(comm, r, sh), "rank %d: the kill went unnoticed", r);
    tutti_comm_t small, big;
    TT_FAIL_IF(tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &small), "rank %d: shrink: %s", r,
               tutti_comm_last_error(comm));
    tutti_comm_abort(comm);
    tutti_unique_id_t id;
    if (tt_rank_of(small) == 0) {
        TT_FAIL_IF(tutti_get_unique_id(&id), "unique id");
        sh->id = id;
        __atomic_store_n(&sh->id_set, 1, __ATOMIC_SEQ_CST);
    }
    TT_FAIL_IF(tutti_comm_grow(small, 3, &id, &big) != TUTTI_ERR_INVALID_ARG, "rank %d: grew to its own size",
               r);
    tutti_status_t st = tutti_comm_grow(small, 4, tt_rank_of(small) == 0 ? &id : NULL, &big);
    TT_FAIL_IF(st, "rank %d: grow: %s: %s", r, tutti_status_name(st), tutti_comm_last_error(small));
    TT_FAIL_IF(tt_size_of(big) != 4 || tt_rank_of(big) != tt_rank_of(small), "rank %d: rank %d of %d after the grow",
               r, tt_rank_of(big), tt_size_of(big));
    TT_FAIL_IF(every_collective(big), "rank %d: collectives after the grow", r);
    TT_FAIL_IF(tutti_comm_destroy(big) || tutti_comm_destroy(small), "rank %d: destroy", r);
    return -1;
}

START_TEST(a_replacement_joins_with_grow)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    shared_t *sh = shared_new();
    sh->victim = 2;
    pid_t newcomer = fork();
    ck_assert_int_ge(newcomer, 0);
    if (newcomer == 0) {
        while (!__atomic_load_n(&sh->id_set, __ATOMIC_SEQ_CST))
            usleep(1000);
        tutti_comm_t big;
        tutti_unique_id_t id = sh->id;
        int ok = tutti_comm_init(&big, 4, 3, &id, NULL) == TUTTI_SUCCESS && every_collective(big) == 0 &&
                 tutti_comm_destroy(big) == TUTTI_SUCCESS;
        if (!ok)
            fprintf(stderr, "newcomer: %s\n", tutti_comm_last_error(NULL));
        __atomic_store_n(&sh->joined, ok ? 1 : 2, __ATOMIC_SEQ_CST);
        _exit(ok ? 0 : 1);
    }
    kill_and_wait(4, shrink_then_grow, sh, sh); /* it may reap the newcomer too */
    for (int i = 0; i < 100 * TIMEOUT_S && !__atomic_load_n(&sh->joined, __ATOMIC_SEQ_CST); i++)
        usleep(10000);
    kill(newcomer, SIGKILL);
    waitpid(newcomer, NULL, WNOHANG);
    ck_assert_msg(sh->joined == 1, "the newcomer failed (%d)", sh->joined);
    munmap(sh, sizeof *sh);
}
END_TEST

/* A communicator of one rank revokes, shrinks to itself and works. */
static int alone(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float x = 1;
    TT_FAIL_IF(tutti_comm_revoke(comm), "revoke");
    TT_FAIL_IF(tutti_allreduce(&x, &x, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL) != TUTTI_ERR_REVOKED,
               "a call after the revocation");
    tutti_comm_t next;
    TT_FAIL_IF(tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next), "shrink: %s",
               tutti_comm_last_error(comm));
    unsigned char gone[1] = {0};
    return check_shrunk(comm, next, r, p, gone);
}

START_TEST(a_lone_rank_revokes_and_shrinks)
{
    tt_run_ranks(1, alone, NULL, 30);
}
END_TEST

/* White box: the server error of this rank's old chunk moves into the
 * worker error where that chunk lies, scaled as the op says. */
START_TEST(error_feedback_carries_over)
{
    tutti_ef_state_t ef;
    ck_assert_int_eq(tutti_ef_create(&ef, 16, 4), TUTTI_SUCCESS);
    for (int i = 0; i < 16; i++)
        ef->worker[i] = (float)i;
    ef->server_off = 8; /* rank 2's chunk of 4 */
    ef->server_count = 4;
    for (int i = 0; i < 4; i++)
        ef->server[i] = 0.5f;
    ck_assert_int_eq(tutti_ef_regroup(ef, 3, TUTTI_AVG), TUTTI_SUCCESS);
    for (int i = 0; i < 16; i++)
        ck_assert_float_eq(ef->worker[i], (float)i + (i >= 8 && i < 12 ? 1.5f : 0.0f));
    ck_assert_int_eq(ef->nranks, 3);
    ck_assert_uint_eq(ef->server_count, 0);
    ck_assert_int_eq(tutti_ef_regroup(ef, 0, TUTTI_SUM), TUTTI_ERR_INVALID_ARG);
    ck_assert_int_eq(tutti_ef_regroup(NULL, 2, TUTTI_SUM), TUTTI_ERR_INVALID_ARG);
    tutti_ef_destroy(ef);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"revoke_ends_every_waiting_call", revoke_ends_every_waiting_call, 0, 2},
        {"shrink_after_kill_9", shrink_after_kill_9, 0, 21},
        {"a_rank_dies_during_the_shrink", a_rank_dies_during_the_shrink, 0, 4},
        {"shrink_arguments_and_live_ranks", shrink_arguments_and_live_ranks, 0, 0},
        {"a_replacement_joins_with_grow", a_replacement_joins_with_grow, 0, 0},
        {"error_feedback_carries_over", error_feedback_carries_over, 0, 0},
        {"a_lone_rank_revokes_and_shrinks", a_lone_rank_revokes_and_shrinks, 0, 0},
    };
    return tt_run_cases("shrink", cases, sizeof cases / sizeof *cases, 180, argc, argv);
}
