/* SPDX-License-Identifier: MIT */
/*
 * Communicators that take their parent's connections (src/comm/lend.c):
 * a shared split or shrink uses the pairs its parent holds and makes only
 * the others, over tcp and shm; calls on the two alternate with exact
 * results; destroying either first leaves the other working; calls that
 * overlap on a shared connection fail as a mismatch naming the other
 * communicator, never with a wrong result; a revoked parent shares nothing,
 * nor does a parent whose borrower was revoked or failed (a rank killed).
 */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/clock.h"
#include "comm/handle.h"
#include "tests/lib/harness.h"

/* How many of child's connected peers use the very connection parent
 * holds to the same rank (white box); rank_of: parent's rank of each child rank. */
static int borrowed_pairs(tutti_comm_t child_handle, tutti_comm_t parent_handle, const int *rank_of,
                          int *connected)
{
    tt_comm_t *c = tt_comm_lookup(child_handle, NULL), *parent = tt_comm_lookup(parent_handle, NULL);
    int n = 0;
    for (int i = 0; c && parent && i < c->nconnected; i++) {
        int q = c->connected[i];
        n += c->peers[q].conn == parent->peers[rank_of[q]].conn;
    }
    *connected = c ? c->nconnected : -1;
    return n;
}

/* Rank i of a communicator made from one of p ranks: the same rank, or reversed. */
static int same[8] = {0, 1, 2, 3, 4, 5, 6, 7};

/* An all-reduce of 64 KiB whose every element depends on every rank. */
static int sum_check(tutti_comm_t comm, int r, int p, int salt, const char *what)
{
    enum { N = 16384 };
    static int32_t in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (r + 1) * (i % 97 + salt);
    tutti_status_t st = tutti_allreduce(in, out, N, TUTTI_INT32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st, "rank %d: %s all-reduce: %s", r, what, tutti_comm_last_error(comm));
    for (int i = 0; i < N; i++)
        TT_FAIL_IF(out[i] != p * (p + 1) / 2 * (i % 97 + salt), "rank %d: %s all-reduce: [%d] = %d", r, what,
                   i, out[i]);
    return 0;
}

/* The start several cases share: an all-reduce on comm (which connects its
 * ring), a shared split keeping comm's order, an all-reduce on the child. */
static int shared_child(tutti_comm_t comm, int r, int p, tutti_comm_t *child)
{
    TT_FAIL_IF(sum_check(comm, r, p, 1, "parent"), "parent");
    TT_FAIL_IF(tutti_comm_split_flags(comm, 0, 0, TUTTI_SPLIT_SHARE, child), "rank %d: split: %s", r,
               tutti_comm_last_error(comm));
    return sum_check(*child, r, p, 2, "child");
}

typedef struct {
    const char *transports;
    unsigned flags; /* of the split */
} split_case_t;

/* The ring all-reduce connects each rank's two neighbours in the parent;
 * the child (keys reversed, so the same ring backwards) takes every one of
 * them, makes no descriptor, and still makes its own pairs for a send
 * across the ring. Without the flag, the same child makes its own. */
static int split_body(tutti_comm_t comm, int r, int p, void *arg)
{
    const split_case_t *c = arg;
    TT_FAIL_IF(sum_check(comm, r, p, 1, "parent"), "parent");
    tutti_comm_t child = NULL;
    tutti_status_t st = tutti_comm_split_flags(comm, 0, -r, c->flags, &child);
    TT_FAIL_IF(st, "rank %d: split: %s", r, tutti_comm_last_error(comm));
    int crank = p - 1 - r, connected, reversed[8];
    for (int i = 0; i < p; i++)
        reversed[i] = p - 1 - i;
    TT_FAIL_IF(sum_check(child, crank, p, 2, "child"), "child");
    int borrowed = borrowed_pairs(child, comm, reversed, &connected);
    int shared = c->flags & TUTTI_SPLIT_SHARE;
    TT_FAIL_IF(connected != (p > 2 ? 2 : 1), "rank %d: the child connected %d peers", r, connected);
    TT_FAIL_IF(borrowed != (shared ? connected : 0), "rank %d: %d of the child's %d pairs are its parent's",
               r, borrowed, connected);
    if (p >=
        4) { /* child ranks 0 and 2: not ring neighbours (the split's all-gathers may have connected them) */
        int32_t v = crank == 0 ? 4242 : -1;
        int other = crank == 0 ? 2 : 0,
            parent_had = tt_comm_lookup(comm, NULL)->peers[reversed[other]].ops != NULL;
        if (crank == 0)
            st = tutti_send(&v, 1, TUTTI_INT32, 2, child, NULL);
        else if (crank == 2)
            st = tutti_recv(&v, 1, TUTTI_INT32, 0, child, NULL);
        TT_FAIL_IF(st || (crank == 2 && v != 4242), "rank %d: send across the child: %s (%d)", r,
                   tutti_comm_last_error(child), v);
        int before = borrowed;
        borrowed = borrowed_pairs(child, comm, reversed, &connected);
        TT_FAIL_IF((crank == 0 || crank == 2) && borrowed - before != (shared && parent_had),
                   "rank %d: the send's pair %s its parent's, which %s it", r,
                   borrowed > before ? "is" : "is not", parent_had ? "had" : "did not have");
    }
    for (int round = 0; round < 6; round++) { /* calls alternate, never overlap */
        TT_FAIL_IF(sum_check(round % 2 ? comm : child, round % 2 ? r : crank, p, 3 + round, "alternating"),
                   "round %d", round);
    }
    TT_FAIL_IF(tutti_comm_destroy(child), "rank %d: destroying the child", r);
    return sum_check(comm, r, p, 9, "parent after the child");
}

static const split_case_t split_cases[] = {
    {"tcp", TUTTI_SPLIT_SHARE},
    {"shm", TUTTI_SPLIT_SHARE},
    {"tcp", 0},
};

START_TEST(shared_split_takes_the_parents_pairs)
{
    const split_case_t *c = &split_cases[_i / 3];
    int p = (int[]){2, 4, 5}[_i % 3];
    setenv("TUTTI_TRANSPORTS", c->transports, 1);
    setenv("TUTTI_ALGO_ALLREDUCE", "ring", 1);
    tt_run_ranks(p, split_body, (void *)c, 120);
    unsetenv("TUTTI_ALGO_ALLREDUCE");
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

/* The parent destroyed first (arg 0) or the child (arg 1): the other keeps
 * working over the connections they shared; nested shares too. */
static int destroy_body(tutti_comm_t comm, int r, int p, void *arg)
{
    int parent_first = arg == NULL;
    tutti_comm_t child = NULL, grand = NULL;
    TT_FAIL_IF(shared_child(comm, r, p, &child), "rank %d: the shared child", r);
    TT_FAIL_IF(tutti_comm_split_flags(child, 0, 0, TUTTI_SPLIT_SHARE, &grand), "rank %d: nested split", r);
    int connected;
    TT_FAIL_IF(sum_check(grand, r, p, 3, "grandchild") ||
                   borrowed_pairs(grand, comm, same, &connected) != connected,
               "rank %d: the grandchild does not use its grandparent's pairs", r);
    if (parent_first) {
        TT_FAIL_IF(tutti_comm_destroy(comm), "rank %d: destroying the parent", r);
        TT_FAIL_IF(sum_check(child, r, p, 4, "child after its parent"), "child");
        TT_FAIL_IF(tutti_comm_destroy(child), "rank %d: destroying the child", r);
        TT_FAIL_IF(sum_check(grand, r, p, 5, "grandchild after both"), "grandchild");
        TT_FAIL_IF(tutti_comm_destroy(grand), "rank %d: destroying the grandchild", r);
        return -1;
    }
    TT_FAIL_IF(tutti_comm_destroy(grand) || tutti_comm_destroy(child), "rank %d: destroying the children", r);
    return sum_check(comm, r, p, 6, "parent after its children");
}

START_TEST(shared_connections_outlive_either)
{
    setenv("TUTTI_TRANSPORTS", _i < 2 ? "tcp" : "shm", 1);
    tt_run_ranks(3, destroy_body, _i % 2 ? (void *)1 : NULL, 120);
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

/* Rank 0 calls the parent then the child, rank 1 the other way round: each
 * receives the other communicator's message on a shared connection. Both
 * must fail rather than add the wrong messages, the first to see it
 * naming the other communicator (OVERLAP_SEEN); the other may learn first
 * that its peer gave up (OVERLAP_TOLD). */
enum { OVERLAP_SEEN = 10, OVERLAP_TOLD };
static int overlap_body(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    TT_FAIL_IF(sum_check(comm, r, p, 1, "parent"), "parent");
    tutti_comm_t child = NULL;
    TT_FAIL_IF(tutti_comm_split_flags(comm, 0, 0, TUTTI_SPLIT_SHARE, &child), "rank %d: split", r);
    /* The worst case: the two calls' headers alike but for the communicator
     * (the parent made 3 calls: the all-reduce and the split's two all-gathers). */
    for (int i = 0; i < 3; i++)
        TT_FAIL_IF(sum_check(child, r, p, 2 + i, "child"), "child");
    tutti_comm_t first = r == 0 ? comm : child;
    int32_t in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = (first == comm ? 1000 : 0) + r + i;
    tutti_status_t st = tutti_allreduce(in, out, 256, TUTTI_INT32, TUTTI_SUM, first, NULL);
    TT_FAIL_IF(st == TUTTI_SUCCESS, "rank %d: the overlapping all-reduce succeeded: [0] = %d", r, out[0]);
    int seen = st == TUTTI_ERR_MISMATCH && strstr(tutti_comm_last_error(first), "another communicator");
    int told = st == TUTTI_ERR_PEER_FAILED || st == TUTTI_ERR_ABORTED;
    TT_FAIL_IF(!seen && !told, "rank %d: the overlapping all-reduce gave %s: %s", r, tutti_status_name(st),
               tutti_comm_last_error(first));
    tutti_comm_abort(child);
    tutti_comm_abort(comm);
    return seen ? OVERLAP_SEEN : OVERLAP_TOLD;
}

START_TEST(overlapping_calls_are_a_mismatch)
{
    setenv("TUTTI_TRANSPORTS", _i ? "shm" : "tcp", 1);
    pid_t pids[2];
    int codes[2];
    tt_spawn_ranks(2, overlap_body, NULL, pids);
    ck_assert_msg(tt_wait_ranks(2, pids, codes, 120) == 0, "the ranks did not end");
    unsetenv("TUTTI_TRANSPORTS");
    for (int r = 0; r < 2; r++)
        ck_assert_msg(codes[r] == OVERLAP_SEEN || codes[r] == OVERLAP_TOLD, "rank %d ended with %d", r,
                      codes[r]);
    ck_assert_msg(codes[0] == OVERLAP_SEEN || codes[1] == OVERLAP_SEEN,
                  "no rank named the other communicator");
}
END_TEST

/* Rank 3 leaves; the others shrink without it. Shared, the ring pairs 0-1
 * and 1-2 are the old communicator's and 2-0 is new; revoked first
 * (TUTTI_SHRINK_ABORT), nothing is shared. */
static _Atomic int *parents_done; /* shared by the forked ranks */

static int shrink_body(tutti_comm_t comm, int r, int p, void *arg)
{
    unsigned flags = (unsigned)(uintptr_t)arg;
    TT_FAIL_IF(sum_check(comm, r, p, 1, "parent"), "parent");
    /* A revoking shrink must not cut the others' all-reduce short. */
    atomic_fetch_add(parents_done, 1);
    while (atomic_load(parents_done) < p)
        usleep(1000);
    if (r == 3) { /* its destroy waits for the others' (a revocation ends it sooner) */
        tutti_comm_destroy(comm);
        return -1;
    }
    int three[1] = {3};
    tutti_comm_t next = NULL;
    tutti_status_t st = tutti_comm_shrink(comm, three, 1, flags, &next);
    TT_FAIL_IF(st, "rank %d: shrink: %s", r, tutti_comm_last_error(comm));
    TT_FAIL_IF(sum_check(next, r, p - 1, 2, "shrunk"), "shrunk");
    int connected, borrowed = borrowed_pairs(next, comm, same, &connected);
    int want = flags & TUTTI_SHRINK_ABORT ? 0 : r == 1 ? 2 : 1;
    TT_FAIL_IF(connected != 2 || borrowed != want, "rank %d: %d of %d pairs borrowed, want %d", r, borrowed,
               connected, want);
    TT_FAIL_IF(tutti_comm_destroy(next), "rank %d: destroy", r);
    return 0;
}

START_TEST(shared_shrink_takes_the_pairs_left)
{
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    setenv("TUTTI_ALGO_ALLREDUCE", "ring", 1);
    unsigned flags = TUTTI_SHRINK_SHARE | (_i ? TUTTI_SHRINK_ABORT : 0);
    parents_done =
        mmap(NULL, sizeof *parents_done, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(parents_done != MAP_FAILED);
    atomic_store(parents_done, 0);
    tt_run_ranks(4, shrink_body, (void *)(uintptr_t)flags, 120);
    munmap((void *)parents_done, sizeof *parents_done);
    unsetenv("TUTTI_ALGO_ALLREDUCE");
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

/* Rank 0 revokes a shared child between calls: the parent lends no more
 * (a revoked call may leave its messages on the connections they share),
 * so a second shared split connects rank 0's pairs afresh; both still work. */
static int revoked_body(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    tutti_comm_t child = NULL, again = NULL;
    TT_FAIL_IF(shared_child(comm, r, p, &child), "rank %d: the shared child", r);
    /* Rank 0 ends this all-reduce once every rank entered it, done with the child. */
    TT_FAIL_IF(sum_check(comm, r, p, 6, "parent before the revocation"), "parent");
    if (r == 0)
        TT_FAIL_IF(tutti_comm_revoke(child), "rank 0: revoke");
    TT_FAIL_IF(sum_check(comm, r, p, 3, "parent after the revocation"), "parent");
    TT_FAIL_IF(tutti_comm_split_flags(comm, 0, 0, TUTTI_SPLIT_SHARE, &again), "rank %d: second split", r);
    TT_FAIL_IF(sum_check(again, r, p, 4, "second child"), "second child");
    tt_comm_t *inner = tt_comm_lookup(again, NULL);
    for (int i = 0; i < inner->nconnected; i++) {
        int q = inner->connected[i];
        TT_FAIL_IF((r == 0 || q == 0) && inner->borrowed[q], "rank %d: its pair with rank %d is still lent",
                   r, q);
    }
    TT_FAIL_IF(tutti_comm_destroy(again), "rank %d: destroy", r);
    tutti_comm_destroy(child); /* revoked: waits for no one */
    return sum_check(comm, r, p, 5, "parent at the end");
}

START_TEST(a_revoked_borrower_ends_the_lending)
{
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    setenv("TUTTI_ALGO_ALLREDUCE", "ring", 1);
    tt_run_ranks(3, revoked_body, NULL, 120);
    unsetenv("TUTTI_ALGO_ALLREDUCE");
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

/* Rank 2 dies (SIGKILL) while a shared child is in use: the others' child
 * call names it; their parent, whose connections the failed child shared,
 * lends nothing to the shrink that follows, which works. */
static int killed_body(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    tutti_comm_t child = NULL, next = NULL;
    TT_FAIL_IF(shared_child(comm, r, p, &child), "rank %d: the shared child", r);
    if (r == 2)
        kill(getpid(), SIGKILL);
    int32_t x[64] = {0}, y[64];
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_allreduce(x, y, 64, TUTTI_INT32, TUTTI_SUM, child, NULL);
    TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED || !tt_named_as_dead(tutti_comm_last_error(child), 2) ||
                   tt_now_ms() - t0 > 5000,
               "rank %d: the child's call after the kill gave %s after %lld ms: %s", r, tutti_status_name(st),
               (long long)(tt_now_ms() - t0), tutti_comm_last_error(child));
    int two[1] = {2};
    TT_FAIL_IF(tutti_comm_shrink(comm, two, 1, TUTTI_SHRINK_SHARE, &next), "rank %d: shrink: %s", r,
               tutti_comm_last_error(comm));
    TT_FAIL_IF(sum_check(next, r, p - 1, 3, "shrunk"), "shrunk");
    int connected, borrowed = borrowed_pairs(next, comm, same, &connected);
    TT_FAIL_IF(borrowed, "rank %d: %d pairs of the failed child's parent lent", r, borrowed);
    TT_FAIL_IF(tutti_comm_destroy(next), "rank %d: destroy", r);
    tutti_comm_abort(child);
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(a_killed_rank_ends_the_lending)
{
    setenv("TUTTI_TRANSPORTS", _i ? "shm" : "tcp", 1);
    setenv("TUTTI_ALGO_ALLREDUCE", "ring", 1);
    pid_t pids[3];
    int codes[3];
    tt_spawn_ranks(3, killed_body, NULL, pids);
    ck_assert_msg(tt_wait_ranks(3, pids, codes, 120) == 0, "the ranks did not end");
    unsetenv("TUTTI_ALGO_ALLREDUCE");
    unsetenv("TUTTI_TRANSPORTS");
    ck_assert_msg(codes[0] == 0 && codes[1] == 0, "the survivors ended with %d and %d", codes[0], codes[1]);
}
END_TEST

static int bad_flags(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p, (void)arg;
    tutti_comm_t child = (tutti_comm_t)1;
    TT_FAIL_IF(tutti_comm_split_flags(comm, 0, 0, 0x2, &child) != TUTTI_ERR_INVALID_ARG || child,
               "rank %d: unknown split flags accepted", r);
    TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "unknown flags"), "rank %d: %s", r,
               tutti_comm_last_error(comm));
    return 0;
}

START_TEST(unknown_split_flags)
{
    tt_run_ranks(2, bad_flags, NULL, 60);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("lend");
    TCase *tc = tcase_create("lend");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, shared_split_takes_the_parents_pairs, 0, 9);
    tcase_add_loop_test(tc, shared_connections_outlive_either, 0, 4);
    tcase_add_loop_test(tc, overlapping_calls_are_a_mismatch, 0, 2);
    tcase_add_loop_test(tc, shared_shrink_takes_the_pairs_left, 0, 2);
    tcase_add_test(tc, a_revoked_borrower_ends_the_lending);
    tcase_add_loop_test(tc, a_killed_rank_ends_the_lending, 0, 2);
    tcase_add_test(tc, unknown_split_flags);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
