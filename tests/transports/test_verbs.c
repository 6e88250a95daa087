/* SPDX-License-Identifier: MIT */
/*
 * The verbs transport's real code against the libibverbs stand-in
 * (tests/fakes/fakeverbs/README.md), ranks as separate simulated hosts: every
 * collective on 2 to 8 ranks in fp16, bf16 and fp32 (and a few integer and
 * fp64 ops), through the slots and the zero-copy path, every algorithm, and
 * rings so small that senders run out of credits all the time; pairs
 * connected at first use only. Each rank checks that the peers it
 * connected really are on verbs, not on the tcp fallback; strangers at a
 * rank's set-up socket change nothing.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "algorithms/registry.h"
#include "comm/comm.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "tests/lib/harness.h"
#include "transports/verbs/verbs.h"

static const size_t counts[] = {0, 1, 7, 1000, 65537};
static const struct {
    tutti_dtype_t t;
    tutti_op_t op;
} kinds[] = {{TUTTI_FP32, TUTTI_SUM},  {TUTTI_FP16, TUTTI_SUM}, {TUTTI_BF16, TUTTI_SUM},
             {TUTTI_FP16, TUTTI_AVG},  {TUTTI_BF16, TUTTI_MAX}, {TUTTI_FP32, TUTTI_MIN},
             {TUTTI_INT32, TUTTI_MAX}, {TUTTI_FP64, TUTTI_PROD}};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* Three dtype/op kinds per count, cycling, so every kind runs (fp32, fp16
 * and bf16 at every count); arg, when set, is the number per count. */
static int collectives(tutti_comm_t comm, int r, int p, void *arg)
{
    size_t nkinds = arg ? *(const size_t *)arg : 3;
    size_t maxn = 65537 * (size_t)p + 8;
    tt_round_bufs_t b = {malloc(maxn * 8), malloc(maxn * 8), malloc(maxn * 8), malloc(maxn * 8)};
    int rc = 0;
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0] && !rc; ci++)
        for (size_t k = 0; k < nkinds && !rc; k++)
            rc = tt_check_round(comm, r, p, counts[ci], kinds[(ci * nkinds + k) % NKINDS].t,
                                kinds[(ci * nkinds + k) % NKINDS].op, (int)(k % 2), &b);
    free(b.in);
    free(b.out);
    free(b.want);
    free(b.term);
    TT_FAIL_IF(!rc && !tt_test_on_transport(comm, &tt_verbs_ops), "rank %d: a peer is not on verbs", r);
    return rc;
}

static void verbs_env(void)
{
    tt_fabric_begin("verbs");
    setenv("TTFAKE_DEVICES", "fakeib0:ib:1,fakeroce0:roce:1", 1);
    setenv("TUTTI_TRANSPORTS", "verbs,tcp", 1);
    setenv("TUTTI_IB_SLOT_BYTES", "8K", 1);
    setenv("TUTTI_IB_SLOTS", "4", 1);
    setenv("TUTTI_IB_ZCOPY_BYTES", "16K", 1);
    tt_set_ranks_per_node(1);
}

static const int sizes[] = {2, 3, 4, 5, 8};

START_TEST(every_collective_on_separate_hosts)
{
    verbs_env();
    tt_run_ranks(sizes[_i], collectives, NULL, 120);
    tt_fabric_end();
}
END_TEST

/* Every algorithm, forced: each on two rank counts of 2..8, one dtype and
 * op per count (fp32, fp16 and bf16 among them). */
START_TEST(every_algorithm_forced)
{
    static const size_t one = 1;
    verbs_env();
    setenv("TUTTI_ALGO", tt_algorithms[_i]->name, 1);
    if (strcmp(tt_algorithms[_i]->name, "hierarchical") == 0) {
        /* Two levels for real: shm inside a host, verbs across. */
        setenv("TUTTI_TRANSPORTS", "shm,verbs,tcp", 1);
        tt_set_ranks_per_node(2);
        tt_run_ranks(4, collectives, (void *)&one, 120);
        tt_set_ranks_per_node(3);
        tt_run_ranks(6, collectives, (void *)&one, 120);
    } else {
        tt_run_ranks(sizes[_i % 5], collectives, (void *)&one, 120);
        tt_run_ranks(sizes[(_i + 2) % 5], collectives, (void *)&one, 120);
    }
    unsetenv("TUTTI_ALGO");
    tt_fabric_end();
}
END_TEST

/* One slot of 128 bytes per channel: a sender has one piece in flight and
 * waits for every credit; large messages through slots and directly. */
START_TEST(tiny_rings_exhaust_credits)
{
    static const size_t one = 1;
    verbs_env();
    setenv("TUTTI_IB_SLOTS", "1", 1);
    setenv("TUTTI_IB_SLOT_BYTES", "128", 1);
    setenv("TUTTI_IB_ZCOPY_BYTES", "0", 1);
    setenv("TUTTI_IB_QPS_PER_PEER", "1", 1);
    tt_run_ranks(3, collectives, (void *)&one, 120);
    setenv("TUTTI_IB_ZCOPY_BYTES", "512", 1);
    setenv("TUTTI_IB_SLOTS", "2", 1);
    setenv("TUTTI_PIPELINE", "2", 1);
    tt_run_ranks(2, collectives, (void *)&one, 120);
    unsetenv("TUTTI_PIPELINE");
    unsetenv("TUTTI_IB_QPS_PER_PEER");
    tt_fabric_end();
}
END_TEST

/* Slices in flight spread over several queue pairs per peer, more channels
 * than queue pairs and fewer. */
START_TEST(several_queue_pairs_per_peer)
{
    static const size_t one = 1;
    verbs_env();
    setenv("TUTTI_PIPELINE", "8", 1);
    setenv("TUTTI_IB_QPS_PER_PEER", "3", 1);
    tt_run_ranks(3, collectives, (void *)&one, 120);
    setenv("TUTTI_PIPELINE", "2", 1);
    setenv("TUTTI_IB_QPS_PER_PEER", "8", 1);
    tt_run_ranks(2, collectives, (void *)&one, 120);
    unsetenv("TUTTI_PIPELINE");
    unsetenv("TUTTI_IB_QPS_PER_PEER");
    tt_fabric_end();
}
END_TEST

/* RoCE: no LIDs, so the GID (a RoCE v2 IPv4-mapped one, found by itself)
 * carries the connection. */
START_TEST(roce_port_with_automatic_gid)
{
    static const size_t one = 1;
    verbs_env();
    setenv("TUTTI_IB_HCA", "fakeroce", 1);
    tt_run_ranks(3, collectives, (void *)&one, 120);
    unsetenv("TUTTI_IB_HCA");
    tt_fabric_end();
}
END_TEST

/* Pairs connect at first use: a ring all-reduce connects each rank with
 * its two neighbours only, and a send then adds just its own pair. */
static int ring_then_send(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float x[1000], sum[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(r + i);
    for (int k = 0; k < 3; k++) {
        tutti_status_t st = tutti_allreduce(x, sum, 1000, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        TT_FAIL_IF(st, "rank %d: allreduce: %s", r, tutti_comm_last_error(comm));
        TT_FAIL_IF(sum[7] != (float)(p * (p - 1) / 2 + 7 * p), "rank %d: allreduce gave %g", r, sum[7]);
    }
    int ring = tt_comm_lookup(comm, NULL)->nconnected;
    TT_FAIL_IF(ring != 2, "rank %d: a ring all-reduce connected %d peers, not its 2 neighbours", r, ring);
    TT_FAIL_IF(!tt_test_on_transport(comm, &tt_verbs_ops), "rank %d: a peer is not on verbs", r);
    /* Rank 0 sends to the rank across the ring, a pair the ring did not use. */
    int across = p / 2;
    tutti_status_t st = TUTTI_SUCCESS;
    if (r == 0)
        st = tutti_send(x, 1000, TUTTI_FP32, across, comm, NULL);
    else if (r == across)
        st = tutti_recv(sum, 1000, TUTTI_FP32, 0, comm, NULL);
    TT_FAIL_IF(st, "rank %d: send/recv: %s", r, tutti_comm_last_error(comm));
    TT_FAIL_IF(r == across && sum[5] != 5.0f, "rank %d: received %g", r, sum[5]);
    int now = tt_comm_lookup(comm, NULL)->nconnected, want = r == 0 || r == across ? 3 : 2;
    TT_FAIL_IF(now != want, "rank %d: %d peers connected after the send, not %d", r, now, want);
    return 0;
}

START_TEST(pairs_connect_at_first_use)
{
    verbs_env();
    setenv("TUTTI_ALGO", "ring", 1);
    tt_run_ranks(6, ring_then_send, NULL, 120);
    unsetenv("TUTTI_ALGO");
    tt_fabric_end();
}
END_TEST

static const tt_verbs_ctx_t *verbs_ctx(tutti_comm_t comm)
{
    tt_comm_t *c = tt_comm_lookup(comm, NULL);
    for (int t = 0; t < c->ntransports; t++)
        if (c->tp_ops[t] == &tt_verbs_ops)
            return c->tp_ctx[t];
    return NULL;
}

/* Dials this rank's own verbs set-up socket as a stranger would: one
 * connection sends bytes that are no hello, another says nothing. */
static void strangers_dial(tutti_comm_t comm, int fds[2])
{
    const tt_verbs_ctx_t *ctx = verbs_ctx(comm);
    struct sockaddr_storage at;
    socklen_t len = sizeof at;
    fds[0] = fds[1] = -1;
    if (!ctx || getsockname(ctx->listen_fd, (struct sockaddr *)&at, &len))
        return;
    for (int i = 0; i < 2; i++) {
        fds[i] = socket(at.ss_family, SOCK_STREAM, 0);
        if (fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&at, len)) {
            close(fds[i]);
            fds[i] = -1;
        }
    }
    char junk[512];
    memset(junk, 0x5a, sizeof junk);
    if (fds[0] >= 0 && write(fds[0], junk, sizeof junk) < 0)
        fds[0] = -1;
}

/* Strangers at every rank's set-up socket: the pair a send then brings up
 * still comes up at once, and where an acceptor serves the socket, the
 * stranger with the wrong bytes is dropped. */
static int strangers_then_send(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float x[1000], got[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(r + i);
    TT_FAIL_IF(tutti_allreduce(x, got, 1000, TUTTI_FP32, TUTTI_SUM, comm, NULL), "rank %d: allreduce: %s", r,
               tutti_comm_last_error(comm));
    int fds[2];
    strangers_dial(comm, fds);
    TT_FAIL_IF(fds[0] < 0 || fds[1] < 0, "rank %d: could not dial its own set-up socket", r);
    int across = p / 2;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = TUTTI_SUCCESS;
    if (r == 0)
        st = tutti_send(x, 1000, TUTTI_FP32, across, comm, NULL);
    else if (r == across)
        st = tutti_recv(got, 1000, TUTTI_FP32, 0, comm, NULL);
    int64_t took = tt_now_ms() - t0;
    TT_FAIL_IF(st || (r == across && got[5] != 5.0f), "rank %d: send/recv: %s", r,
               tutti_comm_last_error(comm));
    TT_FAIL_IF(took > 3000, "rank %d: the pair took %lld ms beside the strangers", r, (long long)took);
    /* A rank that never answered a pair runs no acceptor: its strangers
     * wait in the kernel's queue, costing nothing, until it closes. */
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    char b;
    int closed = poll(&pfd, 1, 5000) == 1 && read(fds[0], &b, 1) <= 0;
    TT_FAIL_IF(verbs_ctx(comm)->acceptor_on && !closed,
               "rank %d: the stranger's connection is still open after 5 s", r);
    close(fds[0]);
    close(fds[1]);
    return 0;
}

START_TEST(strangers_at_the_set_up_socket_change_nothing)
{
    verbs_env();
    setenv("TUTTI_ALGO", "ring", 1);
    tt_run_ranks(4, strangers_then_send, NULL, 120);
    unsetenv("TUTTI_ALGO");
    tt_fabric_end();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("verbs");
    TCase *tc = tcase_create("verbs");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, every_collective_on_separate_hosts, 0, 5);
    tcase_add_loop_test(tc, every_algorithm_forced, 0, tt_num_algorithms);
    tcase_add_test(tc, tiny_rings_exhaust_credits);
    tcase_add_test(tc, several_queue_pairs_per_peer);
    tcase_add_test(tc, roce_port_with_automatic_gid);
    tcase_add_test(tc, pairs_connect_at_first_use);
    tcase_add_test(tc, strangers_at_the_set_up_socket_change_nothing);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
