/* SPDX-License-Identifier: MIT */
/*
 * Faults: kill -9 one rank in the middle of a large all-reduce. Every
 * survivor must return an error naming that rank well within the deadline,
 * nothing may be left in /dev/shm, and ranks that wait on a silent peer time
 * out with a report of where they waited.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "tests/lib/harness.h"

#define DEADLINE_S 20
#define VICTIM 2

typedef struct {
    int *ready; /* shared counter: ranks that finished one all-reduce */
} fault_arg_t;

static int allreduce_until_failure(tutti_comm_t comm, int r, int p, void *argp)
{
    fault_arg_t *arg = argp;
    (void)p;
    size_t n = 16 << 20; /* 64 MiB: the kill lands mid-collective */
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    for (int iter = 0; iter < 10000; iter++) {
        int64_t t0 = tt_now_ms();
        tutti_status_t st = tutti_allreduce(a, b, n, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        if (iter == 0)
            __atomic_add_fetch(arg->ready, 1, __ATOMIC_SEQ_CST);
        if (st == TUTTI_SUCCESS)
            continue;
        int64_t waited = tt_now_ms() - t0;
        const char *msg = tutti_comm_last_error(comm);
        int ok = st == TUTTI_ERR_PEER_FAILED && tt_named_as_dead(msg, VICTIM) && waited < DEADLINE_S * 1000;
        if (!ok)
            fprintf(stderr, "rank %d: %s after %lld ms: %s\n", r, tutti_status_name(st), (long long)waited,
                    msg);
        /* The communicator refuses further work instead of hanging. */
        if (tutti_allreduce(a, b, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL) != TUTTI_ERR_ABORTED)
            ok = 0;
        tutti_comm_abort(comm);
        return ok ? -1 : 3;
    }
    return 4; /* never noticed the dead rank */
}

static void kill_mid_allreduce(const char *transports)
{
    setenv("TUTTI_TRANSPORTS", transports, 1);
    setenv("TUTTI_TIMEOUT", "20", 1);
    fault_arg_t arg = {mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)};
    *arg.ready = 0;
    pid_t pids[4];
    int codes[4];
    tt_spawn_ranks(4, allreduce_until_failure, &arg, pids);
    while (__atomic_load_n(arg.ready, __ATOMIC_SEQ_CST) < 4)
        usleep(1000);
    usleep(20000); /* into the second all-reduce */
    int64_t killed_at = tt_now_ms();
    kill(pids[VICTIM], SIGKILL);
    ck_assert(!tt_wait_ranks(4, pids, codes, 2 * DEADLINE_S));
    int64_t took = tt_now_ms() - killed_at;
    for (int r = 0; r < 4; r++)
        if (r != VICTIM)
            ck_assert_msg(codes[r] == 0, "survivor %d exited %d", r, codes[r]);
    ck_assert_int_eq(codes[VICTIM], 128 + SIGKILL);
    ck_assert_msg(took < DEADLINE_S * 1000, "survivors took %lld ms", (long long)took);
    ck_assert_int_eq(tt_count_job_segments(tt_last_job_tag()), 0);
    munmap(arg.ready, 4096);
    unsetenv("TUTTI_TIMEOUT");
}

START_TEST(kill_9_during_allreduce_over_shm)
{
    kill_mid_allreduce("shm,tcp");
}
END_TEST

START_TEST(kill_9_during_allreduce_over_tcp)
{
    kill_mid_allreduce("tcp");
}
END_TEST

static int rank1_never_calls(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    float x = 1, y;
    if (r == 1) {
        sleep(6); /* alive but silent */
        tutti_comm_abort(comm);
        return -1;
    }
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    int64_t waited = tt_now_ms() - t0;
    const char *msg = tutti_comm_last_error(comm);
    int ok = st == TUTTI_ERR_TIMEOUT && waited >= 1500 && waited < 5000 && strstr(msg, "TUTTI_TIMEOUT") &&
             strstr(msg, "rank 1");
    if (!ok)
        fprintf(stderr, "rank %d: %s after %lld ms: %s\n", r, tutti_status_name(st), (long long)waited, msg);
    tutti_comm_abort(comm);
    return ok ? -1 : 3;
}

START_TEST(silent_peer_times_out_naming_it)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    setenv("TUTTI_TIMEOUT", "2", 1);
    tt_run_ranks(2, rank1_never_calls, NULL, 30);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

static int mismatching_calls(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    float x[8] = {0}, y[8];
    tutti_status_t st = r == 0 ? tutti_allreduce(x, y, 8, TUTTI_FP32, TUTTI_SUM, comm, NULL)
                               : tutti_allreduce(x, y, 8, TUTTI_FP32, TUTTI_MAX, comm, NULL);
    const char *msg = tutti_comm_last_error(comm);
    /* Each side sees the other's call, or the peer aborting because of it. */
    int ok = (st == TUTTI_ERR_MISMATCH && strstr(msg, r == 0 ? "max" : "sum")) || st == TUTTI_ERR_PEER_FAILED;
    if (!ok)
        fprintf(stderr, "rank %d: %s: %s\n", r, tutti_status_name(st), msg);
    tutti_comm_abort(comm);
    return ok ? -1 : 3;
}

START_TEST(mismatched_collectives_are_reported_not_hung)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(2, mismatching_calls, NULL, 30);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(2, mismatching_calls, NULL, 30);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fault");
    TCase *tc = tcase_create("fault");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kill_9_during_allreduce_over_shm);
    tcase_add_test(tc, kill_9_during_allreduce_over_tcp);
    tcase_add_test(tc, silent_peer_times_out_naming_it);
    tcase_add_test(tc, mismatched_collectives_are_reported_not_hung);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
