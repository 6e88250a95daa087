/* SPDX-License-Identifier: MIT */
/*
 * tutti_comm_init_roots: a join spread over several roots. Each root's id
 * is made inside the process of a rank of its block (not always the
 * block's first) and handed to the others through shared memory, as an
 * application would all-gather them; every rank then joins, and the
 * communicator must work, with each root having admitted only its block
 * (rank 0 also the other roots). A root that never serves makes every
 * rank fail within the timeout, rank 0 naming the ranks missing.
 */
#include <check.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/comm.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "tests/lib/harness.h"

#define MAXR 16

typedef struct {
    _Atomic int made[MAXR];
    tutti_unique_id_t ids[MAXR];
    char why[MAXR][256];
} shared_t;

typedef struct {
    int nranks, nids;
    int server[MAXR];  /* the rank whose process makes ids[i] */
    int absent;        /* a root that makes its id and then leaves (-1: none) */
    int odd, odd_nids; /* a rank that passes odd_nids ids instead (-1: none) */
} plan_t;

static int wait_ids(shared_t *sh, int nids)
{
    int64_t until = tt_now_ms() + 10000;
    for (int i = 0; i < nids; i++)
        while (!atomic_load(&sh->made[i]))
            if (tt_now_ms() > until)
                return -1;
            else
                sched_yield();
    return 0;
}

/* Rank r: makes the ids it serves, joins, checks an all-reduce and what it
 * admitted (exit 0), or, planned to fail, that it failed (exit 0 too). */
static int rank_main(const plan_t *p, shared_t *sh, int r)
{
    for (int i = 0; i < p->nids; i++)
        if (p->server[i] == r) {
            if (tutti_get_unique_id(&sh->ids[i]))
                return 2;
            atomic_store(&sh->made[i], 1);
        }
    if (p->absent >= 0 && p->server[p->absent] == r)
        return 0; /* leaves without joining: its root never serves */
    if (wait_ids(sh, p->nids))
        return 3;
    tutti_comm_params_t params = {.field_mask = TUTTI_PARAM_TIMEOUT_MS, .timeout_ms = 3000};
    tutti_comm_t comm;
    tutti_status_t st =
        tutti_comm_init_roots(&comm, p->nranks, r, r == p->odd ? p->odd_nids : p->nids, sh->ids, &params);
    if (p->absent >= 0 || p->odd >= 0) {
        snprintf(sh->why[r], sizeof sh->why[r], "%s", st ? tutti_comm_last_error(NULL) : "joined");
        return st ? 0 : 4;
    }
    if (st) {
        snprintf(sh->why[r], sizeof sh->why[r], "init: %s", tutti_comm_last_error(NULL));
        return 5;
    }
    int mine = r + 1, sum = 0;
    if (tutti_allreduce(&mine, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL) ||
        sum != p->nranks * (p->nranks + 1) / 2) {
        snprintf(sh->why[r], sizeof sh->why[r], "allreduce gave %d: %s", sum, tutti_comm_last_error(comm));
        return 6;
    }
    int root = tt_root_of(r, p->nranks, p->nids), want = 0;
    if (r == 0)
        want = tt_root_size(0, p->nranks, p->nids) - 1 + p->nids - 1;
    else if (p->server[root] == r)
        want = tt_root_size(root, p->nranks, p->nids) - 1;
    int got = tt_comm_lookup(comm, NULL)->bs.admitted;
    if (got != want) {
        snprintf(sh->why[r], sizeof sh->why[r], "admitted %d connections, not %d", got, want);
        return 7;
    }
    return tutti_comm_destroy(comm) ? 8 : 0;
}

static shared_t *run(const plan_t *p)
{
    shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    pid_t pids[MAXR];
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < p->nranks; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            _exit(rank_main(p, sh, r));
    }
    for (int r = 0; r < p->nranks; r++) {
        int status;
        ck_assert_int_eq(waitpid(pids[r], &status, 0), pids[r]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d of %d (%d roots) exited %d: %s",
                      r, p->nranks, p->nids, WIFEXITED(status) ? WEXITSTATUS(status) : -1, sh->why[r]);
    }
    return sh;
}

/* 10 ranks, 3 roots (blocks 0-3, 4-6, 7-9): block 1's id is made by its
 * second rank, block 2's by its first. */
START_TEST(three_roots_each_admit_their_block)
{
    plan_t p = {.nranks = 10, .nids = 3, .server = {0, 5, 7}, .absent = -1, .odd = -1};
    ck_assert_int_eq(tt_root_first(1, 10, 3), 4);
    ck_assert_int_eq(tt_root_first(2, 10, 3), 7);
    munmap(run(&p), sizeof(shared_t));
}
END_TEST

/* Every rank a root of itself; and one root, through the same call. */
START_TEST(a_root_per_rank_and_one_root)
{
    plan_t every = {.nranks = 5, .nids = 5, .server = {0, 1, 2, 3, 4}, .absent = -1, .odd = -1};
    munmap(run(&every), sizeof(shared_t));
    plan_t one = {.nranks = 4, .nids = 1, .server = {0}, .absent = -1, .odd = -1};
    munmap(run(&one), sizeof(shared_t));
}
END_TEST

/* Block 1's root (rank 4) makes its id and leaves: every rank fails
 * within the timeout, rank 0 naming the ranks that never came. */
START_TEST(a_root_that_never_serves_fails_every_rank_in_time)
{
    plan_t p = {.nranks = 6, .nids = 2, .server = {0, 4}, .absent = 1, .odd = -1};
    int64_t t0 = tt_now_ms();
    shared_t *sh = run(&p);
    ck_assert_msg(tt_now_ms() - t0 < 9000, "took %lld ms", (long long)(tt_now_ms() - t0));
    ck_assert_msg(strstr(sh->why[0], "3 of 6 ranks joined") && strstr(sh->why[0], "missing: ranks 3-5"), "%s",
                  sh->why[0]);
    for (int r = 1; r < 6; r++) {
        ck_assert_msg(r == 4 || strcmp(sh->why[r], "joined") != 0, "rank %d: %s", r, sh->why[r]);
        fprintf(stderr, "rank %d: %s\n", r, sh->why[r]);
    }
    munmap(sh, sizeof *sh);
}
END_TEST

/* tutti-run --roots 3 with 9 ranks: ranks 0, 3 and 6 serve, each
 * admitting its block (rank 0 also the two other roots). */
START_TEST(tutti_run_spreads_the_join)
{
    static char out[65536];
    char dir[] = "/tmp/tutti-roots-XXXXXX", args[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *builddir = getenv("TT_BUILDDIR") ? getenv("TT_BUILDDIR") : ".";
    snprintf(args, sizeof args, "-n 9 --roots 3 '%s/tests/lib/rank-helper' check '%s'", builddir, dir);
    setenv("TUTTI_LOG", "info", 1);
    setenv("TUTTI_LOG_SUBSYS", "init", 1);
    int rc = tt_run_tool("tutti-run", args, out, sizeof out);
    unsetenv("TUTTI_LOG");
    unsetenv("TUTTI_LOG_SUBSYS");
    ck_assert_msg(rc == 0, "%s", out);
    static const char *const want[] = {"rank 0 of 9 ready", "rank 3 of 9 ready", "rank 6 of 9 ready"};
    static const int admitted[] = {4, 2, 2};
    for (int i = 0; i < 3; i++) {
        const char *line = strstr(out, want[i]);
        char says[64];
        snprintf(says, sizeof says, "admitted %d connections", admitted[i]);
        ck_assert_msg(line && strstr(line, says) && strstr(line, says) < strchr(line, '\n'), "%s: %s",
                      want[i], out);
    }
    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

/* Rank 4 passes one id where the others pass two: it joins rank 0 as a
 * member of rank 0's block, where rank 0 waits for block 1's root. Rank 0
 * fails the job at once, saying so, and rank 4 learns why at once. */
START_TEST(ranks_that_pass_other_ids_are_told_at_once)
{
    plan_t p = {.nranks = 6, .nids = 2, .server = {0, 3}, .absent = -1, .odd = 4, .odd_nids = 1};
    int64_t t0 = tt_now_ms();
    shared_t *sh = run(&p);
    ck_assert_msg(tt_now_ms() - t0 < 9000, "took %lld ms", (long long)(tt_now_ms() - t0));
    const char *why = "rank 4 joined as a member of this root's block, but this root counts 2 roots";
    ck_assert_msg(strstr(sh->why[0], why), "rank 0: %s", sh->why[0]);
    ck_assert_msg(strstr(sh->why[4], why), "rank 4: %s", sh->why[4]);
    for (int r = 1; r < 6; r++)
        ck_assert_msg(strcmp(sh->why[r], "joined") != 0, "rank %d joined", r);
    munmap(sh, sizeof *sh);
}
END_TEST

START_TEST(bad_arguments_are_named)
{
    tutti_unique_id_t ids[2];
    tutti_comm_t comm = (tutti_comm_t)1;
    ck_assert_int_eq(tutti_get_unique_id(&ids[0]), TUTTI_SUCCESS);
    memset(&ids[1], 0x5a, sizeof ids[1]);
    ck_assert_int_eq(tutti_comm_init_roots(&comm, 4, 0, 0, ids, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_ptr_null(comm);
    ck_assert_int_eq(tutti_comm_init_roots(&comm, 2, 0, 3, ids, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_msg(strstr(tutti_comm_last_error(NULL), "nids: 3 is outside 1..2"), "%s",
                  tutti_comm_last_error(NULL));
    ck_assert_int_eq(tutti_comm_init_roots(&comm, 4, 0, 2, NULL, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_int_eq(tutti_comm_init_roots(&comm, 4, 0, 2, ids, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_msg(strstr(tutti_comm_last_error(NULL), "ids[1]: not made by tutti_get_unique_id"), "%s",
                  tutti_comm_last_error(NULL));
    tt_id_t tid;
    memcpy(&tid, ids[0].internal, sizeof tid);
    tt_bootstrap_drop_listener(tid.key);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("roots");
    TCase *tc = tcase_create("roots");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, three_roots_each_admit_their_block);
    tcase_add_test(tc, a_root_per_rank_and_one_root);
    tcase_add_test(tc, a_root_that_never_serves_fails_every_rank_in_time);
    tcase_add_test(tc, tutti_run_spreads_the_join);
    tcase_add_test(tc, ranks_that_pass_other_ids_are_told_at_once);
    tcase_add_test(tc, bad_arguments_are_named);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
