/* SPDX-License-Identifier: MIT */
/*
 * tutti_recv_any on forked ranks, over shm, tcp and (with the libibverbs
 * stand-in) verbs: every message from every sender arrives once, whole, in
 * each sender's order, named by its sender; a peer already in a collective
 * is not taken for a sender; named receives and collectives go on matching
 * after it; a wait that times out leaves the communicator usable; a dead
 * sender and bad arguments are reported.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "tests/lib/harness.h"

#define BIG 300001 /* elements: several slices, shm slots, verbs slots and its zero-copy path */
#define NMSG 2     /* messages from each sender in each size */

static uint32_t value(int from, int msg, size_t i)
{
    return (uint32_t)(from * 1000003u + (uint32_t)msg * 104729u + (uint32_t)i);
}

/* Rank 0 receives NMSG messages of each size from every other rank, from
 * any source; the others send theirs. A barrier between the sizes: a
 * receive from any source takes the next message of whichever rank, and
 * its count must be the receive's. */
static int many_senders(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    static const size_t sizes[] = {5, BIG};
    uint32_t *buf = malloc(BIG * sizeof *buf);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        TT_FAIL_IF(tutti_barrier(comm, NULL), "rank %d: barrier: %s", r, tutti_comm_last_error(comm));
        if (r != 0) {
            for (int m = 0; m < NMSG; m++) {
                for (size_t i = 0; i < n; i++)
                    buf[i] = value(r, m, i);
                tutti_status_t st = tutti_send(buf, n, TUTTI_UINT32, 0, comm, NULL);
                TT_FAIL_IF(st, "rank %d: send: %s", r, tutti_comm_last_error(comm));
            }
            continue;
        }
        int next[16] = {0}; /* the message each sender sends next */
        for (int got = 0; got < NMSG * (p - 1); got++) {
            int src = -2;
            tutti_status_t st = tutti_recv_any(buf, n, TUTTI_UINT32, &src, comm, NULL);
            TT_FAIL_IF(st, "rank 0: recv_any %d of count %zu: %s", got, n, tutti_comm_last_error(comm));
            TT_FAIL_IF(src < 1 || src >= p, "rank 0: recv_any named source %d", src);
            TT_FAIL_IF(next[src] >= NMSG, "rank 0: more than %d messages from rank %d", NMSG, src);
            for (size_t i = 0; i < n; i++)
                TT_FAIL_IF(buf[i] != value(src, next[src], i),
                           "rank 0: message %d of count %zu named rank %d: element %zu is %u, want %u",
                           next[src], n, src, i, buf[i], value(src, next[src], i));
            next[src]++;
        }
    }
    free(buf);
    /* The sequence numbers still agree: a collective right after. */
    uint32_t one = 1;
    tutti_status_t st = tutti_allreduce(&one, &one, 1, TUTTI_UINT32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st || one != (uint32_t)p, "rank %d: allreduce after: %s, %u", r, tutti_strerror(st), one);
    return 0;
}

static void run_many_senders(const char *transports, int nranks)
{
    setenv("TUTTI_TRANSPORTS", transports, 1);
    tt_run_ranks(nranks, many_senders, NULL, 120);
    unsetenv("TUTTI_TRANSPORTS");
}

START_TEST(every_message_arrives_once_named_by_its_sender)
{
    run_many_senders("shm,tcp", 2 + _i);
    run_many_senders("tcp", 2 + _i);
}
END_TEST

#ifdef TT_HAVE_VERBS
START_TEST(over_verbs)
{
    tt_fabric_begin("recvany");
    setenv("TTFAKE_DEVICES", "fakeib0:ib:1", 1);
    setenv("TUTTI_IB_SLOT_BYTES", "8K", 1);
    setenv("TUTTI_IB_SLOTS", "4", 1);
    setenv("TUTTI_IB_ZCOPY_BYTES", "16K", 1);
    tt_set_ranks_per_node(1);
    run_many_senders("verbs", 3);
    tt_set_ranks_per_node(0);
    tt_fabric_end();
    static const char *const set[] = {"TTFAKE_DEVICES",      "TTFAKE_FABRIC",  "TUTTI_IBVERBS_LIB",
                                      "TUTTI_IB_SLOT_BYTES", "TUTTI_IB_SLOTS", "TUTTI_IB_ZCOPY_BYTES"};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        unsetenv(set[i]); /* the suites after it run over shm and tcp */
}
END_TEST
#endif

/* Rank 1 goes straight into an all-reduce, so rank 0's next message from
 * it is the all-reduce's; rank 2 sends later. The receive must take rank
 * 2's message, then a named receive and the all-reduce go on. */
static int collective_is_not_a_send(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    uint32_t x = (uint32_t)r, sum = 0, m[3] = {0};
    tutti_status_t st = TUTTI_SUCCESS;
    if (r == 2) {
        usleep(300000);
        uint32_t a[3] = {21, 22, 23}, b[3] = {31, 32, 33};
        st = tutti_send(a, 3, TUTTI_UINT32, 0, comm, NULL);
        st = st ? st : tutti_send(b, 3, TUTTI_UINT32, 0, comm, NULL);
    } else if (r == 0) {
        int src = -1;
        st = tutti_recv_any(m, 3, TUTTI_UINT32, &src, comm, NULL);
        TT_FAIL_IF(st, "rank 0: recv_any: %s", tutti_comm_last_error(comm));
        TT_FAIL_IF(src != 2 || m[0] != 21 || m[2] != 23, "rank 0: recv_any got %u..%u from rank %d", m[0],
                   m[2], src);
        st = tutti_recv(m, 3, TUTTI_UINT32, 2, comm, NULL);
        TT_FAIL_IF(st || m[0] != 31 || m[2] != 33, "rank 0: named recv after: %s, %u..%u", tutti_strerror(st),
                   m[0], m[2]);
    }
    TT_FAIL_IF(st, "rank %d: %s", r, tutti_comm_last_error(comm));
    st = tutti_allreduce(&x, &sum, 1, TUTTI_UINT32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st || sum != (uint32_t)(p * (p - 1) / 2), "rank %d: allreduce: %s, %u", r, tutti_strerror(st),
               sum);
    return 0;
}

START_TEST(a_peer_in_a_collective_is_not_a_sender)
{
    setenv("TUTTI_TRANSPORTS", _i ? "tcp" : "shm,tcp", 1);
    tt_run_ranks(3, collective_is_not_a_send, NULL, 60);
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

/* Nobody sends: rank 0's wait ends at the timeout, saying so in the words
 * tools look for, and the communicator goes on working. The others enter
 * the all-reduce late enough that its own wait stays short. */
static int nobody_sends(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    uint32_t x = 1, sum = 0;
    if (r == 0) {
        int src = 7;
        int64_t t0 = tt_now_ms();
        tutti_status_t st = tutti_recv_any(&x, 1, TUTTI_UINT32, &src, comm, NULL);
        int64_t took = tt_now_ms() - t0;
        const char *why = tutti_comm_last_error(comm);
        TT_FAIL_IF(st != TUTTI_ERR_TIMEOUT, "rank 0: recv_any with no sender returned %s",
                   tutti_status_name(st));
        TT_FAIL_IF(took < 1900, "rank 0: the timeout came after %lld ms, not 2000", (long long)took);
        TT_FAIL_IF(src != -1, "rank 0: a failed recv_any named source %d", src);
        TT_FAIL_IF(!strstr(why, " timeout ") || !strstr(why, "no rank sent"), "rank 0: the error says: %s",
                   why);
    } else {
        usleep(2600000);
    }
    tutti_status_t st = tutti_allreduce(&x, &sum, 1, TUTTI_UINT32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st || sum != (uint32_t)p, "rank %d: allreduce after the timeout: %s", r,
               tutti_comm_last_error(comm));
    return 0;
}

START_TEST(a_timeout_leaves_the_communicator_usable)
{
    setenv("TUTTI_TIMEOUT", "2", 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(2, nobody_sends, NULL, 60);
    unsetenv("TUTTI_TRANSPORTS");
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* Rank 1 dies without sending: rank 0's wait ends well before the timeout,
 * naming it. */
static int sender_dies(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    if (r == 1)
        _exit(3);
    uint32_t x;
    int src;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_recv_any(&x, 1, TUTTI_UINT32, &src, comm, NULL);
    TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED, "rank 0: recv_any from a dead rank returned %s",
               tutti_status_name(st));
    TT_FAIL_IF(tt_now_ms() - t0 > 20000, "rank 0: the dead rank was noticed after %lld ms",
               (long long)(tt_now_ms() - t0));
    TT_FAIL_IF(!tt_named_as_dead(tutti_comm_last_error(comm), 1), "rank 0: the error says: %s",
               tutti_comm_last_error(comm));
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(a_dead_sender_is_named)
{
    pid_t pids[2];
    int codes[2];
    setenv("TUTTI_TIMEOUT", "60", 1);
    setenv("TUTTI_TRANSPORTS", _i ? "tcp" : "shm,tcp", 1);
    tt_spawn_ranks(2, sender_dies, NULL, pids);
    ck_assert(!tt_wait_ranks(2, pids, codes, 60));
    ck_assert_msg(codes[0] == 0, "rank 0 exited %d", codes[0]);
    ck_assert_int_eq(codes[1], 3);
    unsetenv("TUTTI_TRANSPORTS");
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

static int bad_arguments(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    (void)r;
    uint32_t x;
    int src;
    TT_FAIL_IF(tutti_recv_any(&x, 1, TUTTI_UINT32, NULL, comm, NULL) != TUTTI_ERR_INVALID_ARG,
               "a NULL source was accepted");
    TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "source"), "says: %s", tutti_comm_last_error(comm));
    TT_FAIL_IF(tutti_recv_any(NULL, 1, TUTTI_UINT32, &src, comm, NULL) != TUTTI_ERR_INVALID_ARG,
               "a NULL buffer was accepted");
    TT_FAIL_IF(tutti_recv_any(&x, 1, (tutti_dtype_t)99, &src, comm, NULL) != TUTTI_ERR_INVALID_ARG,
               "a bad dtype was accepted");
    TT_FAIL_IF(tutti_recv_any(&x, 1, TUTTI_UINT32, &src, comm, (tutti_stream_t)&x) != TUTTI_ERR_UNSUPPORTED,
               "a stream was accepted");
    if (p == 1) {
        TT_FAIL_IF(tutti_recv_any(&x, 1, TUTTI_UINT32, &src, comm, NULL) != TUTTI_ERR_INVALID_ARG,
                   "a receive with no other rank was accepted");
        TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "no other rank"), "says: %s",
                   tutti_comm_last_error(comm));
    }
    return 0;
}

START_TEST(bad_arguments_are_refused)
{
    tt_run_ranks(1, bad_arguments, NULL, 30);
    tt_run_ranks(2, bad_arguments, NULL, 30);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("recv_any");
    TCase *tc = tcase_create("recv_any");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, every_message_arrives_once_named_by_its_sender, 0, 3);
#ifdef TT_HAVE_VERBS
    tcase_add_test(tc, over_verbs);
#endif
    tcase_add_loop_test(tc, a_peer_in_a_collective_is_not_a_sender, 0, 2);
    tcase_add_test(tc, a_timeout_leaves_the_communicator_usable);
    tcase_add_loop_test(tc, a_dead_sender_is_named, 0, 2);
    tcase_add_test(tc, bad_arguments_are_refused);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
