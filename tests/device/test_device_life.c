/* SPDX-License-Identifier: MIT */
/*
 * GPU suite, second part (built with CUDA; skips with one line where no
 * GPU is usable): what applications do around the collectives. Every kind
 * of stream (the legacy default stream, the per-thread one, blocking and
 * non-blocking streams), direct and staged; a call on a stream being
 * captured into a graph (refused, the capture intact); two communicators
 * on one GPU with interleaved calls that grow; communicators destroyed and
 * made again with device calls in between (their GPU memory comes back);
 * a rank killed or aborting in the middle of a direct collective (the
 * others' streams are released and their next call fails); direct runs
 * of many rounds, buffers off a 16-byte boundary, more than
 * 2^31 elements; an application kernel loaded lazily while a call holds
 * a stream; more streams than hardware queues; another thread capturing a
 * graph in global mode meanwhile. gpu-check.sh runs each case on its own,
 * under the environment variants users have.
 */
#include <check.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/handle.h"
#include "cuda/kernels.h"
#include "device/direct_run.h"
#include "device/memkind.h"
#include "tests/device/gpu_probe.h"
#include "tests/lib/harness.h"

int tt_test_lazy_kernel(int *p, size_t n, void *stream); /* tests/device/lazy_kernel.cu */

static int want_direct(int p)
{
    const char *ipc = getenv("TUTTI_CUDA_IPC");
    return p > 1 && !(ipc && atoi(ipc) == 0);
}

/* An fp32 sum all-reduce of n elements on the device, checked: rank r adds
 * r + i % 7 + k at i. Returns 0, or 1 after saying what went wrong. */
static int checked_allreduce(tutti_comm_t comm, int r, int p, float *dx, float *dy, size_t n, int k,
                             cudaStream_t s)
{
    float *h = malloc(n * sizeof *h);
    TT_FAIL_IF(!h, "no memory");
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(r + (int)(i % 7) + k);
    TT_FAIL_IF(cudaMemcpyAsync(dx, h, n * sizeof *h, cudaMemcpyHostToDevice, s), "copy in");
    TT_FAIL_IF(tutti_allreduce(dx, dy, n, TUTTI_FP32, TUTTI_SUM, comm, s), "allreduce n=%zu: %s", n,
               tutti_comm_last_error(comm));
    TT_FAIL_IF(cudaMemcpyAsync(h, dy, n * sizeof *h, cudaMemcpyDeviceToHost, s) || cudaStreamSynchronize(s),
               "copy out");
    for (size_t i = 0; i < n; i++) {
        float want = (float)(p * (p - 1) / 2) + (float)p * (float)((int)(i % 7) + k);
        TT_FAIL_IF(h[i] != want, "allreduce n=%zu: element %zu is %g, not %g", n, i, (double)h[i],
                   (double)want);
    }
    free(h);
    return 0;
}

/* Makes the communicator's windows known to every rank: a first device
 * call, then a barrier. */
static int warm_up(tutti_comm_t comm, int r, int p, cudaStream_t s)
{
    float *d;
    TT_FAIL_IF(cudaMalloc((void **)&d, 2 * sizeof *d), "cudaMalloc");
    int bad = checked_allreduce(comm, r, p, d, d + 1, 1, 0, s);
    cudaFree(d);
    TT_FAIL_IF(bad || tutti_barrier(comm, NULL), "warm-up: %s", tutti_comm_last_error(comm));
    return 0;
}

/* _i: stream kind (legacy default, per-thread, blocking, non-blocking) and,
 * from 4 on, staged (TUTTI_CUDA_IPC=0). */
static int on_a_kind_of_stream(tutti_comm_t comm, int r, int p, void *arg)
{
    int kind = *(const int *)arg % 4;
    cudaStream_t s = kind == 0 ? (cudaStream_t)0 : cudaStreamPerThread;
    if (kind >= 2)
        TT_FAIL_IF(cudaStreamCreateWithFlags(&s, kind == 2 ? cudaStreamDefault : cudaStreamNonBlocking),
                   "stream");
    if (warm_up(comm, r, p, s))
        return 1;
    uint64_t before = tt_direct_runs(tt_comm_lookup(comm, NULL));
    size_t n = (size_t)1 << 20;
    float *dx, *dy;
    TT_FAIL_IF(cudaMalloc((void **)&dx, n * 4) || cudaMalloc((void **)&dy, n * 4), "cudaMalloc");
    for (int k = 0; k < 4; k++)
        if (checked_allreduce(comm, r, p, dx, dy, k % 2 ? n : 1000, k, s))
            return 1;
    TT_FAIL_IF(tt_direct_runs(tt_comm_lookup(comm, NULL)) - before != (want_direct(p) ? 4u : 0u),
               "stream kind %d: %llu direct runs", kind,
               (unsigned long long)(tt_direct_runs(tt_comm_lookup(comm, NULL)) - before));
    cudaFree(dx);
    cudaFree(dy);
    if (kind >= 2)
        cudaStreamDestroy(s);
    return 0;
}

START_TEST(collectives_on_every_kind_of_stream)
{
    int arg = _i;
    if (_i >= 4)
        setenv("TUTTI_CUDA_IPC", "0", 1);
    tt_run_ranks(2, on_a_kind_of_stream, &arg, 120);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/* A stream being captured: the call is refused and nothing enters the
 * graph; after the capture the stream works. */
static int captured(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    cudaStream_t s;
    float *d, host[4] = {1, 2, 3, 4};
    TT_FAIL_IF(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) || cudaMalloc((void **)&d, 64), "set-up");
    TT_FAIL_IF(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
    tutti_status_t st = tutti_allreduce(d, d, 4, TUTTI_FP32, TUTTI_SUM, comm, s);
    tutti_status_t host_st = tutti_allreduce(host, host, 4, TUTTI_FP32, TUTTI_SUM, comm, s);
    cudaGraph_t graph;
    size_t nodes = 1;
    TT_FAIL_IF(cudaStreamEndCapture(s, &graph) || cudaGraphGetNodes(graph, NULL, &nodes),
               "the capture broke");
    TT_FAIL_IF(st != TUTTI_ERR_UNSUPPORTED || host_st != TUTTI_ERR_UNSUPPORTED,
               "calls on a capturing stream gave %s and %s", tutti_strerror(st), tutti_strerror(host_st));
    TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "captured"), "message: %s", tutti_comm_last_error(comm));
    TT_FAIL_IF(nodes != 0, "the graph holds %zu nodes", nodes);
    cudaGraphDestroy(graph);
    if (checked_allreduce(comm, r, p, d, d + 8, 4, 1, s))
        return 1;
    cudaFree(d);
    cudaStreamDestroy(s);
    return 0;
}

START_TEST(a_call_on_a_capturing_stream_is_refused)
{
    tt_run_ranks(2, captured, NULL, 60);
}
END_TEST

/* A second communicator of the same ranks: its id travels over the first. */
static int second_comm(tutti_comm_t comm, int r, int p, tutti_comm_t *out)
{
    tutti_unique_id_t id;
    if (r == 0)
        TT_FAIL_IF(tutti_get_unique_id(&id), "unique id");
    TT_FAIL_IF(tutti_broadcast(&id, &id, sizeof id, TUTTI_UINT8, 0, comm, NULL), "broadcast of the id");
    TT_FAIL_IF(tutti_comm_init(out, p, r, &id, NULL), "second communicator: %s", tutti_comm_last_error(NULL));
    return 0;
}

/* Two communicators on one GPU and one stream, calls alternating between
 * them, each larger than the last (past the staging, and many rounds of a
 * direct run's window), while the other's calls may still hold the stream. */
static int two_comms(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    tutti_comm_t other;
    if (second_comm(comm, r, p, &other))
        return 1;
    cudaStream_t s;
    size_t most = (size_t)16 << 20;
    float *dx, *dy;
    TT_FAIL_IF(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) || cudaMalloc((void **)&dx, most * 4) ||
                   cudaMalloc((void **)&dy, most * 4),
               "set-up");
    int k = 0;
    for (size_t n = 1024; n <= most; n *= 4, k++)
        if (checked_allreduce(k % 2 ? other : comm, r, p, dx, dy, n, k, s))
            return 1;
    TT_FAIL_IF(tutti_comm_destroy(other), "destroying the second communicator");
    cudaFree(dx);
    cudaFree(dy);
    cudaStreamDestroy(s);
    return 0;
}

START_TEST(two_communicators_on_one_gpu_interleave_growing_calls)
{
    tt_run_ranks(2, two_comms, NULL, 180);
}
END_TEST

/* Ten communicators in turn, each with direct calls, each destroyed: the
 * GPU memory they took comes back (windows, working memory). */
static int recreate(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float *dx, *dy;
    size_t n = (size_t)1 << 20, free_after_first = 0, free_now, total;
    TT_FAIL_IF(cudaMalloc((void **)&dx, n * 4) || cudaMalloc((void **)&dy, n * 4), "cudaMalloc");
    for (int k = 0; k < 10; k++) {
        tutti_comm_t c;
        if (second_comm(comm, r, p, &c) || warm_up(c, r, p, cudaStreamPerThread) ||
            checked_allreduce(c, r, p, dx, dy, n, k, cudaStreamPerThread))
            return 1;
        TT_FAIL_IF(tutti_comm_destroy(c), "destroy %d", k);
        TT_FAIL_IF(tutti_barrier(comm, NULL) || cudaMemGetInfo(&free_now, &total), "barrier");
        if (k == 0)
            free_after_first = free_now;
    }
    TT_FAIL_IF(free_now + ((size_t)64 << 20) < free_after_first,
               "GPU memory went from %zu to %zu free bytes over nine communicators", free_after_first,
               free_now);
    cudaFree(dx);
    cudaFree(dy);
    return 0;
}

START_TEST(communicators_destroyed_and_made_again)
{
    tt_run_ranks(2, recreate, NULL, 240);
}
END_TEST

/* _i = 0: rank 1 is killed, 1: it aborts, in the middle of a large direct
 * all-reduce. Rank 0's stream must be released, and its next call fail
 * naming what happened, within TUTTI_TIMEOUT. */
static int dies_mid_call(tutti_comm_t comm, int r, int p, void *arg)
{
    int abort_instead = *(const int *)arg;
    size_t n = (size_t)64 << 20;
    float *dx, *dy;
    TT_FAIL_IF(cudaMalloc((void **)&dx, n * 4) || cudaMalloc((void **)&dy, n * 4), "cudaMalloc");
    if (warm_up(comm, r, p, cudaStreamPerThread))
        return 1;
    TT_FAIL_IF(cudaMemset(dx, 0, n * 4), "memset");
    tutti_status_t st = tutti_allreduce(dx, dy, n, TUTTI_FP32, TUTTI_SUM, comm, cudaStreamPerThread);
    if (r == 1) {
        usleep(2000); /* the proxies are moving the call by now */
        if (abort_instead) {
            tutti_comm_abort(comm);
            return -1;
        }
        raise(SIGKILL);
    }
    TT_FAIL_IF(st, "queuing: %s", tutti_comm_last_error(comm));
    TT_FAIL_IF(cudaStreamSynchronize(cudaStreamPerThread), "the stream was not released cleanly");
    st = tutti_allreduce(dx, dy, 16, TUTTI_FP32, TUTTI_SUM, comm, cudaStreamPerThread);
    TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED && st != TUTTI_ERR_ABORTED && st != TUTTI_ERR_TIMEOUT,
               "the call after the failure gave %s: %s", tutti_strerror(st), tutti_comm_last_error(comm));
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(a_rank_dying_mid_direct_collective_releases_the_others)
{
    int arg = _i;
    pid_t pids[2];
    int codes[2];
    setenv("TUTTI_TIMEOUT", "20", 1);
    tt_spawn_ranks(2, dies_mid_call, &arg, pids);
    ck_assert_int_eq(tt_wait_ranks(2, pids, codes, 90), 0);
    unsetenv("TUTTI_TIMEOUT");
    ck_assert_msg(codes[0] == 0, "the surviving rank exited with %d", codes[0]);
    ck_assert_msg(_i ? codes[1] == 0 : codes[1] == 128 + SIGKILL, "rank 1 exited with %d", codes[1]);
}
END_TEST

/* Direct runs of many rounds of a 128 KiB window; buffers 4 bytes (fp32)
 * and 2 bytes (fp16) off a 16-byte boundary; more than 2^31 int8 elements. */
static int big_and_skewed(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    cudaStream_t s = cudaStreamPerThread;
    if (warm_up(comm, r, p, s))
        return 1;
    uint64_t before = tt_direct_runs(tt_comm_lookup(comm, NULL));
    size_t n = (size_t)16 << 20;
    float *dx, *dy;
    TT_FAIL_IF(cudaMalloc((void **)&dx, n * 4 + 64) || cudaMalloc((void **)&dy, n * 4 + 64), "cudaMalloc");
    if (checked_allreduce(comm, r, p, dx, dy, n, 1, s) ||
        checked_allreduce(comm, r, p, dx + 1, dy + 1, n - 3, 2, s))
        return 1;
    uint16_t *hx = (uint16_t *)dx + 1, *hy = (uint16_t *)dy + 1, h[1000];
    for (int i = 0; i < 1000; i++)
        h[i] = 0x3c00; /* 1.0 in fp16 */
    TT_FAIL_IF(cudaMemcpy(hx, h, sizeof h, cudaMemcpyHostToDevice), "copy");
    TT_FAIL_IF(tutti_allreduce(hx, hy, 1000, TUTTI_FP16, TUTTI_SUM, comm, s) ||
                   cudaMemcpyAsync(h, hy, sizeof h, cudaMemcpyDeviceToHost, s) || cudaStreamSynchronize(s),
               "fp16: %s", tutti_comm_last_error(comm));
    for (int i = 0; i < 1000; i++)
        TT_FAIL_IF(h[i] != (p == 2 ? 0x4000 : 0x4200), "fp16 element %d is 0x%04x", i, h[i]);
    cudaFree(dx);
    cudaFree(dy);
    size_t big = ((size_t)1 << 31) + 5;
    char *bx, *by, got[2];
    TT_FAIL_IF(cudaMalloc((void **)&bx, big) || cudaMalloc((void **)&by, big) || cudaMemset(bx, 1, big),
               "2 GiB");
    TT_FAIL_IF(tutti_allreduce(bx, by, big, TUTTI_INT8, TUTTI_SUM, comm, s) || cudaStreamSynchronize(s),
               "2^31 + 5 elements: %s", tutti_comm_last_error(comm));
    TT_FAIL_IF(cudaMemcpy(got, by, 1, cudaMemcpyDeviceToHost) ||
                   cudaMemcpy(got + 1, by + big - 1, 1, cudaMemcpyDeviceToHost),
               "copy");
    TT_FAIL_IF(got[0] != p || got[1] != p, "2^31 + 5 elements: %d and %d", got[0], got[1]);
    TT_FAIL_IF(tt_direct_runs(tt_comm_lookup(comm, NULL)) - before != (want_direct(p) ? 4u : 0u),
               "%llu direct runs", (unsigned long long)(tt_direct_runs(tt_comm_lookup(comm, NULL)) - before));
    cudaFree(bx);
    cudaFree(by);
    return 0;
}

START_TEST(direct_messages_long_skewed_and_over_2_31_elements)
{
    setenv("TUTTI_IPC_WINDOW_BYTES", "128K", 1);
    tt_run_ranks(2, big_and_skewed, NULL, 300);
    unsetenv("TUTTI_IPC_WINDOW_BYTES");
}
END_TEST

/* While rank 0's call is held (rank 1 comes a second late), rank 0 runs a
 * kernel of its own whose module is not loaded yet: with lazy loading
 * that load must not wait for the held stream for ever. */
static int lazy_kernel_meanwhile(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    cudaStream_t a, b;
    float *dx;
    int *counter, one = 0;
    TT_FAIL_IF(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) ||
                   cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) ||
                   cudaMalloc((void **)&dx, 4096 * 4) || cudaMalloc((void **)&counter, sizeof *counter) ||
                   cudaMemset(counter, 0, sizeof *counter),
               "set-up");
    if (warm_up(comm, r, p, a))
        return 1;
    if (r == 1)
        sleep(1);
    TT_FAIL_IF(tutti_allreduce(dx, dx, 4096, TUTTI_FP32, TUTTI_SUM, comm, a), "allreduce: %s",
               tutti_comm_last_error(comm));
    if (r == 0) {
        TT_FAIL_IF(tt_test_lazy_kernel(counter, 1, b), "launching the application's kernel");
        TT_FAIL_IF(cudaStreamSynchronize(b), "the application's kernel");
        TT_FAIL_IF(cudaMemcpy(&one, counter, sizeof one, cudaMemcpyDeviceToHost) || one != 1, "its result");
    }
    TT_FAIL_IF(cudaStreamSynchronize(a), "the held call");
    cudaFree(dx);
    cudaFree(counter);
    return 0;
}

START_TEST(an_application_kernel_loaded_lazily_while_a_call_is_held)
{
    tt_run_ranks(2, lazy_kernel_meanwhile, NULL, 60);
}
END_TEST

/*
 * More streams than the GPU has hardware queues (CUDA_DEVICE_MAX_CONNECTIONS,
 * 8 by default, so most share one): rank 0 puts a call on each, each
 * followed on its stream by dependent work of the application's, before
 * rank 1 (a second late) makes any: whatever a call needs must be ahead of
 * the held streams in every shared queue (a direct run's work is all on
 * its own stream, a staged call's proxy makes no GPU call).
 */
static int many_streams(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    enum { STREAMS = 40, N = 4096 };
    cudaStream_t s[STREAMS];
    float *dx, *dy;
    TT_FAIL_IF(cudaMalloc((void **)&dx, STREAMS * N * 4) || cudaMalloc((void **)&dy, STREAMS * N * 4),
               "cudaMalloc");
    for (int k = 0; k < STREAMS; k++)
        TT_FAIL_IF(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking), "stream %d", k);
    if (warm_up(comm, r, p, s[0]))
        return 1;
    TT_FAIL_IF(cudaMemset(dx, 0, STREAMS * N * 4), "memset");
    if (r == 1)
        sleep(1);
    for (int k = 0; k < STREAMS; k++) {
        float *x = dx + k * N, *y = dy + k * N;
        TT_FAIL_IF(tutti_allreduce(x, y, N, TUTTI_FP32, TUTTI_SUM, comm, s[k]), "call %d: %s", k,
                   tutti_comm_last_error(comm));
        TT_FAIL_IF(tt_cuda_reduce(x, y, y, N, TUTTI_FP32, TUTTI_SUM, s[k]), "dependent work %d", k);
    }
    for (int k = 0; k < STREAMS; k++)
        TT_FAIL_IF(cudaStreamSynchronize(s[k]), "stream %d", k);
    for (int k = 0; k < STREAMS; k++)
        cudaStreamDestroy(s[k]);
    cudaFree(dx);
    cudaFree(dy);
    return 0;
}

START_TEST(more_streams_than_hardware_queues)
{
    tt_run_ranks(2, many_streams, NULL, 120);
}
END_TEST

/*
 * Another thread of the application captures a stream of its own into a
 * graph in global mode (PyTorch's default) while this one makes device
 * calls, the first of a second communicator among them (its queue and
 * staging are set up meanwhile): no runtime call of tutti's, on any
 * thread, may break that capture, and the calls must give their sums. The
 * test's own waits and copies run outside the capture (before and after).
 */
typedef struct {
    cudaStream_t s;
    int state; /* 1 capturing, 2 asked to end */
    cudaError_t ended;
    pthread_mutex_t lock;
    pthread_cond_t changed;
} capturer_t;

static void *capture_meanwhile(void *arg)
{
    capturer_t *c = arg;
    cudaError_t e = cudaStreamBeginCapture(c->s, cudaStreamCaptureModeGlobal);
    pthread_mutex_lock(&c->lock);
    c->state = e ? -1 : 1;
    pthread_cond_broadcast(&c->changed);
    while (c->state == 1)
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
    cudaGraph_t graph = NULL;
    c->ended = e ? e : cudaStreamEndCapture(c->s, &graph);
    if (graph)
        cudaGraphDestroy(graph);
    return NULL;
}

static int global_capture(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    enum { CALLS = 4, N = 1 << 18 };
    tutti_comm_t other;
    cudaStream_t s;
    float *d[CALLS], *h = malloc(N * sizeof *h);
    TT_FAIL_IF(!h || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "set-up");
    if (warm_up(comm, r, p, s) || second_comm(comm, r, p, &other))
        return 1;
    for (int k = 0; k < CALLS; k++) {
        for (size_t i = 0; i < N; i++)
            h[i] = (float)(r + k);
        TT_FAIL_IF(cudaMalloc((void **)&d[k], N * sizeof *h) ||
                       cudaMemcpy(d[k], h, N * sizeof *h, cudaMemcpyHostToDevice),
                   "inputs");
    }
    capturer_t c = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    pthread_t t;
    TT_FAIL_IF(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking) ||
                   pthread_create(&t, NULL, capture_meanwhile, &c),
               "capture thread");
    pthread_mutex_lock(&c.lock);
    while (c.state == 0)
        pthread_cond_wait(&c.changed, &c.lock);
    pthread_mutex_unlock(&c.lock);
    tutti_status_t st[CALLS];
    for (int k = 0; k < CALLS; k++) /* growing: the second communicator's first call is the third */
        st[k] = tutti_allreduce(d[k], d[k], (size_t)N >> (CALLS - 1 - k), TUTTI_FP32, TUTTI_SUM,
                                k == 2 ? other : comm, s);
    pthread_mutex_lock(&c.lock);
    c.state = 2;
    pthread_cond_broadcast(&c.changed);
    pthread_mutex_unlock(&c.lock);
    pthread_join(t, NULL);
    TT_FAIL_IF(c.ended, "the other thread's capture broke: %s", cudaGetErrorString(c.ended));
    for (int k = 0; k < CALLS; k++)
        TT_FAIL_IF(st[k], "call %d: %s", k, tutti_comm_last_error(k == 2 ? other : comm));
    TT_FAIL_IF(cudaStreamSynchronize(s), "sync");
    for (int k = 0; k < CALLS; k++) {
        size_t n = (size_t)N >> (CALLS - 1 - k);
        TT_FAIL_IF(cudaMemcpy(h, d[k], n * sizeof *h, cudaMemcpyDeviceToHost), "copy out");
        for (size_t i = 0; i < n; i++)
            TT_FAIL_IF(h[i] != (float)(p * (p - 1) / 2 + p * k), "call %d element %zu: %g", k, i,
                       (double)h[i]);
        cudaFree(d[k]);
    }
    TT_FAIL_IF(tutti_comm_destroy(other), "destroying the second communicator");
    cudaStreamDestroy(c.s);
    cudaStreamDestroy(s);
    free(h);
    return 0;
}

START_TEST(a_capture_in_global_mode_on_another_thread_survives)
{
    if (_i)
        setenv("TUTTI_CUDA_IPC", "0", 1);
    tt_run_ranks(2, global_capture, NULL, 120);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"streams", collectives_on_every_kind_of_stream, 0, 8},
        {"capture", a_call_on_a_capturing_stream_is_refused, 0, 0},
        {"two_comms", two_communicators_on_one_gpu_interleave_growing_calls, 0, 0},
        {"recreate", communicators_destroyed_and_made_again, 0, 0},
        {"rank_dies", a_rank_dying_mid_direct_collective_releases_the_others, 0, 2},
        {"big_skewed", direct_messages_long_skewed_and_over_2_31_elements, 0, 0},
        {"lazy_kernel", an_application_kernel_loaded_lazily_while_a_call_is_held, 0, 0},
        {"many_streams", more_streams_than_hardware_queues, 0, 0},
        {"global_capture", a_capture_in_global_mode_on_another_thread_survives, 0, 2},
    };
    char why[200];
    if (!(argc == 2 && strcmp(argv[1], "--list") == 0) && !tt_test_gpu_usable(why, sizeof why)) {
        printf("1..0 # SKIP %s\n", why);
        return 0;
    }
    return tt_run_cases("device-life", cases, sizeof cases / sizeof *cases, 300, argc, argv);
}
