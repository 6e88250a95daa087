/* SPDX-License-Identifier: MIT */
/*
 * tutti_comm_split on 1-8 forked ranks: several colors, keys that reverse or
 * shuffle the ranks, ranks with no color, collectives on the children and on
 * the parent between them, nested splits, and what carries over from the
 * parent (timeout, simulated host).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "tests/lib/harness.h"

/* How one test case colours and keys rank r of p. */
typedef struct {
    int ncolors;  /* colors are r % ncolors */
    int nocolor;  /* every rank with r % nocolor == nocolor - 1 joins none; 0: off */
    int key_mode; /* 0: key 0 (parent order), 1: -r (reversed), 2: (r * 5) % 7 then rank */
} split_case_t;

static int color_of(const split_case_t *c, int r)
{
    if (c->nocolor && r % c->nocolor == c->nocolor - 1)
        return TUTTI_SPLIT_NOCOLOR - (r % 2); /* -1 or -2: any negative means none */
    return r % c->ncolors;
}

static int key_of(const split_case_t *c, int r)
{
    return c->key_mode == 0 ? 0 : c->key_mode == 1 ? -r : (r * 5) % 7;
}

/* The parent ranks of rank r's color in the order the split must give them. */
static int expected_members(const split_case_t *c, int p, int r, int *out)
{
    int n = 0, color = color_of(c, r);
    for (int q = 0; q < p; q++)
        if (color_of(c, q) == color)
            out[n++] = q;
    for (int i = 1; i < n; i++) /* stable insertion sort by key */
        for (int j = i; j > 0 && key_of(c, out[j - 1]) > key_of(c, out[j]); j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* Checks a child's shape and runs collectives on it; returns nonzero on failure. */
static int check_child(tutti_comm_t parent_handle, tutti_comm_t child, const int *members, int n, int r)
{
    /* white box: the communicators behind the handles */
    tt_comm_t *parent = tt_comm_lookup(parent_handle, NULL), *inner = tt_comm_lookup(child, NULL);
    TT_FAIL_IF(!parent || !inner, "rank %d: the parent or the child is not a live handle", r);
    int crank = -1, csize = -1, want_rank = -1;
    for (int i = 0; i < n; i++)
        if (members[i] == r)
            want_rank = i;
    TT_FAIL_IF(tutti_comm_rank(child, &crank) || tutti_comm_size(child, &csize), "rank/size failed");
    TT_FAIL_IF(csize != n || crank != want_rank, "rank %d: child rank %d of %d, want %d of %d", r, crank,
               csize, want_rank, n);
    TT_FAIL_IF(inner->timeout_ms != parent->timeout_ms, "timeout %lld not carried over (parent %lld)",
               (long long)inner->timeout_ms, (long long)parent->timeout_ms);
    for (int i = 0; i < n; i++)
        TT_FAIL_IF(inner->endpoints[i].node_id != parent->endpoints[members[i]].node_id,
                   "child rank %d has node %d, its parent rank %d node %d", i, inner->endpoints[i].node_id,
                   members[i], parent->endpoints[members[i]].node_id);
    /* all-gather of parent ranks shows the order; all-reduce sums them */
    int32_t mine = r, got[8] = {0}, sum = 0, want_sum = 0;
    tutti_status_t st = tutti_allgather(&mine, got, 1, TUTTI_INT32, child, NULL);
    TT_FAIL_IF(st, "child allgather: %s", tutti_comm_last_error(child));
    for (int i = 0; i < n; i++) {
        TT_FAIL_IF(got[i] != members[i], "child rank %d is parent rank %d, want %d", i, got[i], members[i]);
        want_sum += members[i];
    }
    st = tutti_allreduce(&mine, &sum, 1, TUTTI_INT32, TUTTI_SUM, child, NULL);
    TT_FAIL_IF(st || sum != want_sum, "child allreduce gave %d, want %d: %s", sum, want_sum,
               tutti_comm_last_error(child));
    double b = crank == n - 1 ? 1000.0 + members[n - 1] : -1;
    st = tutti_broadcast(&b, &b, 1, TUTTI_FP64, n - 1, child, NULL);
    TT_FAIL_IF(st || b != 1000.0 + members[n - 1], "child broadcast from its last rank gave %g", b);
    return 0;
}

static int split_body(tutti_comm_t comm, int r, int p, void *arg)
{
    const split_case_t *c = arg;
    tutti_comm_t child = (tutti_comm_t)1;
    tutti_status_t st = tutti_comm_split(comm, color_of(c, r), key_of(c, r), &child);
    TT_FAIL_IF(st, "split: %s: %s", tutti_strerror(st), tutti_comm_last_error(comm));
    int members[8];
    int n = expected_members(c, p, r, members);
    if (color_of(c, r) < 0) {
        TT_FAIL_IF(child != NULL, "rank %d has no color but got a communicator", r);
    } else if (check_child(comm, child, members, n, r)) {
        return 1;
    }
    /* The parent still works, with the children alive. */
    int32_t one = 1, total = 0;
    st = tutti_allreduce(&one, &total, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st || total != p, "parent allreduce after split gave %d: %s", total,
               tutti_comm_last_error(comm));
    if (child) {
        /* Nested: halve the child by its rank's parity, keys reversing it. */
        int crank = 0, csize = 0;
        tutti_comm_rank(child, &crank);
        tutti_comm_size(child, &csize);
        tutti_comm_t grand = NULL;
        st = tutti_comm_split(child, crank % 2, -crank, &grand);
        TT_FAIL_IF(st, "nested split: %s", tutti_comm_last_error(child));
        int grank = -1, gsize = -1, want_size = (csize - crank % 2 + 1) / 2;
        tutti_comm_rank(grand, &grank);
        tutti_comm_size(grand, &gsize);
        /* The reversed keys put the highest child rank of the parity first. */
        int want_rank = (csize - 1 - crank) / 2;
        TT_FAIL_IF(gsize != want_size || grank != want_rank, "nested: rank %d of %d, want %d of %d", grank,
                   gsize, want_rank, want_size);
        int32_t x = members[crank], xs = 0, want = 0;
        for (int i = crank % 2; i < csize; i += 2)
            want += members[i];
        st = tutti_allreduce(&x, &xs, 1, TUTTI_INT32, TUTTI_SUM, grand, NULL);
        TT_FAIL_IF(st || xs != want, "nested allreduce gave %d, want %d", xs, want);
        TT_FAIL_IF(tutti_comm_destroy(grand), "destroying the nested communicator failed");
        TT_FAIL_IF(tutti_comm_destroy(child), "destroying the child failed");
    }
    return 0;
}

static const split_case_t cases[] = {
    {1, 0, 0}, /* one color, parent order: a copy of the parent */
    {2, 0, 1}, /* two colors, reversed */
    {3, 0, 2}, /* three colors, shuffled keys with ties */
    {2, 4, 1}, /* two colors and every fourth rank without one */
    {1, 2, 2}, /* half the ranks without a color */
};

START_TEST(split_colors_keys_nocolor)
{
    int p = 1 + _i % 8;
    const split_case_t *c = &cases[_i / 8];
    /* A timeout of each rank's own, at creation (a write to the
     * communicator after it would race its star thread): the child must
     * copy its parent's, not TUTTI_TIMEOUT's. */
    tt_set_rank_timeout_ms(43210);
    tt_run_ranks(p, split_body, (void *)c, 120);
    tt_set_rank_timeout_ms(0);
}
END_TEST

/* Simulated hosts: children of ranks on different hosts keep them apart, so
 * shm alone (which cannot span hosts) must fail exactly where it did before. */
START_TEST(split_keeps_hosts)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_set_ranks_per_node(2);
    tt_run_ranks(4, split_body, (void *)&cases[1], 120);
    tt_run_ranks(6, split_body, (void *)&cases[2], 120);
    tt_set_ranks_per_node(0);
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

static int bad_args(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)r, (void)p, (void)arg;
    tutti_comm_t child;
    TT_FAIL_IF(tutti_comm_split(comm, 0, 0, NULL) != TUTTI_ERR_INVALID_ARG, "NULL newcomm accepted");
    TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "newcomm"), "error does not name newcomm: %s",
               tutti_comm_last_error(comm));
    TT_FAIL_IF(tutti_comm_split(NULL, 0, 0, &child) != TUTTI_ERR_INVALID_ARG, "NULL comm accepted");
    /* after the bad calls, a real split still lines up on every rank */
    TT_FAIL_IF(tutti_comm_split(comm, 0, 0, &child), "split after bad calls: %s",
               tutti_comm_last_error(comm));
    TT_FAIL_IF(tutti_comm_destroy(child), "destroy failed");
    return 0;
}

START_TEST(split_bad_arguments)
{
    tt_run_ranks(3, bad_args, NULL, 60);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("split");
    TCase *tc = tcase_create("split");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, split_colors_keys_nocolor, 0, 8 * (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, split_keeps_hosts);
    tcase_add_test(tc, split_bad_arguments);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
