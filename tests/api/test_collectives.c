/* SPDX-License-Identifier: MIT */
/*
 * Real forked ranks (1, 2, 3, 4, 5, 8) over shm and, forced, over tcp: every
 * collective, counts including 0 and counts not divisible by nranks,
 * in-place and out-of-place, checked element by element.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/registry.h"
#include "comm/comm.h"
#include "comm/connect.h"
#include "comm/handle.h"
#include "tests/lib/harness.h"
#include "reduce/reduce.h"
#include "transports/shm/shm.h"

static const size_t counts[] = {0, 1, 7, 1000, 65537};
static const struct {
    tutti_dtype_t t;
    tutti_op_t op;
} kinds[] = {{TUTTI_FP32, TUTTI_SUM},  {TUTTI_INT32, TUTTI_MAX}, {TUTTI_BF16, TUTTI_SUM},
             {TUTTI_FP64, TUTTI_PROD}, {TUTTI_UINT8, TUTTI_MIN}, {TUTTI_FP16, TUTTI_AVG}};

static int collectives(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    size_t maxn = 65537 * (size_t)p + 8;
    char *in = malloc(maxn * 8), *out = malloc(maxn * 8), *want = malloc(maxn * 8), *term = malloc(maxn * 8);
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int ip = 0; ip < 2; ip++) {
            size_t n = counts[ci];
            tutti_dtype_t t = kinds[(ci + (size_t)ip) % 6].t;
            tutti_op_t op = kinds[(ci + (size_t)ip) % 6].op;
            size_t e = tutti_dtype_size(t);
            int root = (int)(ci % (size_t)p);
            tutti_status_t st;

            /* allreduce */
            for (size_t i = 0; i < n; i++)
                tt_test_value(t, op, ip ? out : in, i, r, i);
            st = tutti_allreduce(ip ? out : in, out, n, t, op, comm, NULL);
            TT_FAIL_IF(st, "allreduce n=%zu: %s: %s", n, tutti_strerror(st), tutti_comm_last_error(comm));
            tt_expect_reduced(want, term, n, 0, p, t, op);
            TT_FAIL_IF(memcmp(want, out, n * e), "allreduce n=%zu %s %s in_place=%d wrong", n,
                       tutti_dtype_name(t), tutti_op_name(op), ip);

            /* reduce_scatter: input p*n, rank r gets block r */
            for (size_t i = 0; i < n * (size_t)p; i++)
                tt_test_value(t, op, ip ? out : in, i, r, i);
            char *rs_out = ip ? out + (size_t)r * n * e : out;
            st = tutti_reduce_scatter(ip ? out : in, rs_out, n, t, op, comm, NULL);
            TT_FAIL_IF(st, "reduce_scatter n=%zu: %s", n, tutti_comm_last_error(comm));
            tt_expect_reduced(want, term, n, (size_t)r * n, p, t, op);
            TT_FAIL_IF(memcmp(want, rs_out, n * e), "reduce_scatter n=%zu in_place=%d wrong", n, ip);

            /* allgather: block q of the output is rank q's input */
            char *ag_in = ip ? out + (size_t)r * n * e : in;
            for (size_t i = 0; i < n; i++)
                tt_test_value(t, op, ag_in, i, r, (size_t)r * n + i);
            st = tutti_allgather(ag_in, out, n, t, comm, NULL);
            TT_FAIL_IF(st, "allgather n=%zu: %s", n, tutti_comm_last_error(comm));
            for (size_t i = 0; i < n * (size_t)p; i++)
                tt_test_value(t, op, want, i, (int)(i / n), i);
            TT_FAIL_IF(memcmp(want, out, n * (size_t)p * e), "allgather n=%zu in_place=%d wrong", n, ip);

            /* broadcast from root */
            for (size_t i = 0; i < n; i++)
                tt_test_value(t, op, ip ? out : in, i, r, i);
            st = tutti_broadcast(ip ? out : in, out, n, t, root, comm, NULL);
            TT_FAIL_IF(st, "broadcast n=%zu: %s", n, tutti_comm_last_error(comm));
            for (size_t i = 0; i < n; i++)
                tt_test_value(t, op, want, i, root, i);
            TT_FAIL_IF(memcmp(want, out, n * e), "broadcast n=%zu root=%d in_place=%d wrong", n, root, ip);

            /* reduce to root; non-root ranks pass no recvbuf */
            for (size_t i = 0; i < n; i++)
                tt_test_value(t, op, ip && r == root ? out : in, i, r, i);
            st = tutti_reduce(ip && r == root ? out : in, r == root ? out : NULL, n, t, op, root, comm, NULL);
            TT_FAIL_IF(st, "reduce n=%zu: %s", n, tutti_comm_last_error(comm));
            if (r == root) {
                tt_expect_reduced(want, term, n, 0, p, t, op);
                TT_FAIL_IF(memcmp(want, out, n * e), "reduce n=%zu root=%d wrong", n, root);
            }

            /* alltoall: block q of my output is block r of rank q's input */
            for (size_t i = 0; i < n * (size_t)p; i++)
                tt_test_value(t, op, ip ? out : in, i, r, i);
            st = tutti_alltoall(ip ? out : in, out, n, t, comm, NULL);
            TT_FAIL_IF(st, "alltoall n=%zu: %s", n, tutti_comm_last_error(comm));
            for (size_t i = 0; i < n * (size_t)p; i++)
                tt_test_value(t, op, want, i, (int)(i / n), (size_t)r * n + i % n);
            TT_FAIL_IF(memcmp(want, out, n * (size_t)p * e), "alltoall n=%zu in_place=%d wrong", n, ip);

            /* send/recv around the ring: even ranks send first */
            if (p > 1) {
                int right = (r + 1) % p, left = (r + p - 1) % p;
                for (size_t i = 0; i < n; i++)
                    tt_test_value(t, op, in, i, r, i);
                if (r % 2 == 0) {
                    st = tutti_send(in, n, t, right, comm, NULL);
                    st = st ? st : tutti_recv(out, n, t, left, comm, NULL);
                } else {
                    st = tutti_recv(out, n, t, left, comm, NULL);
                    st = st ? st : tutti_send(in, n, t, right, comm, NULL);
                }
                TT_FAIL_IF(st, "send/recv n=%zu: %s", n, tutti_comm_last_error(comm));
                for (size_t i = 0; i < n; i++)
                    tt_test_value(t, op, want, i, left, i);
                TT_FAIL_IF(memcmp(want, out, n * e), "send/recv n=%zu wrong", n);
            }
            st = tutti_barrier(comm, NULL);
            TT_FAIL_IF(st, "barrier: %s", tutti_comm_last_error(comm));
        }
    free(in);
    free(out);
    free(want);
    free(term);
    return 0;
}

static const int sizes[] = {1, 2, 3, 4, 5, 8};

START_TEST(every_collective_over_shm)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(sizes[_i], collectives, NULL, 240);
    ck_assert_int_eq(tt_count_job_segments(tt_last_job_tag()), 0); /* every segment was unlinked */
}
END_TEST

START_TEST(every_collective_over_tcp)
{
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(sizes[_i], collectives, NULL, 240);
}
END_TEST

/* Every registered algorithm, forced with TUTTI_ALGO (it then runs every
 * collective it serves): 3 ranks over shm, 5 (not a power of two either)
 * over tcp, then 3 over shm in slices of 4 KiB (up to 128 of them), where
 * a schedule that must run whole (tt_sched_slices) is run so. */
START_TEST(every_algorithm_forced)
{
    setenv("TUTTI_ALGO", tt_algorithms[_i]->name, 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(3, collectives, NULL, 240);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(5, collectives, NULL, 240);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    setenv("TUTTI_SLICE_BYTES", "4096", 1);
    tt_run_ranks(3, collectives, NULL, 240);
    unsetenv("TUTTI_SLICE_BYTES");
    unsetenv("TUTTI_ALGO");
}
END_TEST

START_TEST(simulated_hosts_mix_shm_and_tcp)
{
    /* Ranks 0-1 count as host 0 and 2-3 as host 1: shm inside, tcp across. */
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_set_ranks_per_node(2);
    tt_run_ranks(4, collectives, NULL, 240);
    /* The two-level algorithms then really have two levels; 6 ranks as 3
     * hosts of 2 over tcp as well. */
    setenv("TUTTI_ALGO", "hierarchical", 1);
    tt_run_ranks(4, collectives, NULL, 240);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(6, collectives, NULL, 240);
    unsetenv("TUTTI_ALGO");
    tt_set_ranks_per_node(0);
}
END_TEST

/* Each pair's link class comes from the transport that connects it, and
 * the cost model prices pairs by it. */
static int link_classes(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)r;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* the communicator's own tables */
    const tt_link_t *across = arg;
    for (int a = 0; a < p; a++)
        for (int b = 0; b < p; b++) {
            tt_link_t want = a / 2 == b / 2 ? TT_LINK_SHM : *across;
            TT_FAIL_IF(a != b && tt_comm_link(comm, a, b) != want, "ranks %d and %d: %s, not %s", a, b,
                       tt_link_name(tt_comm_link(comm, a, b)), tt_link_name(want));
            TT_FAIL_IF(a != b && tt_cost_link(&comm->policy.tuner.model, &comm->hosts, a, b) != want,
                       "the cost model prices ranks %d and %d as %s", a, b,
                       tt_link_name(tt_cost_link(&comm->policy.tuner.model, &comm->hosts, a, b)));
        }
    TT_FAIL_IF(comm->policy.tuner.model.inter != *across, "inter is %s",
               tt_link_name(comm->policy.tuner.model.inter));
    return 0;
}

/* An all-to-all connects every pair; each must then have full-size shm
 * slots (TUTTI_SHM_SLOT_BYTES) both ways: a few ranks' pools have room
 * for that. Their smallest regions, kept for the peers to come, once came
 * out of the full ones, and 2 ranks got slots of 32 KiB. */
static int full_slots(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    int in[64], out[64];
    for (int q = 0; q < p; q++)
        in[q] = r * 100 + q;
    TT_FAIL_IF(tutti_alltoall(in, out, 1, TUTTI_INT32, handle, NULL), "alltoall: %s",
               tutti_comm_last_error(handle));
    TT_FAIL_IF(tutti_allreduce(in, out, 8, TUTTI_INT32, TUTTI_SUM, handle, NULL), "allreduce: %s",
               tutti_comm_last_error(handle));
    for (int q = 0; q < p; q++) {
        if (q == r || !comm->peers[q].ops)
            continue;
        TT_FAIL_IF(comm->peers[q].ops != &tt_shm_ops, "rank %d reaches rank %d over %s", r, q,
                   comm->peers[q].ops->name);
        const tt_shm_conn_t *c = comm->peers[q].conn;
        for (int ch = 0; ch < c->nchannels; ch++)
            TT_FAIL_IF(c->in[ch].slot_bytes != 256 << 10 || c->out[ch].slot_bytes != 256 << 10,
                       "%d ranks: rank %d's queues with rank %d have slots of %zu and %zu bytes", p, r, q,
                       c->in[ch].slot_bytes, c->out[ch].slot_bytes);
    }
    return 0;
}

START_TEST(a_few_ranks_get_full_shm_slots)
{
    setenv("TUTTI_TRANSPORTS", "shm", 1);
    for (int p = 2; p <= 8; p *= 2)
        tt_run_ranks(p, full_slots, NULL, 60);
    tt_run_ranks(3, full_slots, NULL, 60);
}
END_TEST

START_TEST(each_pair_is_priced_by_its_link)
{
    tt_link_t tcp = TT_LINK_TCP;
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_set_ranks_per_node(2);
    tt_run_ranks(4, link_classes, &tcp, 60);
    tt_set_ranks_per_node(0);
}
END_TEST

START_TEST(shm_alone_cannot_reach_another_host)
{
    /* Proves the simulated hosts are honoured: shm must refuse to span them. */
    setenv("TUTTI_TRANSPORTS", "shm", 1);
    tt_set_ranks_per_node(1);
    pid_t pids[2];
    int codes[2];
    tt_spawn_ranks(2, collectives, NULL, pids);
    ck_assert(!tt_wait_ranks(2, pids, codes, 60));
    tt_set_ranks_per_node(0);
    ck_assert_int_eq(codes[0], 100); /* init failed */
    ck_assert_int_eq(codes[1], 100);
    ck_assert_int_eq(tt_count_job_segments(tt_last_job_tag()), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("multiproc");
    TCase *tc = tcase_create("multiproc");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, every_collective_over_shm, 0, 6);
    tcase_add_loop_test(tc, every_collective_over_tcp, 0, 6);
    tcase_add_test(tc, simulated_hosts_mix_shm_and_tcp);
    tcase_add_loop_test(tc, every_algorithm_forced, 0, tt_num_algorithms);
    tcase_add_test(tc, shm_alone_cannot_reach_another_host);
    tcase_add_test(tc, each_pair_is_priced_by_its_link);
    tcase_add_test(tc, a_few_ranks_get_full_shm_slots);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
