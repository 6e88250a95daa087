/* SPDX-License-Identifier: MIT */
/*
 * Call pairing: every call takes its place in the call sequence, even one
 * that moves nothing, so ranks that disagree get TUTTI_ERR_MISMATCH naming
 * both calls instead of wrong data or a hang.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "tests/lib/harness.h"

#define N 1000

/* The last rank passes count 0 where the others pass N, then every rank
 * calls all-reduce(N). Nobody may see wrong data, and the call that
 * disagrees must fail as a mismatch on the rank that made it. */
static int zero_count_meets_a_real_call(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float a[N], b[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)(r + 1);
    int zero = r == p - 1;
    int64_t t0 = tt_now_ms();
    memset(b, 0, sizeof b);
    tutti_status_t st = tutti_allreduce(a, b, zero ? 0 : N, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    const char *msg = tutti_comm_last_error(comm);
    TT_FAIL_IF(st == TUTTI_SUCCESS, "rank %d: the first call succeeded (b[0] = %g)", r, (double)b[0]);
    /* Every rank learns it is a mismatch, and of which calls. */
    TT_FAIL_IF(st != TUTTI_ERR_MISMATCH || !strstr(msg, "count 0") || !strstr(msg, "count 1000"),
               "rank %d: %s: %s", r, tutti_status_name(st), msg);
    TT_FAIL_IF(st == TUTTI_ERR_TIMEOUT || tt_now_ms() - t0 > 8000, "rank %d: %s after %lld ms: %s", r,
               tutti_status_name(st), (long long)(tt_now_ms() - t0), msg);
    memset(b, 0, sizeof b);
    st = tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st == TUTTI_SUCCESS, "rank %d: the second call succeeded on a failed communicator", r);
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(zero_count_call_is_paired_over_shm)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(3, zero_count_meets_a_real_call, NULL, 60);
    tt_run_ranks(2, zero_count_meets_a_real_call, NULL, 60);
}
END_TEST

START_TEST(zero_count_call_is_paired_over_tcp)
{
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(3, zero_count_meets_a_real_call, NULL, 60);
    tt_run_ranks(2, zero_count_meets_a_real_call, NULL, 60);
}
END_TEST

/* Every collective with count 0 on every rank, then a real call: the
 * empty calls agree, take their sequence numbers, and the data is right. */
static int empty_calls_then_a_real_one(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float x = (float)(r + 1), y = 0;
    float *big = calloc((size_t)p, sizeof *big);
    tutti_status_t st = TUTTI_SUCCESS;
    for (int round = 0; round < 3 && !st; round++) {
        st = tutti_allreduce(&x, &y, 0, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        st = st ? st : tutti_reduce_scatter(&x, &y, 0, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        st = st ? st : tutti_allgather(&x, big, 0, TUTTI_FP32, comm, NULL);
        st = st ? st : tutti_broadcast(&x, &y, 0, TUTTI_FP32, 0, comm, NULL);
        st = st ? st : tutti_reduce(&x, &y, 0, TUTTI_FP32, TUTTI_AVG, p - 1, comm, NULL);
        st = st ? st : tutti_alltoall(&x, big, 0, TUTTI_FP32, comm, NULL);
        if (p > 1 && !st) /* a ring of empty messages */
            st = r % 2 == 0 ? tutti_send(&x, 0, TUTTI_FP32, (r + 1) % p, comm, NULL)
                            : tutti_recv(&y, 0, TUTTI_FP32, (r + p - 1) % p, comm, NULL);
        if (p > 1 && !st)
            st = r % 2 == 0 ? tutti_recv(&y, 0, TUTTI_FP32, (r + p - 1) % p, comm, NULL)
                            : tutti_send(&x, 0, TUTTI_FP32, (r + 1) % p, comm, NULL);
    }
    TT_FAIL_IF(st, "rank %d: empty calls: %s", r, tutti_comm_last_error(comm));
    st = tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st || y != (float)(p * (p + 1) / 2), "rank %d: allreduce after empty calls: %g: %s", r,
               (double)y, tutti_comm_last_error(comm));
    free(big);
    return 0;
}

START_TEST(empty_calls_agree_and_keep_the_sequence)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(1, empty_calls_then_a_real_one, NULL, 60);
    tt_run_ranks(2, empty_calls_then_a_real_one, NULL, 60);
    tt_run_ranks(4, empty_calls_then_a_real_one, NULL, 60);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(3, empty_calls_then_a_real_one, NULL, 60);
}
END_TEST

/* Rank 2 names another root than the others. The ranks that finish the
 * broadcast learn of the mismatch at their next call at the latest: every
 * rank gets TUTTI_ERR_MISMATCH, none a peer failure. */
static int wrong_root(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    float a[N], b[N];
    memset(a, 0, sizeof a);
    tutti_status_t st = tutti_broadcast(a, b, N, TUTTI_FP32, r == 2 ? 1 : 0, comm, NULL);
    if (st == TUTTI_SUCCESS)
        st = tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    const char *msg = tutti_comm_last_error(comm);
    TT_FAIL_IF(st != TUTTI_ERR_MISMATCH || !strstr(msg, "root 1") || !strstr(msg, "root 0"),
               "rank %d: %s: %s", r, tutti_status_name(st), msg);
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(a_wrong_root_is_a_mismatch_for_every_rank)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(3, wrong_root, NULL, 60);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(3, wrong_root, NULL, 60);
}
END_TEST

/* Rank 2 skips the last call and destroys: the others learn at once (not
 * at the timeout), and so does rank 2. */
static int skip_and_destroy(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    float a[N], b[N];
    memset(a, 0, sizeof a);
    TT_FAIL_IF(tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL), "rank %d: first call: %s", r,
               tutti_comm_last_error(comm));
    int64_t t0 = tt_now_ms();
    if (r == 2) {
        tutti_status_t st = tutti_comm_destroy(comm);
        TT_FAIL_IF(st == TUTTI_SUCCESS || tt_now_ms() - t0 > 5000,
                   "rank 2: destroy gave %s after %lld ms: %s", tutti_status_name(st),
                   (long long)(tt_now_ms() - t0), tutti_comm_last_error(NULL));
        return -1;
    }
    tutti_status_t st = tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    const char *msg = tutti_comm_last_error(comm);
    TT_FAIL_IF(st != TUTTI_ERR_MISMATCH ||
                   !strstr(msg, "rank 2 called tutti_comm_destroy after 1 collective") ||
                   tt_now_ms() - t0 > 5000,
               "rank %d: %s after %lld ms: %s", r, tutti_status_name(st), (long long)(tt_now_ms() - t0), msg);
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(a_rank_that_destroys_early_is_noticed_at_once)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(3, skip_and_destroy, NULL, 60);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(4, skip_and_destroy, NULL, 60);
}
END_TEST

/* Which ranks have given up, and whether the slow rank is done: shared
 * by the forked ranks. */
typedef struct {
    volatile int gave_up[4];
    volatile int slow_done;
} late_t;

/* Spins (a few seconds at most) until flag is set. */
static void wait_flag(volatile int *flag)
{
    for (int64_t t0 = tt_now_ms(); !*flag && tt_now_ms() - t0 < 20000;)
        usleep(1000);
}

/* Reduce #1 to rank 1 is done on every other rank (they only send to it),
 * rank 2 destroys, and the others give up in all-reduce #2 while rank 1
 * has not yet made #1. News of those give-ups is about #2: rank 1's #1
 * must still succeed (its data is there), and its #2 fail as a mismatch.
 * The others keep their connections until rank 1 is done, so what #1
 * needs is not torn down under it. */
static int slow_rank_finishes_its_call(tutti_comm_t comm, int r, int p, void *arg)
{
    late_t *late = arg;
    float a[N], b[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)(r + 1);
    TT_FAIL_IF(tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL), "rank %d: first call: %s", r,
               tutti_comm_last_error(comm));
    if (r == 1) {
        for (int q = 0; q < p; q++) /* news of every give-up has had time to come */
            if (q != 1 && q != 2)
                wait_flag(&late->gave_up[q]);
        usleep(300 * 1000);
        tutti_status_t st = tutti_reduce(a, b, N, TUTTI_FP32, TUTTI_SUM, 1, comm, NULL);
        TT_FAIL_IF(st != TUTTI_SUCCESS || b[0] != (float)(p * (p + 1) / 2),
                   "rank 1: reduce #1, which every rank finished, gave %s (b[0] %g): %s",
                   tutti_status_name(st), (double)b[0], tutti_comm_last_error(comm));
        st = tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        late->slow_done = 1;
        TT_FAIL_IF(st != TUTTI_ERR_MISMATCH, "rank 1: all-reduce #2 gave %s: %s", tutti_status_name(st),
                   tutti_comm_last_error(comm));
        tutti_comm_abort(comm);
        return -1;
    }
    TT_FAIL_IF(tutti_reduce(a, b, N, TUTTI_FP32, TUTTI_SUM, 1, comm, NULL), "rank %d: reduce #1: %s", r,
               tutti_comm_last_error(comm));
    tutti_status_t st =
        r == 2 ? tutti_comm_destroy(comm) : tutti_allreduce(a, b, N, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    late->gave_up[r] = 1;
    wait_flag(&late->slow_done);
    TT_FAIL_IF(st == TUTTI_SUCCESS, "rank %d: the call after reduce #1 succeeded", r);
    if (r != 2)
        tutti_comm_abort(comm);
    return -1;
}

/* 0: direct connects every pair in #0, so the slow rank's #1 needs none;
 * 1: the ring leaves pair (1, 3), which the binomial reduce to rank 1
 * uses, to be made in #1, after the news of the give-ups came. */
START_TEST(news_of_a_later_call_leaves_an_earlier_one_alone)
{
    static const char *const first[] = {"direct", "ring"};
    late_t *late = mmap(NULL, sizeof *late, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(late, MAP_FAILED);
    /* binomial's senders never wait for the root */
    setenv("TUTTI_ALGO_ALLREDUCE", first[_i], 1);
    setenv("TUTTI_ALGO_REDUCE", "binomial", 1);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(4, slow_rank_finishes_its_call, late, 60);
    memset(late, 0, sizeof *late);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(3, slow_rank_finishes_its_call, late, 60);
    unsetenv("TUTTI_ALGO_ALLREDUCE");
    unsetenv("TUTTI_ALGO_REDUCE");
    munmap(late, sizeof *late);
}
END_TEST

/* What each rank of a set-up-only job saw. */
typedef struct {
    int status;
    int64_t ms;
    char msg[512];
} joined_t;

/* Starts p ranks that only join and leave, rank r with var set to
 * values[r] (NULL: unset); out[r] gets what its tutti_comm_init said. */
static void join_with(int p, const char *var, const char *const *values, joined_t *out)
{
    tutti_unique_id_t id;
    ck_assert_int_eq(tutti_get_unique_id(&id), TUTTI_SUCCESS);
    pid_t pids[8];
    int codes[8];
    fflush(stderr);
    for (int r = 0; r < p; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            if (values[r])
                setenv(var, values[r], 1);
            else
                unsetenv(var);
            tutti_comm_t comm;
            int64_t t0 = tt_now_ms();
            out[r].status = tutti_comm_init(&comm, p, r, &id, NULL);
            out[r].ms = tt_now_ms() - t0;
            snprintf(out[r].msg, sizeof out[r].msg, "%s", tutti_comm_last_error(NULL));
            if (out[r].status == TUTTI_SUCCESS)
                tutti_comm_destroy(comm);
            _exit(0);
        }
    }
    ck_assert_msg(!tt_wait_ranks(p, pids, codes, 60), "set-up did not end");
}

/* Every rank refuses at once, naming the variable and both values. */
static void settings_must_agree(const char *transports, const char *var, const char *mine, const char *theirs)
{
    setenv("TUTTI_TRANSPORTS", transports, 1);
    joined_t *out = mmap(NULL, 4 * sizeof *out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(out, MAP_FAILED);
    const char *values[3] = {mine, theirs, mine};
    join_with(3, var, values, out);
    for (int r = 0; r < 3; r++) {
        const char *m = out[r].msg;
        ck_assert_msg(out[r].status == TUTTI_ERR_CONFIG && out[r].ms < 8000 && strstr(m, var) &&
                          strstr(m, "rank 1") && strstr(m, theirs) && strstr(m, mine) &&
                          !strstr(m, "cuda_ipc"),
                      "%s, rank %d: %s after %lld ms: %s", transports, r, tutti_status_name(out[r].status),
                      (long long)out[r].ms, m);
    }
    munmap(out, 4 * sizeof *out);
}

START_TEST(pipeline_must_agree_over_tcp)
{
    settings_must_agree("tcp", "TUTTI_PIPELINE", "4", "2");
}
END_TEST

START_TEST(pipeline_must_agree_over_shm)
{
    settings_must_agree("cuda_ipc,shm,tcp", "TUTTI_PIPELINE", "4", "2");
}
END_TEST

START_TEST(shm_slots_must_agree_over_shm)
{
    settings_must_agree("shm,tcp", "TUTTI_SHM_SLOT_BYTES", "262144", "131072");
    settings_must_agree("shm,tcp", "TUTTI_SHM_SLOTS", "2", "3");
}
END_TEST

START_TEST(shm_slots_may_differ_between_hosts)
{
    /* Ranks of different hosts never meet through shm. */
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_set_ranks_per_node(1);
    setenv("TUTTI_SHM_SLOT_BYTES", "128K", 1);
    tt_run_ranks(2, empty_calls_then_a_real_one, NULL, 60);
    tt_set_ranks_per_node(0);
    unsetenv("TUTTI_SHM_SLOT_BYTES");
}
END_TEST

int main(void)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    Suite *s = suite_create("pairing");
    TCase *tc = tcase_create("pairing");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, zero_count_call_is_paired_over_shm);
    tcase_add_test(tc, zero_count_call_is_paired_over_tcp);
    tcase_add_test(tc, empty_calls_agree_and_keep_the_sequence);
    tcase_add_test(tc, a_wrong_root_is_a_mismatch_for_every_rank);
    tcase_add_test(tc, a_rank_that_destroys_early_is_noticed_at_once);
    tcase_add_loop_test(tc, news_of_a_later_call_leaves_an_earlier_one_alone, 0, 2);
    tcase_add_test(tc, pipeline_must_agree_over_tcp);
    tcase_add_test(tc, pipeline_must_agree_over_shm);
    tcase_add_test(tc, shm_slots_must_agree_over_shm);
    tcase_add_test(tc, shm_slots_may_differ_between_hosts);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
