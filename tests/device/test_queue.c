/* SPDX-License-Identifier: MIT */
/*
 * The device queue without a GPU: the real queue, staging and device front
 * (src/device) on the stream model of fake_gpu.h, with "device" buffers in
 * host memory. Each call must give the host path's results, and put its
 * work on the caller's stream in the order the GPU needs: the inputs
 * copied to the staging and the proxy signalled before the gate, the
 * results copied back after it, every call after the one before; calls
 * larger than the staging pass through it piece by piece. The proxy may
 * make no runtime call at all. The model exits the rank (status 90) on
 * what would hang or corrupt a real GPU: a gate launched (with launch
 * blocking) before its work was queued, a pinned free while a gate holds a
 * stream, ticket words or staging touched after they were freed, a stream
 * call on another device's stream.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/call_place.h"
#include "coll/coll.h"
#include "comm/handle.h"
#include "device/device_coll.h"
#include "tests/fakes/fake_gpu.h"
#include "tests/lib/harness.h"

/* The modes of _i: default; one hardware queue; launch blocking; both. */
static const tt_fake_mode_t modes[] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}};

static const tt_coll_t colls[] = {TT_COLL_ALLREDUCE, TT_COLL_REDUCE_SCATTER, TT_COLL_ALLGATHER,
                                  TT_COLL_BROADCAST, TT_COLL_REDUCE,         TT_COLL_ALLTOALL};

/* What a staged call puts on the caller's stream: a wait for the call
 * before it (but the first), its input copy (where it has device input),
 * the signal, the gate, its result copy (where it has device output), the
 * record that the next call waits for. */
static void expect_call(char *want, size_t len, const tt_call_t *d, int first)
{
    size_t at = strlen(want);
    snprintf(want + at, len - at, "%s%sSG%sR", first ? "" : "W", d->in_bytes ? "C" : "",
             d->out_bytes ? "C" : "");
}

/* One call on device buffers through the queue, against the host path. */
static int one_call(tt_comm_t *comm, tt_call_t c, int ip, char *dev, char *ref, size_t span, int r, int p,
                    void *stream, char *want_log, size_t log_len)
{
    size_t e = tutti_dtype_size(c.dtype);
    for (size_t i = 0; i < span / e; i++)
        tt_test_value(c.dtype, c.op, ref, i, r, i);
    memcpy(dev, ref, span); /* the stream is idle: the previous call was waited for */
    tt_call_t want = c, d = c;
    tt_test_place(&want, c.coll, ref, c.count, e, r, p, ip);
    tt_test_place(&d, c.coll, dev, c.count, e, r, p, ip);
    TT_FAIL_IF(tt_test_run_host(comm, &want), "host %s: %s", tt_coll_name(c.coll),
               tutti_comm_last_error(NULL));
    TT_FAIL_IF(tt_coll_validate(comm, &d, "test"), "validate: %s", tutti_comm_last_error(NULL));
    d.send_on_device = d.in_bytes != 0;
    d.recv_on_device = d.out_bytes != 0;
    expect_call(want_log, log_len, &d, !want_log[0]);
    TT_FAIL_IF(tt_device_coll_enqueue(comm, &d, stream), "%s: %s", tt_coll_name(c.coll),
               tutti_comm_last_error(NULL));
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    TT_FAIL_IF(memcmp(dev, ref, span), "%s %s n=%zu in_place=%d: results differ from the host path",
               tt_coll_name(c.coll), tutti_dtype_name(c.dtype), c.count, ip);
    return 0;
}

static int staged_through_the_stream(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    const tt_fake_mode_t *mode = arg;
    tt_fake_gpu_mode(mode);
    size_t span = 2 * 3001 * (size_t)p * 4 + 64;
    char *dev = tt_fake_gpu_malloc(span, 0), *ref = malloc(span);
    void *stream = tt_fake_gpu_stream();
    char want[512] = "", got[512];
    for (size_t ci = 0; ci < sizeof colls / sizeof *colls; ci++)
        for (int ip = 0; ip < 2; ip++) {
            if (ip && colls[ci] == TT_COLL_ALLTOALL)
                continue;
            tt_call_t c = {.coll = colls[ci],
                           .count = ci % 2 ? 3001 : 7,
                           .dtype = ci % 3 ? TUTTI_FP32 : TUTTI_FP16,
                           .op = ci % 3 ? TUTTI_SUM : TUTTI_AVG,
                           .root = (int)(ci % (size_t)p)};
            if (one_call(comm, c, ip, dev, ref, span, r, p, stream, want, sizeof want))
                return 1;
        }
    tt_fake_gpu_log(stream, got, sizeof got);
    TT_FAIL_IF(strcmp(got, want), "the stream saw \"%s\", not \"%s\"", got, want);
    TT_FAIL_IF(tt_fake_gpu_own_calls_only(-1), "the proxy made runtime calls");
    TT_FAIL_IF(tt_fake_gpu_preloaded_at() < 0 || tt_fake_gpu_preloaded_at() > tt_fake_gpu_first_gate(),
               "the kernels were not loaded before the first gate");
    free(ref);
    return 0;
}

/* Every mode: results, order on the stream, and no GPU work of the proxy's. */
START_TEST(staged_calls_copy_on_the_callers_stream)
{
    tt_run_ranks(2 + _i % 2, staged_through_the_stream, (void *)&modes[_i], 120);
}
END_TEST

/*
 * Calls alternate between two streams without waiting in between: every
 * call reuses the one staging area, so the next call's inputs may land
 * only after the previous call's results went back (the model runs the
 * streams concurrently and slowly enough to catch it).
 */
static int two_streams(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    tt_fake_mode_t mode = {.op_delay_us = 300};
    tt_fake_gpu_mode(&mode);
    enum { CALLS = 6, N = 1000 };
    float *x[CALLS], *y[CALLS];
    void *s[2] = {tt_fake_gpu_stream(), tt_fake_gpu_stream()};
    for (int k = 0; k < CALLS; k++) {
        x[k] = tt_fake_gpu_malloc(N * sizeof(float), 0);
        y[k] = tt_fake_gpu_malloc(N * sizeof(float), 0);
        for (int i = 0; i < N; i++)
            x[k][i] = (float)(k * 1000 + i + r);
        tt_call_t c = {.coll = TT_COLL_ALLREDUCE,
                       .send = x[k],
                       .recv = y[k],
                       .count = N,
                       .dtype = TUTTI_FP32,
                       .op = TUTTI_SUM};
        TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate");
        c.send_on_device = c.recv_on_device = 1;
        TT_FAIL_IF(tt_device_coll_enqueue(comm, &c, s[k % 2]), "call %d: %s", k,
                   tutti_comm_last_error(handle));
    }
    TT_FAIL_IF(tt_fake_gpu.stream_sync(s[0]) || tt_fake_gpu.stream_sync(s[1]), "sync");
    for (int k = 0; k < CALLS; k++)
        for (int i = 0; i < N; i++)
            TT_FAIL_IF(y[k][i] != (float)p * (float)(k * 1000 + i) + (float)(p * (p - 1) / 2),
                       "call %d element %d: %g", k, i, (double)y[k][i]);
    return 0;
}

START_TEST(calls_on_two_streams_keep_the_staging_in_order)
{
    tt_run_ranks(2, two_streams, NULL, 120);
}
END_TEST

/* A stream being captured into a graph: refused, nothing on the stream. */
static int captured(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)r;
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    float *x = tt_fake_gpu_malloc(64, 0);
    void *stream = tt_fake_gpu_stream();
    tt_fake_gpu_capture(stream, 1);
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = x, .count = 16, .dtype = TUTTI_FP32};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate");
    c.send_on_device = c.recv_on_device = 1;
    tutti_status_t st = tt_device_coll_enqueue(comm, &c, stream);
    TT_FAIL_IF(st != TUTTI_ERR_UNSUPPORTED || !strstr(tutti_comm_last_error(handle), "captured"),
               "a captured stream gave %s: %s", tutti_strerror(st), tutti_comm_last_error(handle));
    char log[64];
    tt_fake_gpu_log(stream, log, sizeof log);
    TT_FAIL_IF(log[0], "the captured stream got \"%s\"", log);
    return 0;
}

START_TEST(a_stream_being_captured_is_refused)
{
    tt_run_ranks(2, captured, NULL, 60);
}
END_TEST

/* The caller's thread has GPU 1 current; the communicator's calls use GPU
 * 0: every stream call must be made with GPU 0 current (the model exits
 * otherwise), and the caller's device is back afterwards. */
static int other_device_current(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    float *x = tt_fake_gpu_malloc(1000 * sizeof(float), 0);
    void *stream = tt_fake_gpu_stream(); /* GPU 0's */
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i + r);
    tt_fake_gpu_set_current(1);
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = x, .count = 1000, .dtype = TUTTI_FP32};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate");
    c.send_on_device = c.recv_on_device = 1;
    TT_FAIL_IF(tt_device_coll_enqueue(comm, &c, stream), "%s", tutti_comm_last_error(handle));
    TT_FAIL_IF(tt_fake_gpu_current() != 1, "the caller's current GPU became %d", tt_fake_gpu_current());
    tt_fake_gpu_set_current(0);
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    for (int i = 0; i < 1000; i++)
        TT_FAIL_IF(x[i] != (float)(p * i + p * (p - 1) / 2), "element %d: %g", i, (double)x[i]);
    tt_fake_gpu_set_current(1); /* destroy runs with GPU 1 current too */
    return 0;
}

START_TEST(calls_make_the_communicators_gpu_current)
{
    tt_run_ranks(2, other_device_current, NULL, 60);
}
END_TEST

static void *release_later(void *arg)
{
    usleep((useconds_t)(intptr_t)arg);
    tt_fake_gpu_release();
    return NULL;
}

/*
 * The application's own work holds the stream while calls queue behind
 * it, each larger than the one before (the last larger than the staging),
 * and the communicator is destroyed as soon as the proxy is done, while
 * the slow "GPU" has yet to run the last gate and copies: the ticket words
 * and the staging must outlive them.
 */
static int slow_gpu_and_growth(tutti_comm_t handle, int r, int p, void *arg)
{
    setenv("TUTTI_DEVICE_STAGING_BYTES", "64K", 1);
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    tt_fake_mode_t mode = {.op_delay_us = 20000};
    tt_fake_gpu_mode(&mode);
    void *stream = tt_fake_gpu_stream();
    tt_fake_gpu_hold(stream);
    pthread_t t;
    pthread_create(&t, NULL, release_later, (void *)(intptr_t)300000);
    float *x[3];
    for (int k = 0; k < 3; k++) {
        size_t n = (size_t)1000 << (2 * k);
        x[k] = tt_fake_gpu_malloc(n * sizeof(float), 0);
        for (size_t i = 0; i < n; i++)
            x[k][i] = (float)(r + 1);
        tt_call_t c = {
            .coll = TT_COLL_ALLREDUCE, .send = x[k], .recv = x[k], .count = n, .dtype = TUTTI_FP32};
        TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate");
        c.send_on_device = c.recv_on_device = 1;
        TT_FAIL_IF(tt_device_coll_enqueue(comm, &c, stream), "call %d: %s", k, tutti_comm_last_error(handle));
    }
    pthread_join(t, NULL);
    TT_FAIL_IF(tutti_comm_destroy(handle), "destroy: %s", tutti_comm_last_error(NULL));
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    for (int k = 0; k < 3; k++)
        TT_FAIL_IF(x[k][0] != (float)(p * (p + 1) / 2), "call %d: %g", k, (double)x[k][0]);
    return -1; /* destroyed here */
}

START_TEST(nothing_is_freed_while_the_gpu_may_use_it)
{
    tt_run_ranks(2, slow_gpu_and_growth, NULL, 120);
}
END_TEST

/* A call whose input copy the runtime refuses (on every rank) fails at
 * once, and with it the communicator, whose numbers it took: the calls
 * after it fail, nothing waits on the stream, and destroy does not hang.
 * (That rank 0 alone refusing fails rank 1's calls is test-device-model's.) */
static int refused_copy(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    float *x = tt_fake_gpu_malloc(1000 * sizeof(float), 0);
    void *stream = tt_fake_gpu_stream();
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 1000; i++)
            x[i] = (float)(r + k);
        tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = x, .count = 1000, .dtype = TUTTI_FP32};
        tutti_status_t st = tt_coll_validate(comm, &c, "test");
        c.send_on_device = c.recv_on_device = 1;
        if (k == 1)
            tt_fake_gpu_fail_copy(1);
        if (!st)
            st = tt_device_coll_enqueue(comm, &c, stream);
        /* Call 1 fails here, or already at its start when the other rank's
         * refusal came first (it gave up the communicator). */
        TT_FAIL_IF(k == 0 ? st != TUTTI_SUCCESS : st == TUTTI_SUCCESS, "call %d: %s (%s)", k,
                   tutti_strerror(st), tutti_comm_last_error(handle));
        TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
        if (k == 0)
            TT_FAIL_IF(x[0] != (float)(p * (p - 1) / 2), "call %d: %g", k, (double)x[0]);
    }
    return 0;
}

START_TEST(a_refused_copy_fails_its_call_and_the_communicator)
{
    tt_run_ranks(2, refused_copy, NULL, 60);
}
END_TEST

/*
 * Calls larger than the staging (64 KiB here, in slots of 16 KiB) pass
 * through it piece by piece to the proxy's own stand-in, and back: every
 * collective gives the host path's results, in every mode, the stream's
 * log shows a gate and a signal per piece, and the proxy makes no runtime
 * call (nor does the staging grow: a pinned allocation would be a
 * synchronisation point).
 */
static int through_the_slots(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    tt_fake_gpu_mode(arg);
    size_t span = 2 * 30001 * (size_t)p * 4 + 64;
    char *dev = tt_fake_gpu_malloc(span, 0), *ref = malloc(span);
    void *stream = tt_fake_gpu_stream();
    char want[4096] = "";
    for (size_t ci = 0; ci < sizeof colls / sizeof *colls; ci++) {
        tt_call_t c = {.coll = colls[ci],
                       .count = 30001,
                       .dtype = ci % 3 ? TUTTI_FP32 : TUTTI_FP16,
                       .op = ci % 3 ? TUTTI_SUM : TUTTI_AVG,
                       .root = (int)(ci % (size_t)p)};
        if (one_call(comm, c, 0, dev, ref, span, r, p, stream, want, sizeof want))
            return 1;
    }
    char log[8192];
    tt_fake_gpu_log(stream, log, sizeof log);
    int gates = 0;
    for (const char *at = log; *at; at++)
        gates += *at == 'G';
    TT_FAIL_IF(gates < 6 * 8, "%d gates for 6 calls larger than the staging: \"%s\"", gates, log);
    return tt_fake_gpu_own_calls_only(-1);
}

START_TEST(calls_larger_than_the_staging_pass_through_it_in_pieces)
{
    setenv("TUTTI_DEVICE_STAGING_BYTES", "64K", 1);
    tt_run_ranks(2 + _i % 2, through_the_slots, (void *)&modes[_i], 120);
    unsetenv("TUTTI_DEVICE_STAGING_BYTES");
}
END_TEST

/* A batch of sends and receives on device buffers (NCCL's grouped calls):
 * each rank sends a device buffer to its right and receives one from its
 * left, staged through the caller's stream like any call that cannot go
 * direct: copy in, signal, gate, copy out; no GPU work of the proxy's. */
static int device_batch(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    const tt_fake_mode_t *mode = arg;
    tt_fake_gpu_mode(mode);
    enum { N = 5000 };
    uint32_t *out = tt_fake_gpu_malloc(N * 4, 0), *in = tt_fake_gpu_malloc(N * 4, 0);
    void *stream = tt_fake_gpu_stream();
    for (int i = 0; i < N; i++)
        out[i] = (uint32_t)(r * 100000 + i);
    tt_call_t calls[2] = {
        {.coll = TT_COLL_SEND, .send = out, .count = N, .dtype = TUTTI_UINT32, .root = (r + 1) % p},
        {.coll = TT_COLL_RECV, .recv = in, .count = N, .dtype = TUTTI_UINT32, .root = (r + p - 1) % p}};
    for (int i = 0; i < 2; i++)
        TT_FAIL_IF(tt_coll_validate(comm, &calls[i], "test"), "validate");
    calls[0].send_on_device = calls[1].recv_on_device = 1;
    TT_FAIL_IF(tt_device_batch_enqueue(comm, calls, 2, stream, "test batch"), "%s",
               tutti_comm_last_error(handle));
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    int left = (r + p - 1) % p;
    for (int i = 0; i < N; i++)
        TT_FAIL_IF(in[i] != (uint32_t)(left * 100000 + i), "element %d: %u", i, in[i]);
    char log[64];
    tt_fake_gpu_log(stream, log, sizeof log);
    TT_FAIL_IF(strcmp(log, "CSGCR"), "the stream saw \"%s\"", log);
    TT_FAIL_IF(tt_fake_gpu_own_calls_only(-1), "the proxy made runtime calls");
    return 0;
}

START_TEST(a_device_batch_stages_through_the_callers_stream)
{
    tt_run_ranks(3, device_batch, (void *)&modes[_i], 60);
}
END_TEST

static Suite *queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *tc = tcase_create("queue");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, staged_calls_copy_on_the_callers_stream, 0, 4);
    tcase_add_test(tc, calls_on_two_streams_keep_the_staging_in_order);
    tcase_add_test(tc, a_stream_being_captured_is_refused);
    tcase_add_test(tc, calls_make_the_communicators_gpu_current);
    tcase_add_test(tc, nothing_is_freed_while_the_gpu_may_use_it);
    tcase_add_test(tc, a_refused_copy_fails_its_call_and_the_communicator);
    tcase_add_loop_test(tc, calls_larger_than_the_staging_pass_through_it_in_pieces, 0, 4);
    tcase_add_loop_test(tc, a_device_batch_stages_through_the_callers_stream, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    tt_device_set_rt(&tt_fake_gpu);
    return tt_run_suite(queue_suite());
}
