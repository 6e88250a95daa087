/* SPDX-License-Identifier: MIT */
/*
 * Communicator handles: a destroyed handle stays dead even when a new
 * communicator takes its place in memory, and a forked child can neither
 * run its parent's communicator nor, by destroying or aborting its copy,
 * disturb the parent's job.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "comm/star_impl.h"
#include "tests/lib/harness.h"

static tutti_comm_t one_rank_comm(void)
{
    tutti_unique_id_t id;
    tutti_comm_t comm = NULL;
    ck_assert_int_eq(tutti_get_unique_id(&id), TUTTI_SUCCESS);
    ck_assert_int_eq(tutti_comm_init(&comm, 1, 0, &id, NULL), TUTTI_SUCCESS);
    return comm;
}

START_TEST(destroyed_handle_stays_dead)
{
    /* Each round destroys a communicator and makes another of the same
     * size, which the allocator tends to place where the old one was. */
    for (int round = 0; round < 16; round++) {
        tutti_comm_t old = one_rank_comm();
        ck_assert_int_eq(tutti_comm_destroy(old), TUTTI_SUCCESS);
        tutti_comm_t fresh = one_rank_comm();
        int rank = -1;
        ck_assert_msg(tutti_comm_rank(old, &rank) == TUTTI_ERR_INVALID_ARG,
                      "round %d: the destroyed handle works again (new communicator %s)", round,
                      fresh == old ? "has the same handle" : "has another handle");
        ck_assert_int_eq(tutti_comm_destroy(old), TUTTI_ERR_INVALID_ARG);
        ck_assert_int_eq(tutti_comm_abort(old), TUTTI_ERR_INVALID_ARG);
        float x = 1, y = 0;
        ck_assert_int_eq(tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, old, NULL), TUTTI_ERR_INVALID_ARG);
        ck_assert_int_eq(tutti_comm_rank(fresh, &rank), TUTTI_SUCCESS);
        ck_assert_int_eq(tutti_comm_destroy(fresh), TUTTI_SUCCESS);
    }
}
END_TEST

START_TEST(garbage_handles_are_refused)
{
    int rank;
    ck_assert_int_eq(tutti_comm_rank(NULL, &rank), TUTTI_ERR_INVALID_ARG);
    ck_assert_int_eq(tutti_comm_rank((tutti_comm_t)(uintptr_t)0x1234567, &rank), TUTTI_ERR_INVALID_ARG);
    ck_assert_int_eq(tutti_comm_rank((tutti_comm_t)&rank, &rank), TUTTI_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "destroyed"));
}
END_TEST

/* The communicators tutti_comm_split makes are handles like any other: a
 * destroyed child stays dead when the next split's takes its place. */
static int split_children(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    for (int round = 0; round < 8; round++) {
        tutti_comm_t old = NULL, fresh = NULL;
        TT_FAIL_IF(tutti_comm_split(comm, 0, -r, &old), "split: %s", tutti_comm_last_error(comm));
        TT_FAIL_IF(((uintptr_t)old & 1u) == 0, "a split's child is an address, not a handle");
        TT_FAIL_IF(tutti_comm_destroy(old), "destroy: %s", tutti_comm_last_error(NULL));
        TT_FAIL_IF(tutti_comm_split(comm, 0, -r, &fresh), "split: %s", tutti_comm_last_error(comm));
        int rank = -1, x = 1, y = 0;
        TT_FAIL_IF(tutti_comm_rank(old, &rank) != TUTTI_ERR_INVALID_ARG,
                   "round %d: the destroyed child works again", round);
        TT_FAIL_IF(tutti_allreduce(&x, &y, 1, TUTTI_INT32, TUTTI_SUM, old, NULL) != TUTTI_ERR_INVALID_ARG,
                   "round %d: the destroyed child ran a collective", round);
        TT_FAIL_IF(tutti_comm_rank(fresh, &rank) || rank != p - 1 - r, "the new child's rank is %d", rank);
        TT_FAIL_IF(tutti_allreduce(&x, &y, 1, TUTTI_INT32, TUTTI_SUM, fresh, NULL) || y != p, "allreduce: %d",
                   y);
        TT_FAIL_IF(tutti_comm_destroy(fresh), "destroy: %s", tutti_comm_last_error(NULL));
    }
    return 0;
}

START_TEST(split_children_are_handles_too)
{
    tt_run_ranks(3, split_children, NULL, 60);
}
END_TEST

typedef enum { CHILD_DESTROYS, CHILD_ABORTS, CHILD_JUST_EXITS } child_end_t;

/* What a forked child of rank 0 does with its parent's communicator;
 * exits 0 when every call was refused as it should be. */
static void child_of_rank0(tutti_comm_t comm, child_end_t end)
{
    float x = 5, y = 0;
    int rank = -1, bad = 0;
    tutti_status_t st = tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    const char *msg = tutti_comm_last_error(comm);
    if (st != TUTTI_ERR_INVALID_ARG || !strstr(msg, "fork")) {
        fprintf(stderr, "child: allreduce gave %s: %s\n", tutti_status_name(st), msg);
        bad = 1;
    }
    if (tutti_barrier(comm, NULL) != TUTTI_ERR_INVALID_ARG ||
        tutti_comm_rank(comm, &rank) != TUTTI_ERR_INVALID_ARG) {
        fprintf(stderr, "child: barrier or rank was not refused\n");
        bad = 1;
    }
    tutti_comm_t part = (tutti_comm_t)1;
    st = tutti_comm_split(comm, 0, 0, &part);
    if (st != TUTTI_ERR_INVALID_ARG || part != NULL || !strstr(tutti_comm_last_error(NULL), "fork")) {
        fprintf(stderr, "child: split gave %s: %s\n", tutti_status_name(st), tutti_comm_last_error(NULL));
        bad = 1;
    }
    if (end == CHILD_DESTROYS && tutti_comm_destroy(comm) != TUTTI_SUCCESS) {
        fprintf(stderr, "child: destroying its copy failed: %s\n", tutti_comm_last_error(NULL));
        bad = 1;
    }
    if (end == CHILD_ABORTS && tutti_comm_abort(comm) != TUTTI_SUCCESS)
        bad = 1;
    _exit(bad);
}

static int fork_then_collect(tutti_comm_t comm, int r, int p, void *arg)
{
    child_end_t end = *(const child_end_t *)arg;
    float x = (float)(r + 1), y = 0;
    if (r == 0) {
        fflush(stderr);
        pid_t child = fork();
        if (child == 0)
            child_of_rank0(comm, end);
        int status;
        TT_FAIL_IF(waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0,
                   "the forked child's calls were not refused (status %d)", status);
    }
    for (int i = 0; i < 3; i++) {
        tutti_status_t st = tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        TT_FAIL_IF(st != TUTTI_SUCCESS, "rank %d: allreduce %d after the child: %s: %s", r, i,
                   tutti_status_name(st), tutti_comm_last_error(comm));
        TT_FAIL_IF(y != (float)(p * (p + 1) / 2), "rank %d: allreduce %d gave %g", r, i, (double)y);
    }
    return 0;
}

static void forked_child(const char *transports, child_end_t end)
{
    setenv("TUTTI_TRANSPORTS", transports, 1);
    setenv("TUTTI_TIMEOUT", "8", 1);
    tt_run_ranks(2, fork_then_collect, &end, 40);
    tt_run_ranks(3, fork_then_collect, &end, 40);
    unsetenv("TUTTI_TIMEOUT");
}

START_TEST(forked_child_destroys_its_copy_over_shm)
{
    forked_child("shm,tcp", CHILD_DESTROYS);
}
END_TEST

START_TEST(forked_child_aborts_its_copy_over_shm)
{
    forked_child("shm,tcp", CHILD_ABORTS);
}
END_TEST

START_TEST(forked_child_destroys_its_copy_over_tcp)
{
    forked_child("tcp", CHILD_DESTROYS);
}
END_TEST

START_TEST(forked_child_aborts_its_copy_over_tcp)
{
    forked_child("tcp", CHILD_ABORTS);
}
END_TEST

START_TEST(forked_child_exits_without_a_word)
{
    forked_child("tcp", CHILD_JUST_EXITS);
}
END_TEST

/* White box: rank 0 forks while its star thread answers another rank's
 * offer (the mail lock held, as the handler runs under it). The child's
 * copy of that lock stays held for good: its abort or destroy must not
 * take it, nor wait for a thread it does not have. */
static int fork_while_answering(tutti_comm_t handle, int r, int p, void *arg)
{
    child_end_t end = *(const child_end_t *)arg;
    (void)p;
    if (r == 0) {
        tt_star_t *star = tt_comm_lookup(handle, NULL)->bs.star;
        fflush(stderr);
        pthread_mutex_lock(&star->mail_lock);
        pid_t child = fork();
        if (child == 0)
            _exit(end == CHILD_ABORTS ? tutti_comm_abort(handle) != TUTTI_SUCCESS
                                      : tutti_comm_destroy(handle) != TUTTI_SUCCESS);
        pthread_mutex_unlock(&star->mail_lock);
        int code;
        int hung = tt_wait_ranks(1, &child, &code, 10); /* kills it at the deadline */
        TT_FAIL_IF(hung || code != 0, "the forked child's %s %s", end == CHILD_ABORTS ? "abort" : "destroy",
                   hung ? "hung on a lock its parent's star thread held at the fork" : "failed");
    }
    float x = 1, y = 0;
    TT_FAIL_IF(tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, handle, NULL), "rank %d: allreduce: %s", r,
               tutti_comm_last_error(handle));
    return 0;
}

START_TEST(a_child_forked_mid_answer_ends_its_copy)
{
    child_end_t ends[] = {CHILD_ABORTS, CHILD_DESTROYS};
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(2, fork_while_answering, &ends[_i], 40);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("handles");
    TCase *tc = tcase_create("handles");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, destroyed_handle_stays_dead);
    tcase_add_test(tc, garbage_handles_are_refused);
    tcase_add_test(tc, split_children_are_handles_too);
    tcase_add_test(tc, forked_child_destroys_its_copy_over_shm);
    tcase_add_test(tc, forked_child_aborts_its_copy_over_shm);
    tcase_add_test(tc, forked_child_destroys_its_copy_over_tcp);
    tcase_add_test(tc, forked_child_aborts_its_copy_over_tcp);
    tcase_add_test(tc, forked_child_exits_without_a_word);
    tcase_add_loop_test(tc, a_child_forked_mid_answer_ends_its_copy, 0, 2);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
