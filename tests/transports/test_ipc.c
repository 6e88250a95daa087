/* SPDX-License-Identifier: MIT */
/*
 * Direct runs over cuda_ipc, without a GPU: a backend whose "device
 * memory" is host memory (windows in shared segments) stands in for CUDA,
 * and the stream model of fake_gpu.h for the device layer's runtime (its
 * copies, its kernels running the CPU's reductions, its stores and waits
 * on the words in the ranks' segments, across processes). Everything else
 * is the real code: the board through which ranks agree call by call, the
 * rounds a direct run puts on the caller's stream, the transport's life
 * cycle, the queue. Results must equal the host path's, bit for bit, and
 * no thread but the caller's may make a runtime call.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algorithms/registry.h"
#include "tests/lib/call_place.h"
#include "coll/coll.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "device/device_coll.h"
#include "device/direct_run.h"
#include "tests/fakes/fake_gpu.h"
#include "tests/fakes/fake_ipc.h"
#include "tests/lib/harness.h"
#include "reduce/reduce.h"
#include "transports/cuda_ipc/cuda_ipc.h"
#include "transports/local.h"

/* Which ranks offer to go direct: all, or all but one. */
typedef struct {
    int host_rank; /* this rank calls on host buffers; -1: none */
    int gpu_of_rank[TT_FAKE_IPC_GPUS];
    int expect_direct;
} plan_t;

static const tt_coll_t colls[] = {TT_COLL_ALLREDUCE, TT_COLL_REDUCE_SCATTER, TT_COLL_ALLGATHER,
                                  TT_COLL_BROADCAST, TT_COLL_REDUCE,         TT_COLL_ALLTOALL};
static const struct {
    tutti_dtype_t t;
    tutti_op_t op;
} kinds[] = {
    {TUTTI_FP32, TUTTI_SUM}, {TUTTI_INT32, TUTTI_MAX}, {TUTTI_FP16, TUTTI_AVG}, {TUTTI_BF16, TUTTI_SUM}};
/* One element; a few thousand (one round each); many rounds of a 64 KiB
 * window; more than a one-shot all-reduce takes (two-shot). */
static const size_t counts[] = {1, 3001, 40000, 70001};

/* One call: the host path's result on ref, then the same call on dev
 * through the device queue (or the host path, for the plan's host rank);
 * the two must be equal. */
static int one_call(tt_comm_t *comm, const plan_t *plan, tt_call_t c, char *ref, char *dev, size_t span_bytes,
                    int ip, int r, int p, void *stream)
{
    size_t n = c.count, e = tutti_dtype_size(c.dtype);
    for (size_t i = 0; i < span_bytes / e; i++)
        tt_test_value(c.dtype, c.op, ref, i, r, i);
    memcpy(dev, ref, span_bytes);
    tt_call_t want = c, d = c;
    tt_test_place(&want, c.coll, ref, n, e, r, p, ip);
    tt_test_place(&d, c.coll, dev, n, e, r, p, ip);
    TT_FAIL_IF(tt_test_run_host(comm, &want), "%s: %s", tt_coll_name(c.coll),
               tutti_comm_last_error(comm->handle));
    TT_FAIL_IF(tt_coll_validate(comm, &d, "test"), "prepare: %s", tutti_comm_last_error(comm->handle));
    uint64_t runs = tt_direct_runs(comm);
    int host = plan->host_rank == r;
    if (host) {
        TT_FAIL_IF(tt_coll_run(comm, &d), "%s on host buffers: %s", tt_coll_name(c.coll),
                   tutti_comm_last_error(comm->handle));
    } else {
        d.send_on_device = d.in_bytes != 0;
        d.recv_on_device = d.out_bytes != 0;
        TT_FAIL_IF(tt_device_coll_enqueue(comm, &d, stream) || tt_fake_gpu.stream_sync(stream), "%s: %s",
                   tt_coll_name(c.coll), tutti_comm_last_error(comm->handle));
    }
    int direct = plan->expect_direct && !host;
    TT_FAIL_IF(tt_direct_runs(comm) != runs + (uint64_t)direct, "%s: %s directly", tt_coll_name(c.coll),
               direct ? "did not run" : "ran");
    TT_FAIL_IF(memcmp(dev, ref, span_bytes), "%s %s %s n=%zu in_place=%d: results differ from the host path",
               tt_coll_name(c.coll), tutti_dtype_name(c.dtype), tutti_op_name(c.op), n, ip);
    return 0;
}

static int direct_collectives(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    const plan_t *plan = arg;
    int gpu = plan->gpu_of_rank[r];
    tt_fake_gpu_set_current(gpu);
    void *stream = tt_fake_gpu_stream();
    /* The host rank has a window too (as after earlier device calls): only
     * its announcements keep the others from going direct. */
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, gpu), "prepare failed");
    int opens = tt_fake_ipc_used.opens;
    size_t span_bytes = 2 * counts[3] * (size_t)p * 4 + 64;
    char *ref = malloc(span_bytes), *dev = tt_fake_gpu_malloc(span_bytes, gpu);
    TT_FAIL_IF(!ref || !dev, "no memory");
    for (size_t ci = 0; ci < sizeof colls / sizeof *colls; ci++)
        for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++)
            for (size_t ni = 0; ni < sizeof counts / sizeof *counts; ni++)
                for (int ip = 0; ip < 2; ip++) {
                    if (ip && colls[ci] == TT_COLL_ALLTOALL)
                        continue; /* no in-place form */
                    if (ni == 3 && colls[ci] != TT_COLL_ALLREDUCE)
                        continue; /* the two-shot all-reduce's size */
                    tt_call_t c = {.coll = colls[ci],
                                   .count = counts[ni],
                                   .dtype = kinds[ki].t,
                                   .op = kinds[ki].op,
                                   .root = (int)(ni % (size_t)p)};
                    if (one_call(comm, plan, c, ref, dev, span_bytes, ip, r, p, stream))
                        return 1;
                }
    free(ref);
    if (plan->expect_direct && plan->host_rank != r)
        TT_FAIL_IF(tt_fake_ipc_used.opens != p - 1 || tt_fake_ipc_used.opens != opens,
                   "%d window opens for %d peers, %d during the calls", tt_fake_ipc_used.opens, p - 1,
                   tt_fake_ipc_used.opens - opens);
    return tt_fake_gpu_own_calls_only(r);
}

/* Every collective, dtype, size (up to many rounds) and in-place form runs
 * directly and gives the host path's results, on 2, 3 and 4 ranks. */
START_TEST(direct_runs_match_the_host_path)
{
    setenv("TUTTI_IPC_WINDOW_BYTES", "64K", 1);
    plan_t plan = {.host_rank = -1, .expect_direct = 1};
    tt_run_ranks(2 + _i, direct_collectives, &plan, 240);
    unsetenv("TUTTI_IPC_WINDOW_BYTES");
}
END_TEST

/* One rank on host buffers: nobody goes direct, and all results hold. */
START_TEST(a_host_rank_keeps_everyone_staged)
{
    plan_t plan = {.host_rank = _i, .expect_direct = 0};
    tt_run_ranks(3, direct_collectives, &plan, 240);
}
END_TEST

/* GPU 1 cannot load from GPU 0: the ranks stage though all offer. */
START_TEST(gpus_that_cannot_reach_each_other_stage)
{
    tt_fake_ipc_reach[1] = 1u << 1;
    plan_t plan = {.host_rank = -1, .gpu_of_rank = {0, 1}, .expect_direct = 0};
    tt_run_ranks(2, direct_collectives, &plan, 240);
    tt_fake_ipc_reach[1] = 0xf;
}
END_TEST

/* Ranks on different GPUs that reach each other, and ranks sharing one. */
START_TEST(mixed_gpus_that_reach_each_other_go_direct)
{
    plan_t plan = {.host_rank = -1, .gpu_of_rank = {0, 1, 1, 2}, .expect_direct = 1};
    tt_run_ranks(4, direct_collectives, &plan, 240);
}
END_TEST

/* Rank 1 calls the all-reduce with one element more than rank 0: a direct
 * run has no message headers to notice, so the agreement must. */
static int mismatched(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "prepare failed");
    float *x = tt_fake_gpu_malloc(1001 * sizeof(float), 0);
    tt_call_t c = {
        .coll = TT_COLL_ALLREDUCE, .send = x, .recv = x, .count = 1000 + (size_t)r, .dtype = TUTTI_FP32};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate");
    c.send_on_device = c.recv_on_device = 1;
    tutti_status_t st = tt_device_coll_enqueue(comm, &c, tt_fake_gpu_stream());
    TT_FAIL_IF(st != TUTTI_ERR_MISMATCH &&
                   !(st == TUTTI_ERR_PEER_FAILED && strstr(tutti_comm_last_error(handle), "MISMATCH")),
               "rank %d: a call of another count gave %s: %s", r, tutti_strerror(st),
               tutti_comm_last_error(handle));
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(ranks_that_call_with_other_counts_are_told)
{
    tt_run_ranks(2, mismatched, NULL, 60);
}
END_TEST

/*
 * Rank 1 runs far ahead on host calls (tcp buffers its reduces to rank 0)
 * while rank 0, late, asks to go direct on the first call: the board must
 * still hold rank 1's answer for that call, so rank 1 may not announce
 * TT_IPC_BOARD calls past it before rank 0 has read it.
 */
#define AHEAD (TT_IPC_BOARD + 500)

static int run_ahead(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    (void)p;
    (void)arg;
    float x = 1, y = 0;
    if (r == 0) {
        int ready;
        tt_direct_prepare(comm, 0, &ready); /* binds; rank 1 never does, so it cannot go direct */
        usleep(300000);
    }
    for (int i = 0; i < AHEAD; i++) {
        tt_call_t c = {
            .coll = TT_COLL_REDUCE, .send = &x, .recv = &y, .count = 1, .dtype = TUTTI_FP32, .op = TUTTI_SUM};
        TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "prepare: %s", tutti_comm_last_error(handle));
        uint64_t seq;
        int direct;
        TT_FAIL_IF(tt_coll_begin(comm, &c, r == 0 && i == 0, &seq, &direct), "call %d: %s", i,
                   tutti_comm_last_error(handle));
        TT_FAIL_IF(direct, "went direct with a host rank");
        TT_FAIL_IF(tt_coll_run_at(comm, &c, seq, NULL), "call %d: %s", i, tutti_comm_last_error(handle));
        TT_FAIL_IF(r == 0 && y != 2, "call %d: reduced %g", i, (double)y);
    }
    return 0;
}

START_TEST(the_board_holds_answers_until_read)
{
    setenv("TUTTI_TRANSPORTS", "cuda_ipc,tcp", 1); /* host calls over tcp, device ones over cuda_ipc */
    setenv("TUTTI_TIMEOUT", "20", 1);
    tt_run_ranks(2, run_ahead, NULL, 60);
    unsetenv("TUTTI_TRANSPORTS");
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* A rank that dies before a call: the one waiting to agree on it is told. */
static int dies_before_the_call(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    (void)p;
    (void)arg;
    if (r == 1)
        _exit(0);
    int ready;
    tt_direct_prepare(comm, 0, &ready);
    float x = 1, y = 0;
    tt_call_t c = {
        .coll = TT_COLL_ALLREDUCE, .send = &x, .recv = &y, .count = 1, .dtype = TUTTI_FP32, .op = TUTTI_SUM};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "prepare: %s", tutti_comm_last_error(handle));
    uint64_t seq;
    int direct;
    tutti_status_t st = tt_coll_begin(comm, &c, 1, &seq, &direct);
    TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED || !strstr(tutti_comm_last_error(handle), "rank 1 died"),
               "got %s: %s", tutti_strerror(st), tutti_comm_last_error(handle));
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(a_rank_that_died_is_named_while_agreeing)
{
    tt_run_ranks(2, dies_before_the_call, NULL, 60);
}
END_TEST

/* TUTTI_CUDA_IPC=0: no layer, so every call stages. */
static int no_layer(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    (void)r;
    (void)p;
    (void)arg;
    int ready = 0;
    TT_FAIL_IF(tt_direct_prepare(comm, 0, &ready) || ready, "the layer was set up under TUTTI_CUDA_IPC=0");
    return 0;
}

START_TEST(cuda_ipc_0_turns_the_layer_off)
{
    setenv("TUTTI_CUDA_IPC", "0", 1);
    tt_run_ranks(2, no_layer, NULL, 60);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/* Ranks of one process (ncclCommInitAll's threads) pair over cuda_ipc
 * like any ranks of one host: they share windows by address, not by IPC
 * handle (CUDA cannot open one in the process that made it; see below). */
START_TEST(ranks_of_one_process_pair)
{
    tt_endpoint_t ep[3] = {
        {.host_id = 7, .pid = 100}, {.host_id = 7, .pid = 100}, {.host_id = 7, .pid = 101}};
    tt_tp_env_t env = {.rank = 0, .nranks = 3, .endpoints = ep};
    ck_assert_int_eq(tt_cuda_ipc_ops.reachable(&env, 1), 1);
    ck_assert_int_eq(tt_cuda_ipc_ops.reachable(&env, 2), 1);
    ep[2].host_id = 8; /* another host */
    ck_assert_int_eq(tt_cuda_ipc_ops.reachable(&env, 2), 0);
}
END_TEST

/* One direct all-reduce, checked: what a rank does before tearing down. */
static int one_direct_allreduce(tt_comm_t *comm, int r, int p)
{
    float *x = tt_fake_gpu_malloc(1000 * sizeof *x, tt_fake_gpu_current()),
          *y = tt_fake_gpu_malloc(1000 * sizeof *y, tt_fake_gpu_current());
    void *stream = tt_fake_gpu_stream();
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i + r);
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = y, .count = 1000, .dtype = TUTTI_FP32};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate: %s", tutti_comm_last_error(NULL));
    c.send_on_device = c.recv_on_device = 1;
    uint64_t runs = tt_direct_runs(comm);
    TT_FAIL_IF(tt_device_coll_enqueue(comm, &c, stream) || tt_fake_gpu.stream_sync(stream), "%s",
               tutti_comm_last_error(NULL));
    TT_FAIL_IF(tt_direct_runs(comm) != runs + 1, "did not run directly");
    for (int i = 0; i < 1000; i++)
        TT_FAIL_IF(y[i] != (float)(p * i + p * (p - 1) / 2), "element %d: %g", i, (double)y[i]);
    return 0;
}

/* Rank 1 is slow to close rank 0's window at teardown: rank 0 may free its
 * window only after (the fake backend exits 91 otherwise). */
static int slow_peer_teardown(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "prepare failed");
    if (one_direct_allreduce(comm, r, p))
        return 1;
    tt_fake_ipc_slow_close = r == 1 ? 300 : 0;
    return 0; /* the harness destroys */
}

START_TEST(windows_are_freed_after_every_peer_closed_them)
{
    tt_run_ranks(2, slow_peer_teardown, NULL, 60);
}
END_TEST

/* Rank 0 aborts while rank 1 still has its window open: the window must stay. */
static int abort_with_window_open(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    TT_FAIL_IF(!tt_fake_ipc_prepared(comm, 0), "prepare failed");
    if (one_direct_allreduce(comm, r, p))
        return 1;
    if (r == 0) {
        tutti_comm_abort(handle);
        return -1;
    }
    usleep(300000); /* rank 0 is gone by now; its window must not be */
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(an_aborting_rank_leaves_its_window_to_the_peers)
{
    tt_run_ranks(2, abort_with_window_open, NULL, 60);
}
END_TEST

/* Two ranks that are threads of one process, on GPUs 0 and 1: no IPC
 * handle opened (that fails in the process that made it), both windows
 * shared by address, and direct runs give the host path's results. */
typedef struct {
    tutti_unique_id_t id;
    int rank, failed;
} thread_rank_t;

static void *thread_rank(void *arg)
{
    thread_rank_t *t = arg;
    tutti_comm_t handle;
    if (tutti_comm_init(&handle, 2, t->rank, &t->id, NULL)) {
        fprintf(stderr, "thread rank %d: init: %s\n", t->rank, tutti_comm_last_error(NULL));
        t->failed = 1;
        return NULL;
    }
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    tt_fake_gpu_app_thread();
    tt_fake_gpu_set_current(t->rank);
    t->failed = !tt_fake_ipc_prepared(comm, t->rank) || one_direct_allreduce(comm, t->rank, 2);
    if (tutti_comm_destroy(handle))
        t->failed = 1;
    return NULL;
}

START_TEST(ranks_in_one_process_share_windows_without_ipc)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        thread_rank_t t[2] = {{.rank = 0}, {.rank = 1}};
        if (tutti_get_unique_id(&t[0].id))
            _exit(2);
        t[1].id = t[0].id;
        pthread_t th[2];
        for (int r = 0; r < 2; r++)
            pthread_create(&th[r], NULL, thread_rank, &t[r]);
        for (int r = 0; r < 2; r++)
            pthread_join(th[r], NULL);
        if (t[0].failed || t[1].failed)
            _exit(3);
        if (tt_fake_ipc_used.opens || atomic_load(&tt_fake_ipc_used.shares) != 2) {
            fprintf(stderr, "%d IPC opens, %d shared windows\n", tt_fake_ipc_used.opens,
                    atomic_load(&tt_fake_ipc_used.shares));
            _exit(4);
        }
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the two-thread process ended with %d",
                  status);
}
END_TEST

/*
 * Through the device queue: once every rank made a device call and opened
 * its peers' windows, queued calls run directly, with every stream on one
 * hardware queue too (CUDA_DEVICE_MAX_CONNECTIONS=1, as Megatron-LM sets
 * it): a direct run's work is all on the caller's stream, so nothing it
 * needs can sit behind a held stream, and no other thread makes a runtime
 * call.
 */
static int queued_calls(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    tt_fake_mode_t mode = {.connections = arg != NULL};
    tt_fake_gpu_mode(&mode);
    enum { N = 3001, CALLS = 8 };
    float *x = tt_fake_gpu_malloc(N * sizeof(float), 0), *y = tt_fake_gpu_malloc(N * sizeof(float), 0);
    void *stream = tt_fake_gpu_stream();
    for (int k = 0; k <= CALLS; k++) {
        if (k == 1) /* every rank has made its first device call, so all windows are published */
            TT_FAIL_IF(tutti_barrier(handle, NULL), "barrier: %s", tutti_comm_last_error(handle));
        uint64_t runs = tt_direct_runs(comm);
        for (int i = 0; i < N; i++)
            x[i] = (float)(k + i + r);
        tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = y, .count = N, .dtype = TUTTI_FP32};
        TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate");
        c.send_on_device = c.recv_on_device = 1;
        TT_FAIL_IF(tt_device_coll_enqueue(comm, &c, stream), "call %d: %s", k, tutti_comm_last_error(handle));
        TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
        for (int i = 0; i < N; i++)
            TT_FAIL_IF(y[i] != (float)(p * (k + i) + p * (p - 1) / 2), "call %d element %d: %g", k, i,
                       (double)y[i]);
        if (k > 1) /* the peers may open this rank's window only at their second call */
            TT_FAIL_IF(tt_direct_runs(comm) != runs + 1, "call %d did not run directly", k);
    }
    return tt_fake_gpu_own_calls_only(r);
}

START_TEST(queued_calls_go_direct_with_one_hardware_queue_too)
{
    static int one = 1;
    if (_i)
        setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
    tt_run_ranks(2 + _i, queued_calls, _i ? &one : NULL, 120);
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}
END_TEST

/* A machine without a GPU: nothing is set up, and the log says so. */
static tutti_status_t no_gpu(char *why, size_t len)
{
    snprintf(why, len, "this test's machine has none");
    return TUTTI_ERR_UNSUPPORTED;
}

START_TEST(no_gpu_no_layer_and_the_log_says_why)
{
    tt_cuda_ipc_backend_t gpuless = tt_fake_ipc;
    gpuless.usable = no_gpu;
    tt_cuda_ipc_set_backend(&gpuless);
    setenv("TUTTI_LOG", "debug", 1);
    setenv("TUTTI_LOG_SUBSYS", "init,net", 1);
    char path[] = "/tmp/tutti-ipc-log-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    dup2(fd, 2);
    tt_run_ranks(2, no_layer, NULL, 60);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    static char log[1 << 16];
    ssize_t n = pread(fd, log, sizeof log - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    unsetenv("TUTTI_LOG");
    unsetenv("TUTTI_LOG_SUBSYS");
    tt_cuda_ipc_set_backend(&tt_fake_ipc);
    ck_assert_msg(strstr(log, "cuda_ipc not offered: this test's machine has none"), "%s", log);
    ck_assert_msg(!strstr(log, "cuda_ipc connects"), "%s", log);
}
END_TEST

static Suite *ipc_suite(void)
{
    Suite *s = suite_create("ipc");
    TCase *tc = tcase_create("ipc");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, direct_runs_match_the_host_path, 0, 3);
    tcase_add_loop_test(tc, a_host_rank_keeps_everyone_staged, 0, 3);
    tcase_add_test(tc, gpus_that_cannot_reach_each_other_stage);
    tcase_add_test(tc, mixed_gpus_that_reach_each_other_go_direct);
    tcase_add_test(tc, ranks_that_call_with_other_counts_are_told);
    tcase_add_test(tc, the_board_holds_answers_until_read);
    tcase_add_test(tc, a_rank_that_died_is_named_while_agreeing);
    tcase_add_test(tc, cuda_ipc_0_turns_the_layer_off);
    tcase_add_test(tc, ranks_of_one_process_pair);
    tcase_add_test(tc, windows_are_freed_after_every_peer_closed_them);
    tcase_add_test(tc, an_aborting_rank_leaves_its_window_to_the_peers);
    tcase_add_test(tc, ranks_in_one_process_share_windows_without_ipc);
    tcase_add_loop_test(tc, queued_calls_go_direct_with_one_hardware_queue_too, 0, 2);
    tcase_add_test(tc, no_gpu_no_layer_and_the_log_says_why);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    tt_cuda_ipc_set_backend(&tt_fake_ipc);
    tt_device_set_rt(&tt_fake_gpu);
    int rc = tt_run_suite(ipc_suite());
    tt_fake_ipc_sweep();
    return rc;
}
