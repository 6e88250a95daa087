/* SPDX-License-Identifier: MIT */
/*
 * Batches of point-to-point calls (tt_coll_run_batch) on forked ranks:
 * all-to-all, gather and scatter patterns that deadlock as blocking calls,
 * several messages to one peer in order, batches meeting plain calls; and
 * tutti_comm_abort from another thread interrupting a waiting collective.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "tests/lib/harness.h"

#define BIG 300001 /* elements: several slices and shm slots */
#define NMSG 3     /* messages from each rank to each other rank */

static tt_call_t p2p_call(tt_comm_t *comm, tt_coll_t coll, void *buf, size_t n, int peer)
{
    tt_call_t c = {.coll = coll, .count = n, .dtype = TUTTI_UINT32, .root = peer};
    if (coll == TT_COLL_SEND)
        c.send = buf;
    else
        c.recv = buf;
    ck_assert_int_eq(tt_coll_validate(comm, &c, tt_coll_name(coll)), TUTTI_SUCCESS);
    return c;
}

static uint32_t value(int from, int to, int msg, size_t i)
{
    return (uint32_t)(from * 1000003u + to * 7919u + (uint32_t)msg * 104729u + (uint32_t)i);
}

/* Every rank receives three messages from every peer (small, big, big)
 * and sends three to each, receives listed first: as blocking calls every
 * rank would wait in its first receive. */
static int alltoall_batch(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: batches are internal */
    (void)arg;
    size_t sizes[NMSG] = {5, BIG, BIG / 3};
    uint32_t **in = calloc((size_t)(NMSG * p), sizeof *in), **out = calloc((size_t)(NMSG * p), sizeof *out);
    tt_call_t *calls = calloc((size_t)(2 * NMSG * p), sizeof *calls);
    int n = 0;
    for (int q = 0; q < p; q++)
        for (int m = 0; m < NMSG && q != r; m++) {
            in[NMSG * q + m] = calloc(sizes[m], sizeof(uint32_t));
            calls[n++] = p2p_call(comm, TT_COLL_RECV, in[NMSG * q + m], sizes[m], q);
        }
    for (int q = 0; q < p; q++)
        for (int m = 0; m < NMSG && q != r; m++) {
            out[NMSG * q + m] = malloc(sizes[m] * sizeof(uint32_t));
            for (size_t i = 0; i < sizes[m]; i++)
                out[NMSG * q + m][i] = value(r, q, m, i);
            calls[n++] = p2p_call(comm, TT_COLL_SEND, out[NMSG * q + m], sizes[m], q);
        }
    tutti_status_t st = tt_coll_run_batch(comm, calls, n);
    TT_FAIL_IF(st, "rank %d: batch: %s: %s", r, tutti_strerror(st), tutti_comm_last_error(handle));
    for (int q = 0; q < p; q++)
        for (int m = 0; m < NMSG && q != r; m++)
            for (size_t i = 0; i < sizes[m]; i++)
                TT_FAIL_IF(in[NMSG * q + m][i] != value(q, r, m, i),
                           "rank %d: message %d from %d: element %zu is %u", r, m, q, i, in[NMSG * q + m][i]);
    for (int i = 0; i < NMSG * p; i++) {
        free(in[i]);
        free(out[i]);
    }
    free(in);
    free(out);
    free(calls);
    return 0;
}

START_TEST(alltoall_of_sends_and_receives_does_not_deadlock)
{
    static const int ranks[] = {1, 2, 3, 5, 8};
    tt_run_ranks(ranks[_i], alltoall_batch, NULL, 120);
}
END_TEST

/* Gather to a root then scatter from it, each a batch on the root and a
 * single call elsewhere; a count-0 send in the root's batch is an empty
 * message that rank 0 receives with a count-0 receive in its own. */
static int gather_scatter(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: batches are internal */
    (void)arg;
    int root = p - 1;
    size_t n = 1000;
    uint32_t *all = calloc(n * (size_t)p, sizeof(uint32_t)), mine[1000];
    tt_call_t *calls = calloc((size_t)p + 1, sizeof *calls);
    for (size_t i = 0; i < n; i++)
        mine[i] = value(r, root, 0, i);
    int k = 0;
    if (r == root) {
        for (int q = 0; q < p; q++)
            if (q != root)
                calls[k++] = p2p_call(comm, TT_COLL_RECV, all + (size_t)q * n, n, q);
        if (p > 1)
            calls[k++] = p2p_call(comm, TT_COLL_SEND, mine, 0, 0);
    } else {
        calls[k++] = p2p_call(comm, TT_COLL_SEND, mine, n, root);
        if (r == 0)
            calls[k++] = p2p_call(comm, TT_COLL_RECV, all, 0, root);
    }
    tutti_status_t st = tt_coll_run_batch(comm, calls, k);
    TT_FAIL_IF(st, "rank %d: gather: %s", r, tutti_comm_last_error(handle));
    for (int q = 0; r == root && q < p; q++)
        for (size_t i = 0; i < n && q != root; i++)
            TT_FAIL_IF(all[(size_t)q * n + i] != value(q, root, 0, i), "gather: block %d element %zu wrong",
                       q, i);
    k = 0;
    if (r == root)
        for (int q = 0; q < p; q++)
            if (q != root) /* the same blocks go back to their ranks */
                calls[k++] = p2p_call(comm, TT_COLL_SEND, all + (size_t)q * n, n, q);
    memset(mine, 0, sizeof mine);
    if (r != root)
        calls[k++] = p2p_call(comm, TT_COLL_RECV, mine, n, root);
    st = tt_coll_run_batch(comm, calls, k);
    TT_FAIL_IF(st, "rank %d: scatter: %s", r, tutti_comm_last_error(handle));
    for (size_t i = 0; i < n && r != root; i++)
        TT_FAIL_IF(mine[i] != value(r, root, 0, i), "scatter: rank %d element %zu wrong", r, i);
    free(all);
    free(calls);
    return 0;
}

START_TEST(gather_and_scatter_batches)
{
    static const int ranks[] = {1, 2, 4, 7};
    tt_run_ranks(ranks[_i], gather_scatter, NULL, 120);
}
END_TEST

/* A batch on rank 0 meets plain blocking calls on rank 1, in both orders. */
static int batch_meets_plain(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: batches are internal */
    (void)p;
    (void)arg;
    uint32_t *a = malloc(BIG * sizeof(uint32_t)), *b = calloc(BIG, sizeof(uint32_t));
    for (size_t i = 0; i < BIG; i++)
        a[i] = value(r, 1 - r, 0, i);
    tutti_status_t st;
    if (r == 0) {
        tt_call_t calls[2] = {p2p_call(comm, TT_COLL_RECV, b, BIG, 1),
                              p2p_call(comm, TT_COLL_SEND, a, BIG, 1)};
        st = tt_coll_run_batch(comm, calls, 2);
    } else {
        st = tutti_send(a, BIG, TUTTI_UINT32, 0, handle, NULL);
        if (!st)
            st = tutti_recv(b, BIG, TUTTI_UINT32, 0, handle, NULL);
    }
    TT_FAIL_IF(st, "rank %d: %s", r, tutti_comm_last_error(handle));
    for (size_t i = 0; i < BIG; i++)
        TT_FAIL_IF(b[i] != value(1 - r, r, 0, i), "rank %d: element %zu wrong", r, i);
    free(a);
    free(b);
    return 0;
}

START_TEST(batch_matches_plain_calls)
{
    tt_run_ranks(2, batch_meets_plain, NULL, 60);
}
END_TEST

typedef struct {
    tutti_comm_t comm;
    tutti_status_t st;
    int64_t returned_ms;
    char error[512]; /* the waiting thread's last error */
} waiter_t;

static void *wait_in_allreduce(void *arg)
{
    waiter_t *w = arg;
    float x[4] = {1, 2, 3, 4};
    w->st = tutti_allreduce(x, x, 4, TUTTI_FP32, TUTTI_SUM, w->comm, NULL);
    w->returned_ms = tt_now_ms();
    snprintf(w->error, sizeof w->error, "%s", tutti_comm_last_error(NULL));
    return NULL;
}

/* Rank 0 waits in an all-reduce that rank 1 never joins; its main thread
 * aborts the communicator. The wait must end at once with
 * TUTTI_ERR_ABORTED, long before TUTTI_TIMEOUT (60 s here). */
static int abort_while_waiting(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    if (r == 1) {
        /* Rank 0 aborts meanwhile. Its part of the first all-reduce may
         * already be here (it sent before it gave up); the second cannot. */
        sleep(2);
        float x[4] = {0};
        tutti_status_t st = tutti_allreduce(x, x, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        if (!st)
            st = tutti_allreduce(x, x, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        TT_FAIL_IF(st == TUTTI_SUCCESS, "rank 1: all-reduce with an aborted rank succeeded");
        tutti_comm_abort(comm);
        return -1;
    }
    waiter_t w = {.comm = comm, .st = TUTTI_SUCCESS};
    pthread_t t;
    TT_FAIL_IF(pthread_create(&t, NULL, wait_in_allreduce, &w), "pthread_create");
    usleep(300000);
    int64_t aborted_ms = tt_now_ms();
    tutti_status_t st = tutti_comm_abort(comm);
    pthread_join(t, NULL);
    TT_FAIL_IF(st, "rank 0: abort: %s", tutti_strerror(st));
    TT_FAIL_IF(w.st != TUTTI_ERR_ABORTED, "rank 0: the waiting all-reduce returned %s, not TUTTI_ERR_ABORTED",
               tutti_status_name(w.st));
    TT_FAIL_IF(w.returned_ms - aborted_ms > 2000, "rank 0: the all-reduce returned %lld ms after the abort",
               (long long)(w.returned_ms - aborted_ms));
    TT_FAIL_IF(!strstr(w.error, "aborted"), "rank 0: the waiting thread's last error says: %s", w.error);
    return -1;
}

START_TEST(abort_from_another_thread_interrupts_a_waiting_collective)
{
    setenv("TUTTI_TIMEOUT", "60", 1);
    tt_run_ranks(2, abort_while_waiting, NULL, 30);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("batch");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, alltoall_of_sends_and_receives_does_not_deadlock, 0, 5);
    tcase_add_loop_test(tc, gather_and_scatter_batches, 0, 4);
    tcase_add_test(tc, batch_matches_plain_calls);
    tcase_add_test(tc, abort_from_another_thread_interrupts_a_waiting_collective);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
