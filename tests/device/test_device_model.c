/* SPDX-License-Identifier: MIT */
/*
 * The device path's hazards, each on the stream model of fake_gpu.h (with
 * the host-memory cuda_ipc backend of fake_ipc.h): what a GPU makes of a
 * held stream when the application loads a kernel lazily, shares hardware
 * queues among many streams, captures a graph on another thread, or queues
 * calls behind work it releases itself; aborting while a call waits for
 * its stream; a call that could not be put on one rank's stream; a peer's
 * window opened with another GPU current; the error-feedback state read
 * while a call that updates it is still queued. The model exits a rank
 * (90) on what would hang or break a capture on a GPU.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll.h"
#include "comm/handle.h"
#include "compress/allreduce.h"
#include "device/device_coll.h"
#include "device/direct_run.h"
#include "tests/fakes/fake_gpu.h"
#include "tests/fakes/fake_ipc.h"
#include "tests/lib/harness.h"

enum { N = 3001 };

/* An fp32 sum all-reduce of n elements, in place, on device buffer x
 * through the device queue (white box: comm is the communicator itself). */
static tutti_status_t queue_allreduce(tt_comm_t *comm, float *x, size_t n, void *stream)
{
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = x, .count = n, .dtype = TUTTI_FP32};
    tutti_status_t st = tt_coll_validate(comm, &c, "test");
    if (st)
        return st;
    c.send_on_device = c.recv_on_device = 1;
    return tt_device_coll_enqueue(comm, &c, stream);
}

static void fill(float *x, size_t n, int r, int k)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(r + k + (int)(i % 7));
}

/* Whether x holds the sum of fill(.., r, k) over p ranks. */
static int summed(const float *x, size_t n, int p, int k)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != (float)(p * (p - 1) / 2 + p * (k + (int)(i % 7))))
            return 0;
    return 1;
}

/* Two checked calls on stream, a barrier between them: afterwards every
 * rank has bound and opened every peer's window, so the calls after go
 * direct (unless TUTTI_CUDA_IPC=0), and the staging exists. */
static int warm_up(tt_comm_t *comm, tutti_comm_t handle, int r, int p, void *stream)
{
    float *x = tt_fake_gpu_malloc(N * sizeof(float), 0);
    for (int k = 0; k < 2; k++) {
        if (k == 1) {
            TT_FAIL_IF(tutti_barrier(handle, NULL), "barrier: %s", tutti_comm_last_error(handle));
            if (!getenv("TUTTI_CUDA_IPC"))
                TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "the peers' windows did not open");
        }
        fill(x, N, r, k);
        TT_FAIL_IF(queue_allreduce(comm, x, N, stream), "warm-up: %s", tutti_comm_last_error(handle));
        TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
        TT_FAIL_IF(!summed(x, N, p, k), "warm-up call %d: wrong sum", k);
    }
    return 0;
}

static int staged_variant(int i)
{
    if (i)
        setenv("TUTTI_CUDA_IPC", "0", 1);
    else
        unsetenv("TUTTI_CUDA_IPC");
    return i;
}

/*
 * A lazily loaded kernel. Rank 1 comes a second late, so rank 0's call is held; rank 0
 * then launches a kernel of its own that is not loaded yet: the load takes
 * the context lock and waits for every queued operation, the held call's
 * among them. Whatever releases that call may make no runtime call.
 */
static int lazy_load(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    if (warm_up(comm, handle, r, p, stream))
        return 1;
    float *x = tt_fake_gpu_malloc(N * sizeof(float), 0);
    fill(x, N, r, 5);
    if (r == 1)
        sleep(1);
    TT_FAIL_IF(queue_allreduce(comm, x, N, stream), "%s", tutti_comm_last_error(handle));
    if (r == 0)
        tt_fake_gpu_lazy_load();
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    TT_FAIL_IF(!summed(x, N, p, 5), "wrong sum");
    return 0;
}

START_TEST(a_kernel_loaded_lazily_while_a_call_is_held)
{
    staged_variant(_i);
    tt_run_ranks(2, lazy_load, NULL, 90);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/*
 * Shared hardware queues. Forty streams share CUDA's eight hardware queues; rank 0
 * queues a call on each, each followed by dependent work of its own, all
 * before rank 1 arrives. Nothing a call needs may sit behind a later
 * call's held stream in a shared hardware queue.
 */
static int many_streams(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    enum { STREAMS = 40, M = 1000 };
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *s[STREAMS];
    for (int k = 0; k < STREAMS; k++)
        s[k] = tt_fake_gpu_stream();
    if (warm_up(comm, handle, r, p, s[0]))
        return 1;
    float *x = tt_fake_gpu_malloc(STREAMS * M * sizeof(float), 0),
          *y = tt_fake_gpu_malloc(STREAMS * M * sizeof(float), 0);
    if (r == 1)
        sleep(1);
    for (int k = 0; k < STREAMS; k++) {
        fill(x + k * M, M, r, k);
        TT_FAIL_IF(queue_allreduce(comm, x + k * M, M, s[k]), "call %d: %s", k,
                   tutti_comm_last_error(handle));
        TT_FAIL_IF(tt_fake_gpu.copy(y + k * M, x + k * M, M * sizeof(float), s[k]), "dependent work");
    }
    for (int k = 0; k < STREAMS; k++) {
        TT_FAIL_IF(tt_fake_gpu.stream_sync(s[k]), "sync");
        TT_FAIL_IF(!summed(y + k * M, M, p, k), "call %d: the dependent work saw a wrong sum", k);
    }
    return 0;
}

START_TEST(more_streams_than_hardware_queues)
{
    staged_variant(_i);
    tt_run_ranks(2, many_streams, NULL, 90);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/*
 * A capture on another thread. Another thread of the application captures a stream of its own
 * in global mode (PyTorch's default) for the whole time the calls run,
 * each larger than the last: no runtime call of tutti's, on any thread,
 * may break that capture.
 */
typedef struct {
    void *stream;
    int capturing, stop;
    pthread_mutex_t lock;
    pthread_cond_t changed;
} capturer_t;

static void *capture_thread(void *arg)
{
    capturer_t *c = arg;
    tt_fake_gpu_begin_capture(c->stream, TT_FAKE_CAPTURE_GLOBAL);
    pthread_mutex_lock(&c->lock);
    c->capturing = 1;
    pthread_cond_broadcast(&c->changed);
    while (!c->stop)
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
    tt_fake_gpu_capture(c->stream, 0);
    return NULL;
}

/* The application's own synchronisation, outside the capture's rules. */
static int app_sync(void *stream)
{
    int mode = TT_FAKE_CAPTURE_RELAXED;
    tt_fake_gpu_exchange_mode(&mode);
    int e = tt_fake_gpu.stream_sync(stream);
    tt_fake_gpu_exchange_mode(&mode);
    return e;
}

static int global_capture(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    if (warm_up(comm, handle, r, p, stream))
        return 1;
    capturer_t c = {.stream = tt_fake_gpu_stream(),
                    .lock = PTHREAD_MUTEX_INITIALIZER,
                    .changed = PTHREAD_COND_INITIALIZER};
    pthread_t t;
    pthread_create(&t, NULL, capture_thread, &c);
    pthread_mutex_lock(&c.lock);
    while (!c.capturing)
        pthread_cond_wait(&c.changed, &c.lock);
    pthread_mutex_unlock(&c.lock);
    for (int k = 0; k < 3; k++) {
        size_t n = (size_t)N << (3 * k);
        float *x = tt_fake_gpu_malloc(n * sizeof(float), 0);
        fill(x, n, r, k);
        TT_FAIL_IF(queue_allreduce(comm, x, n, stream), "call %d: %s", k, tutti_comm_last_error(handle));
        TT_FAIL_IF(app_sync(stream), "sync");
        TT_FAIL_IF(!summed(x, n, p, k), "call %d: wrong sum", k);
    }
    pthread_mutex_lock(&c.lock);
    c.stop = 1;
    pthread_cond_broadcast(&c.changed);
    pthread_mutex_unlock(&c.lock);
    pthread_join(t, NULL);
    return 0;
}

START_TEST(a_capture_in_global_mode_on_another_thread)
{
    staged_variant(_i);
    tt_run_ranks(2, global_capture, NULL, 90);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/*
 * Growth. Calls each larger than the last queue while the stream is
 * held: _i = 0 by the application's own work, which it releases only once
 * it has queued them all (the calls must return without waiting for the
 * device); _i = 1 by tutti itself, rank 1 coming late to direct calls.
 */
static int growth(tutti_comm_t handle, int r, int p, void *arg)
{
    int app_hold = *(const int *)arg == 0;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    if (warm_up(comm, handle, r, p, stream))
        return 1;
    if (app_hold)
        tt_fake_gpu_hold(stream);
    else if (r == 1)
        sleep(1);
    float *x[3];
    for (int k = 0; k < 3; k++) {
        size_t n = (size_t)N << (3 * k);
        x[k] = tt_fake_gpu_malloc(n * sizeof(float), 0);
        fill(x[k], n, r, k);
        TT_FAIL_IF(queue_allreduce(comm, x[k], n, stream), "call %d: %s", k, tutti_comm_last_error(handle));
    }
    if (app_hold)
        tt_fake_gpu_release();
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    for (int k = 0; k < 3; k++)
        TT_FAIL_IF(!summed(x[k], (size_t)N << (3 * k), p, k), "call %d: wrong sum", k);
    return 0;
}

START_TEST(calls_that_grow_while_a_stream_is_held)
{
    int arg = _i;
    if (_i == 0)
        setenv("TUTTI_CUDA_IPC", "0", 1);
    tt_run_ranks(2, growth, &arg, 90);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/*
 * Abort. The application's own work holds the stream for good, a call
 * waits behind it, and another thread aborts the communicator: the abort
 * returns, whatever the stream does.
 */
static void *abort_later(void *arg)
{
    usleep(300000);
    tutti_comm_abort(*(tutti_comm_t *)arg);
    return NULL;
}

static int abort_behind_a_hold(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    if (warm_up(comm, handle, r, p, stream))
        return 1;
    float *x = tt_fake_gpu_malloc(N * sizeof(float), 0);
    tt_fake_gpu_hold(stream);
    TT_FAIL_IF(queue_allreduce(comm, x, N, stream), "%s", tutti_comm_last_error(handle));
    pthread_t t;
    pthread_create(&t, NULL, abort_later, &handle);
    pthread_join(t, NULL);
    return -1; /* aborted; the hold is never released */
}

START_TEST(abort_returns_while_a_call_waits_for_its_stream)
{
    staged_variant(_i);
    tt_run_ranks(2, abort_behind_a_hold, NULL, 60);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/*
 * A call one rank could not queue. The runtime refuses rank 0's copy into the staging
 * of its second call; rank 1's copies all work. Rank 0 may not skip that
 * collective while rank 1 runs it: rank 1's calls from it on must fail
 * (never pair with rank 0's next call, never hang).
 */
/* Whether x holds rank r's fill for call k plus the other rank's for call k2
 * (two ranks): the sum of two different calls. */
static int crossed(const float *x, size_t n, int r, int k, int k2)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != (float)(r + k + (int)(i % 7)) + (float)(1 - r + k2 + (int)(i % 7)))
            return 0;
    return 1;
}

static int partial_failure(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    float *x[3];
    tutti_status_t st[4];
    for (int k = 0; k < 3; k++) {
        x[k] = tt_fake_gpu_malloc(N * sizeof(float), 0);
        fill(x[k], N, r, 10 * k);
        if (r == 0 && k == 1)
            tt_fake_gpu_fail_copy(1);
        st[k] = queue_allreduce(comm, x[k], N, stream);
        tt_fake_gpu.stream_sync(stream);
    }
    st[3] = tutti_barrier(handle, NULL);
    TT_FAIL_IF(st[0] || !summed(x[0], N, p, 0), "rank %d: the first call failed", r);
    TT_FAIL_IF(r == 0 && st[1] != TUTTI_ERR_SYSTEM, "rank 0: the refused call gave %s",
               tutti_strerror(st[1]));
    TT_FAIL_IF(crossed(x[1], N, r, 10, 20) || crossed(x[2], N, r, 20, 10),
               "rank %d: a call summed with another call of the other rank's", r);
    TT_FAIL_IF(r == 1 && !st[1] && !st[2] && !st[3] && summed(x[1], N, p, 10),
               "rank 1: every call succeeded though rank 0 could not queue its second");
    for (int k = 1; k < 3; k++)
        TT_FAIL_IF(!st[k] && !summed(x[k], N, p, 10 * k) && !st[k + 1] && (k == 2 || !st[k + 2]),
                   "rank %d: call %d gave a wrong sum and no later call failed", r, k);
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(a_call_one_rank_could_not_queue_fails_on_every_rank)
{
    staged_variant(_i);
    setenv("TUTTI_TIMEOUT", "10", 1);
    tt_run_ranks(2, partial_failure, NULL, 90);
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/*
 * The GPU current. The caller's thread has GPU 1 current; the
 * communicator's calls use GPU 0: the peers' windows are opened with GPU 0
 * current (the backend exits 92 otherwise), and GPU 1 is current again
 * after each call.
 */
static int other_gpu_current(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream(); /* GPU 0's */
    float *x = tt_fake_gpu_malloc(N * sizeof(float), 0);
    for (int k = 0; k < 3; k++) {
        if (k == 1)
            TT_FAIL_IF(tutti_barrier(handle, NULL), "barrier");
        fill(x, N, r, k);
        tt_fake_gpu_set_current(1);
        TT_FAIL_IF(queue_allreduce(comm, x, N, stream), "call %d: %s", k, tutti_comm_last_error(handle));
        TT_FAIL_IF(tt_fake_gpu_current() != 1, "the caller's current GPU became %d", tt_fake_gpu_current());
        tt_fake_gpu_set_current(0);
        TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
        TT_FAIL_IF(!summed(x, N, p, k), "call %d: wrong sum", k);
    }
    TT_FAIL_IF(tt_direct_runs(comm) == 0, "no call ran directly");
    return 0;
}

START_TEST(peers_windows_open_with_the_communicators_gpu_current)
{
    tt_run_ranks(2, other_gpu_current, NULL, 60);
}
END_TEST

/*
 * The error state. A compressed all-reduce with error feedback waits
 * behind the application's work (released 300 ms later by another thread);
 * reading the error state meanwhile must give the state after that call,
 * as the same call on host buffers leaves it.
 */
static void *release_later(void *arg)
{
    (void)arg;
    usleep(300000);
    tt_fake_gpu_release();
    return NULL;
}

static tutti_status_t queue_compressed(tt_comm_t *comm, float *dev, float *out, const tutti_compress_t *how,
                                       tutti_ef_state_t ef, void *stream)
{
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = dev, .recv = out, .count = N, .dtype = TUTTI_FP32};
    tutti_status_t st = tt_coll_validate(comm, &c, "test");
    c.send_on_device = 1; /* the output on the host: the CPU path on staged copies */
    return st ? st : tt_compress_enqueue(comm, &c, how, ef, stream);
}

static int ef_after_queued_call(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    const tutti_compress_t how = {.kind = TUTTI_COMPRESS_INT8, .block = 64};
    float *g = malloc(N * sizeof *g), *out = malloc(N * sizeof *out), *dev = tt_fake_gpu_malloc(N * 4, 0);
    for (int i = 0; i < N; i++)
        g[i] = (float)((i * 37 + r * 11) % 101) / 7.0f;
    tutti_ef_state_t want, got, first;
    TT_FAIL_IF(tutti_ef_create(&want, N, p) || tutti_ef_create(&got, N, p) || tutti_ef_create(&first, N, p),
               "ef_create");
    TT_FAIL_IF(tutti_allreduce_compressed(g, out, N, TUTTI_FP32, TUTTI_SUM, &how, want, handle, NULL),
               "host call: %s", tutti_comm_last_error(handle));
    memcpy(dev, g, N * sizeof *g);
    void *stream = tt_fake_gpu_stream();
    /* A first queued call, waited for: the queue and its working memory exist. */
    TT_FAIL_IF(queue_compressed(comm, dev, out, &how, first, stream) || tt_fake_gpu.stream_sync(stream),
               "first queued call: %s", tutti_comm_last_error(handle));
    tt_fake_gpu_hold(stream);
    TT_FAIL_IF(queue_compressed(comm, dev, out, &how, got, stream), "queued call: %s",
               tutti_comm_last_error(handle));
    pthread_t t;
    pthread_create(&t, NULL, release_later, NULL);
    const float *w_want, *w_got, *s_want, *s_got;
    size_t nw_want, nw_got, ns_want, ns_got;
    TT_FAIL_IF(tutti_ef_errors(want, &w_want, &nw_want, &s_want, &ns_want) ||
                   tutti_ef_errors(got, &w_got, &nw_got, &s_got, &ns_got),
               "ef_errors");
    TT_FAIL_IF(nw_want != nw_got || memcmp(w_want, w_got, nw_want * sizeof *w_want),
               "the worker error read while the call was queued is not the state after it");
    TT_FAIL_IF(ns_want != ns_got || (ns_want && memcmp(s_want, s_got, ns_want * sizeof *s_want)),
               "the server error read while the call was queued is not the state after it");
    pthread_join(t, NULL);
    TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
    tutti_ef_destroy(want);
    tutti_ef_destroy(got);
    tutti_ef_destroy(first);
    return 0;
}

START_TEST(the_error_state_is_read_after_the_calls_queued_before)
{
    tt_run_ranks(2, ef_after_queued_call, NULL, 60);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"lazy_load", a_kernel_loaded_lazily_while_a_call_is_held, 0, 2},
        {"many_streams", more_streams_than_hardware_queues, 0, 2},
        {"global_capture", a_capture_in_global_mode_on_another_thread, 0, 2},
        {"growth", calls_that_grow_while_a_stream_is_held, 0, 2},
        {"abort", abort_returns_while_a_call_waits_for_its_stream, 0, 2},
        {"partial_failure", a_call_one_rank_could_not_queue_fails_on_every_rank, 0, 2},
        {"other_gpu", peers_windows_open_with_the_communicators_gpu_current, 0, 0},
        {"ef_read", the_error_state_is_read_after_the_calls_queued_before, 0, 0},
    };
    tt_cuda_ipc_set_backend(&tt_fake_ipc);
    tt_device_set_rt(&tt_fake_gpu);
    int rc = tt_run_cases("device-model", cases, sizeof cases / sizeof *cases, 300, argc, argv);
    tt_fake_ipc_sweep();
    return rc;
}
