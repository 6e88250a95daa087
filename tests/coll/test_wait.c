/* SPDX-License-Identifier: MIT */
/*
 * How a rank waits for a late peer: it sleeps in the kernel instead of
 * polling (over shm, tcp and verbs), and what must still reach it does:
 * its peer's data, a peer killed with -9, TUTTI_TIMEOUT.
 *
 * "Sleeps" is told from the thread's own accounting, not from timings, so
 * a loaded machine cannot fail it: while rank 0 waits 1.5 s for rank 1, its
 * waiting thread must have blocked in the kernel (switched out voluntarily)
 * tens of times, not never (it polls) nor tens of thousands of times (it
 * naps between polls, as tutti did before).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/clock.h"
#include "tests/lib/harness.h"

#define LATE_MS 1500
/* A sleeping rank wakes for its liveness check every 20 ms: about 75
 * voluntary switches in 1.5 s, far fewer on a busy machine, where each wake
 * waits long for a core (and the verbs stand-in yields when its queue is
 * empty). A rank that polls switches out only when it is preempted, which
 * is not voluntary; one that naps between polls, as tutti did before, more
 * than 10,000 times. */
#define FEWEST_SWITCHES 3
#define MOST_SWITCHES 400

static int late_peer(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    float x[1024];
    for (int i = 0; i < 1024; i++)
        x[i] = (float)(r + 1);
    if (r == 1) {
        usleep(LATE_MS * 1000);
        tutti_status_t st = tutti_allreduce(x, x, 1024, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        TT_FAIL_IF(st, "rank 1: %s", tutti_comm_last_error(comm));
        return 0;
    }
    struct rusage before, after;
    getrusage(RUSAGE_THREAD, &before);
    tutti_status_t st = tutti_allreduce(x, x, 1024, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    getrusage(RUSAGE_THREAD, &after);
    TT_FAIL_IF(st, "rank 0: %s", tutti_comm_last_error(comm));
    TT_FAIL_IF(x[0] != 3.0f || x[1023] != 3.0f, "rank 0: wrong sum %g", (double)x[0]);
    long switches = after.ru_nvcsw - before.ru_nvcsw;
    double cpu = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec + after.ru_stime.tv_sec -
                          before.ru_stime.tv_sec) +
                 (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec + after.ru_stime.tv_usec -
                          before.ru_stime.tv_usec) /
                     1e6;
    fprintf(stderr, "rank 0 waited %d ms: %ld voluntary switches, %.3f s CPU\n", LATE_MS, switches, cpu);
    TT_FAIL_IF(switches < FEWEST_SWITCHES, "rank 0 switched out only %ld times while it waited: it polls",
               switches);
    TT_FAIL_IF(switches > MOST_SWITCHES, "rank 0 switched out %ld times while it waited: it naps, not sleeps",
               switches);
    return 0;
}

static const char *const transports[] = {"shm", "tcp", "verbs"};

START_TEST(waiting_rank_sleeps)
{
    const char *tp = transports[_i];
    if (strcmp(tp, "verbs") == 0) {
#ifdef TT_HAVE_VERBS
        tt_fabric_begin("wait");
        setenv("TTFAKE_DEVICES", "fakeib0:ib:1", 1);
        setenv("TUTTI_TRANSPORTS", "verbs", 1);
        tt_set_ranks_per_node(1);
#else
        return; /* built without verbs: nothing to check */
#endif
    } else {
        setenv("TUTTI_TRANSPORTS", tp, 1);
    }
    tt_run_ranks(2, late_peer, NULL, 60);
    tt_set_ranks_per_node(0);
#ifdef TT_HAVE_VERBS
    tt_fabric_end();
#endif
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

typedef struct {
    int64_t
        *killed_ms; /* shared: when the test killed rank 1 (CLOCK_MONOTONIC, one clock for all processes) */
} kill_arg_t;

static int waits_for_the_dead(tutti_comm_t comm, int r, int p, void *argp)
{
    kill_arg_t *arg = argp;
    (void)p;
    float x[16] = {0};
    if (r == 1) {
        sleep(30); /* killed meanwhile */
        return 1;
    }
    tutti_status_t st = tutti_allreduce(x, x, 16, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    int64_t took = tt_now_ms() - __atomic_load_n(arg->killed_ms, __ATOMIC_SEQ_CST);
    const char *msg = tutti_comm_last_error(comm);
    fprintf(stderr, "rank 0: %s %lld ms after rank 1 was killed: %s\n", tutti_status_name(st),
            (long long)took, msg);
    TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED || !tt_named_as_dead(msg, 1),
               "rank 0 did not name rank 1 as dead");
    /* A hang detector, not a timing: the wake-ups make it milliseconds. */
    TT_FAIL_IF(took > 10000, "rank 0 noticed only after %lld ms", (long long)took);
    tutti_comm_abort(comm);
    return -1;
}

/* The rank sleeps (it waits for a peer that never comes); its peer dies:
 * the star's news or the liveness check must wake it. */
START_TEST(sleeping_rank_hears_of_a_killed_peer)
{
    setenv("TUTTI_TRANSPORTS", transports[_i], 1);
    setenv("TUTTI_TIMEOUT", "60", 1);
    kill_arg_t arg = {mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)};
    ck_assert(arg.killed_ms != MAP_FAILED);
    *arg.killed_ms = INT64_MAX / 2;
    pid_t pids[2];
    int codes[2];
    tt_spawn_ranks(2, waits_for_the_dead, &arg, pids);
    sleep(2); /* rank 0 is asleep in the all-reduce by now */
    __atomic_store_n(arg.killed_ms, tt_now_ms(), __ATOMIC_SEQ_CST);
    kill(pids[1], SIGKILL);
    ck_assert(!tt_wait_ranks(2, pids, codes, 40));
    ck_assert_msg(codes[0] == 0, "rank 0 exited %d", codes[0]);
    ck_assert_int_eq(codes[1], 128 + SIGKILL);
    munmap(arg.killed_ms, 4096);
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

static int peer_never_calls(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    float x = 1;
    if (r == 1) {
        sleep(5); /* alive and silent */
        tutti_comm_abort(comm);
        return -1;
    }
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_allreduce(&x, &x, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    int64_t waited = tt_now_ms() - t0;
    TT_FAIL_IF(st != TUTTI_ERR_TIMEOUT, "rank 0: %s, not TUTTI_ERR_TIMEOUT", tutti_status_name(st));
    TT_FAIL_IF(waited < 1000, "rank 0 timed out after %lld ms, before TUTTI_TIMEOUT=1", (long long)waited);
    tutti_comm_abort(comm);
    return -1;
}

/* A sleeping rank still honours TUTTI_TIMEOUT (and not earlier). */
START_TEST(sleeping_rank_times_out)
{
    setenv("TUTTI_TRANSPORTS", transports[_i], 1);
    setenv("TUTTI_TIMEOUT", "1", 1);
    tt_run_ranks(2, peer_never_calls, NULL, 30);
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"waiting_rank_sleeps", waiting_rank_sleeps, 0, 3},
        {"sleeping_rank_hears_of_a_killed_peer", sleeping_rank_hears_of_a_killed_peer, 0, 2},
        {"sleeping_rank_times_out", sleeping_rank_times_out, 0, 2},
    };
    return tt_run_cases("wait", cases, sizeof cases / sizeof cases[0], 120, argc, argv);
}
