/* SPDX-License-Identifier: MIT */
/*
 * Faults that used to surface only at the timeout, or nameless: the
 * who-is-stuck report names a stopped rank and one that never reached the
 * call; a rank that dies after joining, or never joins, is named to every
 * rank at once.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/stuck.h"
#include "core/clock.h"
#include "tests/lib/harness.h"

#define NR 4
#define STOPPED 2
#define AWAY 3

typedef struct {
    int status;
    int64_t ms;
    char msg[2048];
} seen_t;

static seen_t *shared(void)
{
    seen_t *s = mmap(NULL, NR * sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(s, MAP_FAILED);
    memset(s, 0, NR * sizeof *s);
    return s;
}

/* Rank STOPPED stops itself after the first all-reduce; rank AWAY stays
 * in its own code; the others wait in the second all-reduce. */
static int stuck_body(tutti_comm_t comm, int r, int p, void *arg)
{
    seen_t *seen = arg;
    float x[4096], y[4096];
    memset(x, 0, sizeof x);
    TT_FAIL_IF(tutti_allreduce(x, y, 4096, TUTTI_FP32, TUTTI_SUM, comm, NULL), "first allreduce: %s",
               tutti_comm_last_error(comm));
    if (r == STOPPED)
        raise(SIGSTOP);
    if (r == AWAY) {
        sleep(8);
        tutti_comm_abort(comm);
        return -1;
    }
    (void)p;
    int64_t t0 = tt_now_ms();
    seen[r].status = tutti_allreduce(x, y, 4096, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    seen[r].ms = tt_now_ms() - t0;
    snprintf(seen[r].msg, sizeof seen[r].msg, "%s", tutti_comm_last_error(comm));
    tutti_comm_abort(comm);
    return -1;
}

static void stopped_rank_is_named(const char *transports)
{
    setenv("TUTTI_TRANSPORTS", transports, 1);
    setenv("TUTTI_TIMEOUT", "3", 1);
    seen_t *seen = shared();
    pid_t pids[NR];
    int codes[NR];
    tt_spawn_ranks(NR, stuck_body, seen, pids);
    /* The survivors end on their own; then the stopped rank is killed. */
    for (int r = 0; r < NR; r++)
        if (r != STOPPED && r != AWAY) {
            int status;
            ck_assert_int_eq(waitpid(pids[r], &status, 0), pids[r]);
        }
    kill(pids[STOPPED], SIGKILL);
    tt_wait_ranks(NR, pids, codes, 30);
    for (int r = 0; r < NR; r++) {
        if (r == STOPPED || r == AWAY)
            continue;
        /* " timeout " is what trainers' tools look for (torch's tests too). */
        const char *m = seen[r].msg;
        ck_assert_msg(seen[r].status == TUTTI_ERR_TIMEOUT && strstr(m, " timeout ") &&
                          strstr(m, "rank 2 did not answer") && strstr(m, "stopped") &&
                          strstr(m, "rank 3 has not reached it") && seen[r].ms < 8000,
                      "%s, rank %d: %s after %lld ms: %s", transports, r, tutti_status_name(seen[r].status),
                      (long long)seen[r].ms, m);
    }
    munmap(seen, NR * sizeof *seen);
    unsetenv("TUTTI_TIMEOUT");
}

START_TEST(a_stopped_rank_is_named_over_tcp)
{
    stopped_rank_is_named("tcp");
}
END_TEST

START_TEST(a_stopped_rank_is_named_over_shm)
{
    stopped_rank_is_named("shm,tcp");
}
END_TEST

/* Starts ranks [0, started) of an nranks job on uid; each records what
 * its tutti_comm_init said. */
static void start_ranks(const tutti_unique_id_t *uid, int nranks, int started, seen_t *seen, pid_t *pids)
{
    fflush(stderr);
    for (int r = 0; r < started; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            tutti_comm_t comm;
            int64_t t0 = tt_now_ms();
            seen[r].status = tutti_comm_init(&comm, nranks, r, uid, NULL);
            seen[r].ms = tt_now_ms() - t0;
            snprintf(seen[r].msg, sizeof seen[r].msg, "%s", tutti_comm_last_error(NULL));
            if (!seen[r].status)
                tutti_comm_destroy(comm);
            _exit(0);
        }
    }
}

START_TEST(a_rank_that_never_joins_is_named)
{
    setenv("TUTTI_TIMEOUT", "3", 1);
    seen_t *seen = shared();
    tutti_unique_id_t uid;
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    pid_t pids[NR];
    int codes[NR];
    start_ranks(&uid, NR, NR - 1, seen, pids);
    ck_assert(!tt_wait_ranks(NR - 1, pids, codes, 30));
    for (int r = 0; r < NR - 1; r++)
        ck_assert_msg(seen[r].status != TUTTI_SUCCESS && strstr(seen[r].msg, "missing: rank 3") &&
                          seen[r].ms < 6000,
                      "rank %d: %s after %lld ms: %s", r, tutti_status_name(seen[r].status),
                      (long long)seen[r].ms, seen[r].msg);
    munmap(seen, NR * sizeof *seen);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

START_TEST(a_rank_that_dies_after_joining_is_named)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    seen_t *seen = shared();
    tutti_unique_id_t uid;
    tt_id_t id;
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    memcpy(&id, uid.internal, sizeof id);
    pid_t pids[NR];
    int codes[NR];
    start_ranks(&uid, NR, NR - 1, seen, pids);
    /* Rank 3 joins with the right key, then its process is gone. */
    int fd;
    ck_assert_int_eq(tt_sock_connect(&id.root, tt_now_ms() + 5000, &fd), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_hello_send(fd, id.key, 3, NR, 0, tt_now_ms() + 1000), TUTTI_SUCCESS);
    usleep(300000);
    close(fd);
    ck_assert(!tt_wait_ranks(NR - 1, pids, codes, 40));
    for (int r = 0; r < NR - 1; r++)
        ck_assert_msg(seen[r].status == TUTTI_ERR_PEER_FAILED && strstr(seen[r].msg, "rank 3 died") &&
                          seen[r].ms < 5000,
                      "rank %d: %s after %lld ms: %s", r, tutti_status_name(seen[r].status),
                      (long long)seen[r].ms, seen[r].msg);
    munmap(seen, NR * sizeof *seen);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* The report from snapshots alone: about the oldest call in progress, the
 * silent rank and the one outside tutti first, then every wait. */
START_TEST(the_report_names_the_ranks_at_fault_first)
{
    tt_stuck_state_t st[5] = {
        {.in_call = 1, .seq = 5, .coll = 0, .dtype = TUTTI_FP32, .count = 8, .peer = 3, .kind = 1, .round = 2,
         .nrounds = 6, .slice = 1, .nslices = 1, .for_ms = 3000, .started = 6},
        {.in_call = 1, .seq = 6, .coll = 0, .dtype = TUTTI_FP32, .count = 8, .peer = 0, .kind = 2, .round = 1,
         .nrounds = 6, .slice = 1, .nslices = 1, .for_ms = 2900, .started = 7, .timed_out = 1},
        {0},
        {.in_call = 1, .seq = 5, .coll = 0, .dtype = TUTTI_FP32, .count = 8, .peer = 2, .kind = 1, .round = 3,
         .nrounds = 6, .slice = 1, .nslices = 1, .for_ms = 3000, .started = 6},
        {.in_call = 0, .seq = 4, .coll = 3, .dtype = TUTTI_FP32, .count = 8, .peer = -1, .kind = TT_STUCK_NO_STEP,
         .for_ms = 12000, .started = 5},
    };
    unsigned char answered[5] = {1, 1, 0, 1, 1};
    char text[2048];
    tt_stuck_compile(5, st, answered, 1, 1000, NULL, NULL, text, sizeof text);
    const char *want[] = {"who is stuck in allreduce #5 (count 8, fp32, sum)",
                          "rank 2 did not answer within 1000 ms (stopped, hung or cut off)",
                          "rank 4 has not reached it: its last call, broadcast #4 (count 8, fp32, sum), ended 12.0 s ago",
                          "rank 0 waits for rank 3 (receiving, round 2 of 6, slice 1 of 1) for 3.0 s",
                          "rank 1 waits for rank 0 in allreduce #6 (count 8, fp32, sum) (receiving to reduce",
                          "timed out", "rank 3 waits for rank 2 (receiving, round 3 of 6"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(strstr(text, want[i]), "no \"%s\" in: %s", want[i], text);
    ck_assert_msg(strstr(text, "rank 2 did") < strstr(text, "rank 0 waits"), "the faults come first: %s", text);
    /* A small buffer ends cleanly. */
    char small[120];
    tt_stuck_compile(5, st, answered, 1, 1000, NULL, NULL, small, sizeof small);
    ck_assert_msg(strlen(small) < sizeof small && strstr(small, "..."), "%s", small);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stuck");
    TCase *tc = tcase_create("stuck");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, the_report_names_the_ranks_at_fault_first);
    tcase_add_test(tc, a_stopped_rank_is_named_over_tcp);
    tcase_add_test(tc, a_stopped_rank_is_named_over_shm);
    tcase_add_test(tc, a_rank_that_never_joins_is_named);
    tcase_add_test(tc, a_rank_that_dies_after_joining_is_named);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
