/* SPDX-License-Identifier: MIT */
/*
 * Direct sends and receives over cuda_ipc, on the stream model (fake_gpu.h)
 * and the host-memory backend (fake_ipc.h): device-buffer sends and
 * receives run on the caller's stream through the sender's window when both
 * sides can, and stage otherwise, the sides agreeing message by message;
 * host-buffer sides, receives from any source, grouped exchanges, a peer
 * lost while this rank's stream waits, ranks thousands of messages apart,
 * two communicators in crossed order. 64 KiB windows make slots of 8 KiB
 * (2 ranks) and 4 KiB (4 ranks): a few tens of KiB take several.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll.h"
#include "comm/handle.h"
#include "comm/pair.h"
#include "core/clock.h"
#include "device/device_coll.h"
#include "device/direct_run.h"
#include "tests/fakes/fake_gpu.h"
#include "tests/fakes/fake_ipc.h"
#include "tests/lib/harness.h"

/* One byte to 3.5 slots and more, odd sizes among them (bytes). */
static const size_t sizes[] = {1, 1001, 4096, 8193, 29001};
enum { NSIZES = sizeof sizes / sizeof *sizes, MAXBYTES = 29001 };

/* White box: until rank receiver has offered to receive this rank's next
 * message to it, so that the message can go direct. */
static int offered(tt_comm_t *comm, int receiver)
{
    tt_cuda_ipc_ctx_t *ctx = comm->tp_ctx[comm->device_tp];
    uint64_t k = comm->send_seq[receiver];
    _Atomic uint64_t *slot = &tt_cuda_ipc_inbox(ctx->segs[receiver], comm->rank)->offer[k % TT_IPC_RING];
    for (int tries = 0; tries < 40000; tries++) {
        if (atomic_load(slot) / 4 == k + 1)
            return 1;
        usleep(250);
    }
    return 0;
}

static void fill(unsigned char *x, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (unsigned char)(seed * 31 + (int)(i * 7 % 251) + 1);
}

/* Whether x holds fill(seed), and the bytes around it are untouched (0). */
static int holds(const unsigned char *x, size_t n, int seed)
{
    if (x[-1] || x[n])
        return 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] != (unsigned char)(seed * 31 + (int)(i * 7 % 251) + 1))
            return 0;
    return 1;
}

/* Around a ring (2 ranks: each other), every size, misaligned buffers: even
 * ranks receive first, odd ranks send first once the receiver has offered;
 * every message must go direct and arrive exact. */
static int ring(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    unsigned char *in = tt_fake_gpu_malloc(MAXBYTES + 64, 0), *out = tt_fake_gpu_malloc(MAXBYTES + 64, 0);
    int right = (r + 1) % p, left = (r + p - 1) % p;
    uint64_t before = tt_direct_messages(comm);
    for (int si = 0; si < NSIZES; si++) {
        size_t n = sizes[si];
        unsigned char *src = in + 1 + si, *dst = out + 3 + si; /* no two alike, none aligned */
        fill(src, n, r * 10 + si);
        memset(out, 0, MAXBYTES + 64);
        tutti_status_t st = TUTTI_SUCCESS;
        if (r % 2 == 0) {
            st = tutti_recv(dst, n, TUTTI_UINT8, left, handle, stream);
            TT_FAIL_IF(!st && !offered(comm, right), "rank %d never offered", right);
            st = st ? st : tutti_send(src, n, TUTTI_UINT8, right, handle, stream);
        } else {
            TT_FAIL_IF(!offered(comm, right), "rank %d never offered", right);
            st = tutti_send(src, n, TUTTI_UINT8, right, handle, stream);
            st = st ? st : tutti_recv(dst, n, TUTTI_UINT8, left, handle, stream);
        }
        TT_FAIL_IF(st || tt_fake_gpu.stream_sync(stream), "%zu bytes: %s", n, tutti_comm_last_error(handle));
        TT_FAIL_IF(!holds(dst, n, left * 10 + si), "rank %d: %zu bytes from rank %d differ", r, n, left);
    }
    uint64_t direct = tt_direct_messages(comm) - before;
    TT_FAIL_IF(direct != 2 * NSIZES, "rank %d: %llu of %d messages ran directly", r,
               (unsigned long long)direct, 2 * NSIZES);
    return tt_fake_gpu_own_calls_only(r);
}

START_TEST(device_sends_and_receives_go_direct)
{
    tt_run_ranks(_i ? 4 : 2, ring, NULL, 120);
}
END_TEST

/* Host-buffer sides: a device send to a host receive, then device to
 * device, then a host send to a device receive, then device to device. The
 * host ones stage, and both sides still count every message alike: the
 * device-to-device ones go direct. */
static int host_sides(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    enum { B = 20001 };
    unsigned char *dev = tt_fake_gpu_malloc(4 * (B + 8), 0), *host = calloc(4, B + 8);
    unsigned char *at[4], *hat[4];
    for (int m = 0; m < 4; m++) {
        at[m] = dev + m * (B + 8) + 1;
        hat[m] = host + m * (B + 8) + 1;
        memset(at[m] - 1, 0, B + 2);
    }
    uint64_t before = tt_direct_messages(comm);
    tutti_status_t st[4];
    if (r == 0) {
        fill(at[0], B, 0);
        fill(at[1], B, 1);
        st[0] = tutti_send(at[0], B, TUTTI_UINT8, 1, handle, stream);
        TT_FAIL_IF(!offered(comm, 1), "rank 1 never offered");
        st[1] = tutti_send(at[1], B, TUTTI_UINT8, 1, handle, stream);
        st[2] = tutti_recv(at[2], B, TUTTI_UINT8, 1, handle, stream);
        st[3] = tutti_recv(at[3], B, TUTTI_UINT8, 1, handle, stream);
    } else {
        fill(hat[2], B, 2);
        fill(at[3], B, 3);
        st[0] = tutti_recv(hat[0], B, TUTTI_UINT8, 0, handle, NULL);
        st[1] = tutti_recv(at[1], B, TUTTI_UINT8, 0, handle, stream);
        st[2] = tutti_send(hat[2], B, TUTTI_UINT8, 0, handle, NULL);
        TT_FAIL_IF(!offered(comm, 0), "rank 0 never offered");
        st[3] = tutti_send(at[3], B, TUTTI_UINT8, 0, handle, stream);
    }
    for (int m = 0; m < 4; m++)
        TT_FAIL_IF(st[m], "rank %d, message %d: %s", r, m, tutti_comm_last_error(handle));
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    TT_FAIL_IF(r == 1 && !holds(hat[0], B, 0), "a device send into a host receive differs");
    TT_FAIL_IF(r == 1 && !holds(at[1], B, 1), "the first device-to-device message differs");
    TT_FAIL_IF(r == 0 && !holds(at[2], B, 2), "a host send into a device receive differs");
    TT_FAIL_IF(r == 0 && !holds(at[3], B, 3), "the second device-to-device message differs");
    uint64_t direct = tt_direct_messages(comm) - before;
    TT_FAIL_IF(direct != 2, "rank %d: %llu messages ran directly, not the 2 device-to-device ones", r,
               (unsigned long long)direct);
    free(host);
    return tt_fake_gpu_own_calls_only(r);
}

START_TEST(host_buffer_sides_stage_and_keep_the_count)
{
    tt_run_ranks(2, host_sides, NULL, 120);
}
END_TEST

/* A grouped exchange (the batch ncclGroupEnd makes of ncclSend and
 * ncclRecv): each rank sends 3.5 slots to the other and receives as much,
 * in one batch. Rank 1 starts once rank 0's batch has offered, so its send
 * goes direct every time; rank 0's goes direct when rank 1's offer comes
 * within the batch's brief wait, which must happen in a few tries. Direct
 * both ways, the two streams exchange round by round without deadlock. */
static int exchange(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    enum { B = 28673 }; /* 3.5 slots of 8 KiB, and one byte */
    unsigned char *in = tt_fake_gpu_malloc(B + 8, 0), *out = tt_fake_gpu_malloc(B + 8, 0);
    int other = 1 - r, both = 0;
    for (int tries = 0; tries < 10 && !both; tries++) {
        tt_call_t calls[2] = {
            {.coll = TT_COLL_SEND, .send = in + 1, .count = B, .dtype = TUTTI_UINT8, .root = other},
            {.coll = TT_COLL_RECV, .recv = out + 2, .count = B, .dtype = TUTTI_UINT8, .root = other}};
        for (int i = 0; i < 2; i++)
            TT_FAIL_IF(tt_coll_validate(comm, &calls[i], "test") ||
                           tt_device_classify(comm, &calls[i], "test"),
                       "validate: %s", tutti_comm_last_error(handle));
        fill(in + 1, B, r * 10 + tries);
        memset(out, 0, B + 8);
        if (r == 1)
            TT_FAIL_IF(!offered(comm, 0), "rank 0 never offered");
        uint64_t before = tt_direct_messages(comm);
        TT_FAIL_IF(tt_device_batch_enqueue(comm, calls, 2, stream, "test") || tt_fake_gpu.stream_sync(stream),
                   "try %d: %s", tries, tutti_comm_last_error(handle));
        TT_FAIL_IF(!holds(out + 2, B, other * 10 + tries), "try %d: rank %d received wrong bytes", tries, r);
        uint64_t direct = tt_direct_messages(comm) - before;
        TT_FAIL_IF(r == 1 && direct < 1, "try %d: rank 1's send did not go direct", tries);
        int mine = direct == 2, all = 0;
        TT_FAIL_IF(tutti_allreduce(&mine, &all, 1, TUTTI_INT32, TUTTI_MIN, handle, NULL), "allreduce: %s",
                   tutti_comm_last_error(handle));
        both = all;
    }
    TT_FAIL_IF(!both, "rank %d: in 10 tries, the exchange never went direct both ways", r);
    return tt_fake_gpu_own_calls_only(r);
}

START_TEST(a_grouped_exchange_larger_than_a_slot_goes_direct)
{
    tt_run_ranks(2, exchange, NULL, 120);
}
END_TEST

/*
 * An exchange grouped otherwise on each side: rank 0 sends two messages
 * (5 slots, then 1) and receives two (1 slot, then 5) in one batch; rank 1
 * receives the first and sends its first in one batch, then the second
 * pair in another. Round by round, rank 0's stream would wait for rank
 * 1's second batch before sending what rank 1's first waits for: such
 * messages must stage (and arrive exact), not hang.
 */
static int regrouped(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    enum { BIG = 5 * 8192 - 3, SMALL = 8000 };
    unsigned char *in = tt_fake_gpu_malloc(2 * BIG + 64, 0), *out = tt_fake_gpu_malloc(2 * BIG + 64, 0);
    memset(out, 0, 2 * BIG + 64);
    int other = 1 - r;
    size_t first = r == 0 ? BIG : SMALL, second = r == 0 ? SMALL : BIG; /* what this rank sends */
    unsigned char *s0 = in + 1, *s1 = in + BIG + 9, *r0 = out + 2, *r1 = out + BIG + 12;
    fill(s0, first, r * 10);
    fill(s1, second, r * 10 + 1);
    tt_call_t c[4] = {
        {.coll = TT_COLL_RECV, .recv = r0, .count = second, .dtype = TUTTI_UINT8, .root = other},
        {.coll = TT_COLL_SEND, .send = s0, .count = first, .dtype = TUTTI_UINT8, .root = other},
        {.coll = TT_COLL_RECV, .recv = r1, .count = first, .dtype = TUTTI_UINT8, .root = other},
        {.coll = TT_COLL_SEND, .send = s1, .count = second, .dtype = TUTTI_UINT8, .root = other}};
    for (int i = 0; i < 4; i++)
        TT_FAIL_IF(tt_coll_validate(comm, &c[i], "test") || tt_device_classify(comm, &c[i], "test"),
                   "validate: %s", tutti_comm_last_error(handle));
    if (r == 0) {
        TT_FAIL_IF(tt_device_batch_enqueue(comm, c, 4, stream, "test"), "%s", tutti_comm_last_error(handle));
    } else {
        TT_FAIL_IF(!offered(comm, 0), "rank 0 never offered");
        TT_FAIL_IF(tt_device_batch_enqueue(comm, c, 2, stream, "test") ||
                       tt_device_batch_enqueue(comm, c + 2, 2, stream, "test"),
                   "%s", tutti_comm_last_error(handle));
    }
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    TT_FAIL_IF(!holds(r0, second, other * 10) || !holds(r1, first, other * 10 + 1),
               "rank %d received wrong bytes", r);
    return 0;
}

START_TEST(an_exchange_grouped_otherwise_on_each_side_stages)
{
    tt_run_ranks(2, regrouped, NULL, 120);
}
END_TEST

/*
 * Three ranks, each message once: rank 0 groups a send to 1 with a receive
 * from 2; rank 1 receives from 0, then sends to 2; rank 2 receives from 1,
 * then sends to 0 (plain calls). NCCL runs rank 0's group at once, and so
 * must tutti, whatever went direct:
 * - _i = 0, 1 ("late"): rank 1 comes late, so rank 0's send to it stages
 *   while its receive from 2 may go direct: the staged send's input must
 *   not wait behind that receive (_i = 0 with every message staged, the
 *   path from before direct messages);
 * - _i = 2 ("chunks"): all direct, rank 0's send two chunks long: both
 *   chunks must go before the receive from 2.
 */
static int three_plain(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    int mode = *(const int *)arg, late = mode < 2;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(mode && !tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    size_t n = late ? 1000 : 6000; /* 6000: two of 3 ranks' 5376-byte slots */
    unsigned char *in = tt_fake_gpu_malloc(n + 8, 0), *out = tt_fake_gpu_malloc(n + 8, 0);
    memset(out, 0, n + 8);
    fill(in + 1, n, r);
    TT_FAIL_IF(tutti_barrier(handle, NULL), "barrier: %s", tutti_comm_last_error(handle));
    tutti_status_t st = TUTTI_SUCCESS;
    if (r == 0) {
        tt_call_t c[2] = {
            {.coll = TT_COLL_SEND, .send = in + 1, .count = n, .dtype = TUTTI_UINT8, .root = 1},
            {.coll = TT_COLL_RECV, .recv = out + 1, .count = n, .dtype = TUTTI_UINT8, .root = 2}};
        for (int i = 0; i < 2; i++)
            TT_FAIL_IF(tt_coll_validate(comm, &c[i], "test") || tt_device_classify(comm, &c[i], "test"),
                       "validate: %s", tutti_comm_last_error(handle));
        TT_FAIL_IF(!late && !offered(comm, 1), "rank 1 never offered");
        st = tt_device_batch_enqueue(comm, c, 2, stream, "test");
    } else if (r == 1) {
        if (late)
            usleep(500000); /* rank 0's send finds no offer: it stages */
        st = tutti_recv(out + 1, n, TUTTI_UINT8, 0, handle, stream);
        TT_FAIL_IF(!st && !late && !offered(comm, 2), "rank 2 never offered");
        st = st ? st : tutti_send(in + 1, n, TUTTI_UINT8, 2, handle, stream);
    } else {
        st = tutti_recv(out + 1, n, TUTTI_UINT8, 1, handle, stream);
        if (!mode)
            usleep(100000); /* where nothing goes direct, nothing offers */
        TT_FAIL_IF(!st && mode && !offered(comm, 0), "rank 0 never offered");
        st = st ? st : tutti_send(in + 1, n, TUTTI_UINT8, 0, handle, stream);
    }
    TT_FAIL_IF(st || tt_fake_gpu.stream_sync(stream), "%s", tutti_comm_last_error(handle));
    TT_FAIL_IF(!holds(out + 1, n, (r + 2) % 3), "rank %d received wrong bytes", r);
    TT_FAIL_IF(mode == 1 && r == 0 && tt_direct_messages(comm) != 1,
               "rank 0: %llu messages direct, not only its receive from rank 2",
               (unsigned long long)tt_direct_messages(comm));
    TT_FAIL_IF(mode == 2 && tt_direct_messages(comm) != 2, "rank %d: %llu messages direct, not 2", r,
               (unsigned long long)tt_direct_messages(comm));
    return 0;
}

START_TEST(a_group_of_several_peers_is_never_held_by_its_own_receive)
{
    int mode = _i;
    setenv("TUTTI_CUDA_IPC", mode ? "1" : "0", 1);
    tt_run_ranks(3, three_plain, &mode, 60);
    setenv("TUTTI_CUDA_IPC", "1", 1);
}
END_TEST

/*
 * Three ranks, large messages: rank 0 groups a send to 1 with a receive
 * from 2; rank 1 receives from 0, then sends to 2, plainly; rank 2 groups
 * a send to 0 with a receive from 1 (what NCCL runs at once). Each pair
 * is grouped alike on both sides, but one stream per rank would wait in a
 * cycle (0's later chunks to 1, which 1 needs before its send to 2, come
 * after 0's receive from 2, which waits for 2's receive from 1): the
 * groups' messages larger than two slots must stage, and arrive exact.
 */
static int three_way(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    enum { BIG = 3 * 5376 + 1 }; /* three slots of 3 ranks' windows, and a byte */
    unsigned char *in = tt_fake_gpu_malloc(BIG + 8, 0), *out = tt_fake_gpu_malloc(BIG + 8, 0);
    memset(out, 0, BIG + 8);
    fill(in + 1, BIG, r);
    int to = (r + 1) % 3, from = (r + 2) % 3;
    tt_call_t c[2] = {
        {.coll = TT_COLL_SEND, .send = in + 1, .count = BIG, .dtype = TUTTI_UINT8, .root = to},
        {.coll = TT_COLL_RECV, .recv = out + 1, .count = BIG, .dtype = TUTTI_UINT8, .root = from}};
    for (int i = 0; i < 2; i++)
        TT_FAIL_IF(tt_coll_validate(comm, &c[i], "test") || tt_device_classify(comm, &c[i], "test"),
                   "validate: %s", tutti_comm_last_error(handle));
    tutti_status_t st;
    if (r == 1) { /* receives first: its sender finds its offer */
        st = tutti_recv(out + 1, BIG, TUTTI_UINT8, 0, handle, stream);
        TT_FAIL_IF(!st && !offered(comm, 2), "rank 2 never offered");
        st = st ? st : tutti_send(in + 1, BIG, TUTTI_UINT8, 2, handle, stream);
    } else {
        TT_FAIL_IF(!offered(comm, to), "rank %d never offered", to);
        st = tt_device_batch_enqueue(comm, c, 2, stream, "test");
    }
    TT_FAIL_IF(st || tt_fake_gpu.stream_sync(stream), "%s", tutti_comm_last_error(handle));
    TT_FAIL_IF(!holds(out + 1, BIG, from), "rank %d received wrong bytes", r);
    return 0;
}

START_TEST(groups_of_several_peers_stage_what_could_wait_in_a_cycle)
{
    tt_run_ranks(3, three_way, NULL, 120);
}
END_TEST

/*
 * A receive from any source (host memory) matched with a device send,
 * between two direct messages: it stages, and the count stays in step.
 */
static int from_any(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    enum { B = 9001 };
    unsigned char *dev = tt_fake_gpu_malloc(3 * (B + 8), 0), host[B + 8] = {0};
    for (int m = 0; m < 3; m++)
        memset(dev + m * (B + 8), 0, B + 8);
    uint64_t before = tt_direct_messages(comm);
    if (r == 0) {
        for (int m = 0; m < 3; m++) {
            fill(dev + m * (B + 8) + 1, B, m);
            TT_FAIL_IF(m != 1 && !offered(comm, 1), "rank 1 never offered");
            TT_FAIL_IF(tutti_send(dev + m * (B + 8) + 1, B, TUTTI_UINT8, 1, handle, stream), "send %d: %s", m,
                       tutti_comm_last_error(handle));
        }
    } else {
        int source = -1;
        TT_FAIL_IF(tutti_recv(dev + 1, B, TUTTI_UINT8, 0, handle, stream) ||
                       tutti_recv_any(host + 1, B, TUTTI_UINT8, &source, handle, NULL) ||
                       tutti_recv(dev + 2 * (B + 8) + 1, B, TUTTI_UINT8, 0, handle, stream),
                   "%s", tutti_comm_last_error(handle));
        TT_FAIL_IF(source != 0, "source %d", source);
    }
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    TT_FAIL_IF(r == 1 &&
                   (!holds(dev + 1, B, 0) || !holds(host + 1, B, 1) || !holds(dev + 2 * (B + 8) + 1, B, 2)),
               "rank 1 received wrong bytes");
    uint64_t direct = tt_direct_messages(comm) - before;
    TT_FAIL_IF(direct != 2, "rank %d: %llu messages ran directly, not 2", r, (unsigned long long)direct);
    return 0;
}

START_TEST(a_receive_from_any_source_takes_a_device_send)
{
    tt_run_ranks(2, from_any, NULL, 120);
}
END_TEST

/*
 * A peer that dies (_i = 0) or aborts (_i = 1) after deciding a direct send
 * whose stream work never runs (its application holds the stream): rank
 * 0's stream, waiting for the chunk, is released, the communicator fails
 * naming rank 1, and rank 0's next call fails.
 */
static int peer_lost(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    int dies = *(const int *)arg == 0;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    unsigned char *buf = tt_fake_gpu_malloc(20000, 0);
    /* A first message, waited for: both queues exist (a pinned allocation
     * behind the held stream would wait for ever). */
    tutti_status_t first = r == 0 ? tutti_recv(buf, 100, TUTTI_UINT8, 1, handle, stream)
                                  : (offered(comm, 0) ? tutti_send(buf, 100, TUTTI_UINT8, 0, handle, stream)
                                                      : TUTTI_ERR_TIMEOUT);
    TT_FAIL_IF(first || tt_fake_gpu.stream_sync(stream), "first message: %s", tutti_comm_last_error(handle));
    uint64_t before = tt_direct_messages(comm);
    if (r == 1) {
        TT_FAIL_IF(!offered(comm, 0), "rank 0 never offered");
        tt_fake_gpu_hold(stream);
        TT_FAIL_IF(tutti_send(buf, 20000, TUTTI_UINT8, 0, handle, stream), "%s",
                   tutti_comm_last_error(handle));
        usleep(200000);
        if (dies)
            _exit(0);
        tutti_comm_abort(handle);
        return -1;
    }
    TT_FAIL_IF(tutti_recv(buf, 20000, TUTTI_UINT8, 1, handle, stream), "%s", tutti_comm_last_error(handle));
    TT_FAIL_IF(tt_direct_messages(comm) != before + 1, "the message did not go direct");
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    const char *msg = tutti_comm_last_error(handle); /* said when the stream was released */
    TT_FAIL_IF(!strstr(msg, dies ? "rank 1 died" : "rank 1 gave up"), "the failure said: %s", msg);
    tutti_status_t st = tutti_barrier(handle, NULL);
    TT_FAIL_IF(!st, "the next call succeeded");
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(a_peer_lost_while_the_stream_waits_is_named)
{
    int arg = _i;
    tt_run_ranks(2, peer_lost, &arg, 90);
}
END_TEST

/*
 * Two communicators between the same two ranks, used in crossed order on
 * separate streams, as pipelines do: rank 0 receives on A, then sends on B;
 * rank 1 receives on B, then sends on A. Each receive offers and waits only
 * briefly for a sender that cannot come before the receiver's thread goes
 * on: both withdraw, the messages stage, and everything arrives (a receive
 * that waited for its sender would hold both threads until the timeout).
 */
static int crossed(tutti_comm_t a, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_pair_set_receive_wait(TT_PAIR_RECEIVE_WAIT_NS);
    tutti_comm_t b;
    TT_FAIL_IF(tutti_comm_split(a, 0, r, &b), "split: %s", tutti_comm_last_error(a));
    TT_FAIL_IF(!tt_fake_ipc_prepared(tt_comm_lookup(a, NULL), 0) ||
                   !tt_fake_ipc_prepared(tt_comm_lookup(b, NULL), 0),
               "the peers' windows did not open");
    void *sa = tt_fake_gpu_stream(), *sb = tt_fake_gpu_stream();
    enum { N = 12345 };
    unsigned char *in = tt_fake_gpu_malloc(N + 2, 0), *out = tt_fake_gpu_malloc(N + 2, 0);
    memset(out, 0, N + 2);
    fill(in + 1, N, r);
    /* A first message on each, in the same order on both ranks: both
     * queues exist before a stream is held (a pinned allocation behind a
     * held stream would wait for ever). */
    for (int c = 0; c < 2; c++) {
        tutti_comm_t comm = c ? b : a;
        void *s = c ? sb : sa;
        tutti_status_t st = r == 0 ? tutti_send(in + 1, 10, TUTTI_UINT8, 1, comm, s)
                                   : tutti_recv(out + 1, 10, TUTTI_UINT8, 0, comm, s);
        TT_FAIL_IF(st || tt_fake_gpu.stream_sync(s), "first message: %s", tutti_comm_last_error(comm));
    }
    tutti_comm_t first = r == 0 ? a : b, second = r == 0 ? b : a;
    void *s1 = r == 0 ? sa : sb, *s2 = r == 0 ? sb : sa;
    int64_t t0 = tt_now_ns();
    TT_FAIL_IF(tutti_recv(out + 1, N, TUTTI_UINT8, 1 - r, first, s1), "recv: %s",
               tutti_comm_last_error(first));
    TT_FAIL_IF(tutti_send(in + 1, N, TUTTI_UINT8, 1 - r, second, s2), "send: %s",
               tutti_comm_last_error(second));
    TT_FAIL_IF(tt_fake_gpu.stream_sync(s1) || tt_fake_gpu.stream_sync(s2), "sync: %s",
               tutti_comm_last_error(first));
    TT_FAIL_IF(!holds(out + 1, N, 1 - r), "rank %d: the message from rank %d differs", r, 1 - r);
    TT_FAIL_IF(tt_now_ns() - t0 > 20000000000LL, "rank %d: the crossed messages took %lld ms", r,
               (long long)((tt_now_ns() - t0) / 1000000));
    tutti_comm_destroy(b);
    return tt_fake_gpu_own_calls_only(r);
}

START_TEST(crossed_communicators_do_not_wait_for_each_other)
{
    tt_run_ranks(2, crossed, NULL, 120);
}
END_TEST

/*
 * Rank 0 sends more messages than a ring holds before rank 1 receives
 * any: its send past the ring must wait for rank 1 to start (not overwrite
 * an answer rank 1 has not read), and every message arrives exact.
 */
enum { APART = 4200, APART_N = 3 };

static int apart(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
    uint32_t *buf = tt_fake_gpu_malloc(APART * APART_N * sizeof *buf, 0);
    int64_t t[2] = {0, 0}, both[4];
    if (r == 0) {
        for (uint32_t i = 0; i < APART * APART_N; i++)
            buf[i] = i * 2654435761u;
        for (int m = 0; m < APART; m++) {
            TT_FAIL_IF(tutti_send(buf + m * APART_N, APART_N, TUTTI_UINT32, 1, handle, stream), "send %d: %s",
                       m, tutti_comm_last_error(handle));
            if (m == TT_IPC_RING)
                t[0] = tt_now_ns();
        }
    } else {
        memset(buf, 0, APART * APART_N * sizeof *buf);
        sleep(2);
        t[1] = tt_now_ns();
        for (int m = 0; m < APART; m++)
            TT_FAIL_IF(tutti_recv(buf + m * APART_N, APART_N, TUTTI_UINT32, 0, handle, stream), "recv %d: %s",
                       m, tutti_comm_last_error(handle));
    }
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    for (uint32_t i = 0; r == 1 && i < APART * APART_N; i++)
        TT_FAIL_IF(buf[i] != i * 2654435761u, "element %u of message %u is wrong", i, i / APART_N);
    TT_FAIL_IF(tutti_allgather(t, both, 2, TUTTI_INT64, handle, NULL), "%s", tutti_comm_last_error(handle));
    TT_FAIL_IF(r == 0 && both[0] < both[3], "rank 0's send past the ring returned before rank 1 received");
    return 0;
}

START_TEST(ranks_a_ring_of_messages_apart_wait)
{
    tt_run_ranks(2, apart, NULL, 240);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"ring", device_sends_and_receives_go_direct, 0, 2},
        {"host_sides", host_buffer_sides_stage_and_keep_the_count, 0, 0},
        {"exchange", a_grouped_exchange_larger_than_a_slot_goes_direct, 0, 0},
        {"regrouped", an_exchange_grouped_otherwise_on_each_side_stages, 0, 0},
        {"three_way", groups_of_several_peers_stage_what_could_wait_in_a_cycle, 0, 0},
        {"three_plain", a_group_of_several_peers_is_never_held_by_its_own_receive, 0, 3},
        {"recv_any", a_receive_from_any_source_takes_a_device_send, 0, 0},
        {"peer_lost", a_peer_lost_while_the_stream_waits_is_named, 0, 2},
        {"apart", ranks_a_ring_of_messages_apart_wait, 0, 0},
        {"crossed", crossed_communicators_do_not_wait_for_each_other, 0, 0},
    };
    setenv("TUTTI_IPC_WINDOW_BYTES", "65536", 1);
    /* The cases that count direct messages need every receiver to wait for
     * its sender however loaded this machine is ("crossed" sets it back). */
    tt_comm_pair_set_receive_wait(60000000000LL);
    tt_cuda_ipc_set_backend(&tt_fake_ipc);
    tt_device_set_rt(&tt_fake_gpu);
    int rc = tt_run_cases("ipc-p2p", cases, sizeof cases / sizeof *cases, 300, argc, argv);
    tt_fake_ipc_sweep();
    return rc;
}
