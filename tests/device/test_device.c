/* SPDX-License-Identifier: MIT */
/*
 * GPU suite (built with CUDA; skips with one line where no GPU is usable):
 * the kernels' cases (device_kernels.c), then every collective on device
 * buffers, with 1, 2 and 4 ranks sharing the GPU, over shm and tcp, and
 * with host and device ranks mixed; stream semantics (calls return once queued, run in the order
 * made, and later work on the stream sees their results); the compressed
 * all-reduce on device buffers against host buffers.
 */
#include <check.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "comm/handle.h"
#include "cuda/kernels.h"
#include "device/direct_run.h"
#include "device/memkind.h"
#include "tests/device/gpu_probe.h"
#include "tests/lib/harness.h"
#include "reduce/reduce.h"
#include "tests/device/device_kernels.h"

/*
 * A rank's buffers: host images (in, out) that the checks read and write,
 * and, for a rank that uses device memory, device twins the collectives
 * get. dev() maps a pointer into an image to its twin.
 */
typedef struct {
    int on_device;
    size_t bytes;
    char *in, *out, *din, *dout;
    cudaStream_t stream;
} bufs_t;

static void *dev(const bufs_t *b, const void *host)
{
    const char *h = host;
    if (!b->on_device || !h)
        return (void *)h;
    if (h >= b->in && h < b->in + b->bytes)
        return b->din + (h - b->in);
    return b->dout + (h - b->out);
}

/* Images to the device before a call; results back after it (stream order). */
static int push(const bufs_t *b)
{
    return b->on_device && (cudaMemcpyAsync(b->din, b->in, b->bytes, cudaMemcpyHostToDevice, b->stream) ||
                            cudaMemcpyAsync(b->dout, b->out, b->bytes, cudaMemcpyHostToDevice, b->stream));
}

static int pull(const bufs_t *b)
{
    if (!b->on_device)
        return 0;
    return cudaMemcpyAsync(b->out, b->dout, b->bytes, cudaMemcpyDeviceToHost, b->stream) ||
           cudaStreamSynchronize(b->stream);
}

static const tutti_dtype_t device_types[] = {TUTTI_FP32,  TUTTI_FP16,     TUTTI_BF16,
                                             TUTTI_INT32, TUTTI_FP8_E4M3, TUTTI_FP8_E5M2};

/*
 * Every collective on device buffers (every rank, or with arg "mixed" only
 * the even ranks; odd ones use host memory), on a stream, in place and not,
 * fp32/fp16/bf16/int32/fp8, sum/max/avg, checked exactly after the stream is
 * synchronised. Where every rank is on the GPU and TUTTI_CUDA_IPC is not 0,
 * the collectives must have run directly over cuda_ipc (after a first call
 * and a barrier, by which every rank has published its window); else none
 * may have.
 */
static int device_collectives(tutti_comm_t comm, int r, int p, void *arg)
{
    static const size_t counts[] = {1, 1000, 65537};
    int mixed = arg != NULL;
    const char *ipc = getenv("TUTTI_CUDA_IPC");
    int want_direct = p > 1 && !mixed && !(ipc && strcmp(ipc, "0") == 0);
    bufs_t b = {.on_device = !(mixed && r % 2), .bytes = (65537 * (size_t)p + 8) * 8};
    b.in = malloc(b.bytes);
    b.out = malloc(b.bytes);
    char *want = malloc(b.bytes), *term = malloc(b.bytes);
    TT_FAIL_IF(!b.in || !b.out || !want || !term, "out of memory");
    if (b.on_device) {
        TT_FAIL_IF(cudaMalloc((void **)&b.din, b.bytes) || cudaMalloc((void **)&b.dout, b.bytes) ||
                       cudaStreamCreate(&b.stream),
                   "rank %d: CUDA set-up failed", r);
        TT_FAIL_IF(tt_mem_kind(b.din) != TT_MEM_DEVICE || tt_mem_kind(b.in) != TT_MEM_HOST,
                   "memory kinds not recognised");
    }
    tutti_stream_t s = b.on_device ? (tutti_stream_t)b.stream : NULL;
    /* A first device call publishes this rank's window; after the barrier
     * every rank's is published, so every later call can go direct. */
    TT_FAIL_IF(tutti_allreduce(dev(&b, b.in), dev(&b, b.out), 1, TUTTI_FP32, TUTTI_SUM, comm, s) ||
                   (b.on_device && cudaStreamSynchronize(b.stream)) || tutti_barrier(comm, NULL),
               "first call: %s", tutti_comm_last_error(comm));
    uint64_t direct_before = tt_direct_runs(tt_comm_lookup(comm, NULL));
    for (size_t ti = 0; ti < sizeof device_types / sizeof device_types[0]; ti++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
            for (int ip = 0; ip < 2; ip++) {
                tutti_dtype_t t = device_types[ti];
                static const tutti_op_t ops[] = {TUTTI_SUM, TUTTI_MAX, TUTTI_AVG};
                tutti_op_t op = ops[(ci + ti) % 3];
                size_t n = counts[ci], e = tutti_dtype_size(t);
                int root = (int)((ci + ti) % (size_t)p);
                tutti_status_t st;

                for (size_t i = 0; i < n; i++)
                    tt_test_value(t, op, ip ? b.out : b.in, i, r, i);
                TT_FAIL_IF(push(&b), "copy to device");
                st = tutti_allreduce(dev(&b, ip ? b.out : b.in), dev(&b, b.out), n, t, op, comm, s);
                TT_FAIL_IF(st || pull(&b), "allreduce n=%zu: %s", n, tutti_comm_last_error(comm));
                tt_expect_reduced(want, term, n, 0, p, t, op);
                TT_FAIL_IF(memcmp(want, b.out, n * e), "allreduce n=%zu %s in_place=%d wrong", n,
                           tutti_dtype_name(t), ip);

                for (size_t i = 0; i < n * (size_t)p; i++)
                    tt_test_value(t, op, ip ? b.out : b.in, i, r, i);
                char *rs_out = ip ? b.out + (size_t)r * n * e : b.out;
                TT_FAIL_IF(push(&b), "copy to device");
                st = tutti_reduce_scatter(dev(&b, ip ? b.out : b.in), dev(&b, rs_out), n, t, op, comm, s);
                TT_FAIL_IF(st || pull(&b), "reduce_scatter n=%zu: %s", n, tutti_comm_last_error(comm));
                tt_expect_reduced(want, term, n, (size_t)r * n, p, t, op);
                TT_FAIL_IF(memcmp(want, rs_out, n * e), "reduce_scatter n=%zu %s in_place=%d wrong", n,
                           tutti_dtype_name(t), ip);

                char *ag_in = ip ? b.out + (size_t)r * n * e : b.in;
                for (size_t i = 0; i < n; i++)
                    tt_test_value(t, op, ag_in, i, r, (size_t)r * n + i);
                TT_FAIL_IF(push(&b), "copy to device");
                st = tutti_allgather(dev(&b, ag_in), dev(&b, b.out), n, t, comm, s);
                TT_FAIL_IF(st || pull(&b), "allgather n=%zu: %s", n, tutti_comm_last_error(comm));
                for (size_t i = 0; i < n * (size_t)p; i++)
                    tt_test_value(t, op, want, i, (int)(i / n), i);
                TT_FAIL_IF(memcmp(want, b.out, n * (size_t)p * e), "allgather n=%zu in_place=%d wrong", n,
                           ip);

                for (size_t i = 0; i < n; i++)
                    tt_test_value(t, op, ip ? b.out : b.in, i, r, i);
                TT_FAIL_IF(push(&b), "copy to device");
                st = tutti_broadcast(dev(&b, ip ? b.out : b.in), dev(&b, b.out), n, t, root, comm, s);
                TT_FAIL_IF(st || pull(&b), "broadcast n=%zu: %s", n, tutti_comm_last_error(comm));
                for (size_t i = 0; i < n; i++)
                    tt_test_value(t, op, want, i, root, i);
                TT_FAIL_IF(memcmp(want, b.out, n * e), "broadcast n=%zu root=%d wrong", n, root);

                char *red_in = ip && r == root ? b.out : b.in;
                for (size_t i = 0; i < n; i++)
                    tt_test_value(t, op, red_in, i, r, i);
                TT_FAIL_IF(push(&b), "copy to device");
                st =
                    tutti_reduce(dev(&b, red_in), r == root ? dev(&b, b.out) : NULL, n, t, op, root, comm, s);
                TT_FAIL_IF(st || pull(&b), "reduce n=%zu: %s", n, tutti_comm_last_error(comm));
                tt_expect_reduced(want, term, n, 0, p, t, op);
                TT_FAIL_IF(r == root && memcmp(want, b.out, n * e), "reduce n=%zu root=%d wrong", n, root);

                for (size_t i = 0; i < n * (size_t)p; i++)
                    tt_test_value(t, op, ip ? b.out : b.in, i, r, i);
                TT_FAIL_IF(push(&b), "copy to device");
                st = tutti_alltoall(dev(&b, ip ? b.out : b.in), dev(&b, b.out), n, t, comm, s);
                TT_FAIL_IF(st || pull(&b), "alltoall n=%zu: %s", n, tutti_comm_last_error(comm));
                for (size_t i = 0; i < n * (size_t)p; i++)
                    tt_test_value(t, op, want, i, (int)(i / n), (size_t)r * n + i % n);
                TT_FAIL_IF(memcmp(want, b.out, n * (size_t)p * e), "alltoall n=%zu in_place=%d wrong", n, ip);

                if (p > 1) { /* around the ring; both calls queue, so no ordering is needed */
                    int right = (r + 1) % p, left = (r + p - 1) % p;
                    for (size_t i = 0; i < n; i++)
                        tt_test_value(t, op, b.in, i, r, i);
                    TT_FAIL_IF(push(&b), "copy to device");
                    if (r % 2 == 0) {
                        st = tutti_send(dev(&b, b.in), n, t, right, comm, s);
                        st = st ? st : tutti_recv(dev(&b, b.out), n, t, left, comm, s);
                    } else {
                        st = tutti_recv(dev(&b, b.out), n, t, left, comm, s);
                        st = st ? st : tutti_send(dev(&b, b.in), n, t, right, comm, s);
                    }
                    TT_FAIL_IF(st || pull(&b), "send/recv n=%zu: %s", n, tutti_comm_last_error(comm));
                    for (size_t i = 0; i < n; i++)
                        tt_test_value(t, op, want, i, left, i);
                    TT_FAIL_IF(memcmp(want, b.out, n * e), "send/recv n=%zu wrong", n);
                }
            }
    /* 6 collectives, every dtype, 3 counts, in place and not. */
    const uint64_t calls = 6 * (sizeof device_types / sizeof device_types[0]) * 3 * 2;
    uint64_t direct = tt_direct_runs(tt_comm_lookup(comm, NULL)) - direct_before;
    TT_FAIL_IF(want_direct ? direct != calls : direct != 0, "rank %d: %llu calls ran directly", r,
               (unsigned long long)direct);
    if (b.on_device) {
        cudaFree(b.din);
        cudaFree(b.dout);
        cudaStreamDestroy(b.stream);
    }
    free(b.in);
    free(b.out);
    free(want);
    free(term);
    return 0;
}

static const int shared_gpu_ranks[] = {1, 2, 4};

START_TEST(every_collective_on_device_buffers_with_ranks_sharing_the_gpu)
{
    tt_run_ranks(shared_gpu_ranks[_i], device_collectives, NULL, 240);
}
END_TEST

/* The same, staged through pinned host memory (pcie) over shm. */
START_TEST(every_collective_staged_with_ranks_sharing_the_gpu)
{
    setenv("TUTTI_CUDA_IPC", "0", 1);
    tt_run_ranks(shared_gpu_ranks[_i], device_collectives, NULL, 240);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

START_TEST(every_collective_staged_over_tcp_on_device_buffers)
{
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    setenv("TUTTI_CUDA_IPC", "0", 1);
    tt_run_ranks(2, device_collectives, NULL, 240);
    unsetenv("TUTTI_TRANSPORTS");
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

START_TEST(host_and_device_ranks_mix)
{
    static int mixed = 1;
    tt_run_ranks(shared_gpu_ranks[_i], device_collectives, &mixed, 240);
}
END_TEST

/*
 * The compressed all-reduce on device buffers (the GPU path: CUDA kernels,
 * compressed bytes through the host) against the same calls on host
 * buffers (the CPU path), bit for bit: results, the error-feedback state,
 * the bytes sent and the fall-back, over two calls each (a sum, then an
 * average, with the error kept from the first). Only the
 * schemes without random numbers: theirs depend on the call's sequence
 * number, which differs between the two runs. With arg "mixed", odd ranks
 * keep host buffers in the device run.
 */
static int compressed_on_device(tutti_comm_t comm, int r, int p, void *arg)
{
    static const tutti_compress_t schemes[] = {
        {.kind = TUTTI_COMPRESS_NONE},
        {.kind = TUTTI_COMPRESS_TOPK, .density = 0.01},
        {.kind = TUTTI_COMPRESS_TOPK, .density = 0.01, .no_error_feedback = 1},
        {.kind = TUTTI_COMPRESS_TOPK, .density = 0.6}, /* costlier than dense: runs dense */
        {.kind = TUTTI_COMPRESS_INT8},
        {.kind = TUTTI_COMPRESS_INT4, .block = 256},
        {.kind = TUTTI_COMPRESS_SIGN, .block = 512},
        {.kind = TUTTI_COMPRESS_SIGN, .no_error_feedback = 1}};
    static const tutti_dtype_t types[] = {TUTTI_FP32, TUTTI_BF16};
    const size_t n = 10007;
    int on_device = !(arg && r % 2);
    size_t bytes = n * sizeof(float);
    char *g = malloc(bytes), *host_out = malloc(bytes), *dev_out = malloc(bytes), *dg, *dout;
    cudaStream_t stream;
    TT_FAIL_IF(!g || !host_out || !dev_out || cudaMalloc((void **)&dg, bytes) ||
                   cudaMalloc((void **)&dout, bytes) || cudaStreamCreate(&stream),
               "rank %d: set-up failed", r);
    for (size_t si = 0; si < sizeof schemes / sizeof schemes[0]; si++)
        for (size_t ti = 0; ti < 2; ti++)
            for (int ip = 0; ip < 2; ip++) {
                tutti_dtype_t t = types[ti];
                size_t e = tutti_dtype_size(t);
                tutti_ef_state_t ef_host, ef_dev;
                tutti_compress_stats_t st_host, st_dev;
                TT_FAIL_IF(tutti_ef_create(&ef_host, n, p) || tutti_ef_create(&ef_dev, n, p), "ef_create");
                for (int call = 0; call < 2; call++) {
                    for (size_t i = 0; i < n; i++)
                        tt_test_value(t, TUTTI_SUM, g, i, r, i * 7 + (size_t)call);
                    memcpy(host_out, g, n * e);
                    tutti_op_t op = call ? TUTTI_AVG : TUTTI_SUM;
                    TT_FAIL_IF(tutti_allreduce_compressed(ip ? host_out : g, host_out, n, t, op, &schemes[si],
                                                          ef_host, comm, NULL),
                               "host call: %s", tutti_comm_last_error(comm));
                    TT_FAIL_IF(tutti_compress_last_stats(comm, &st_host), "stats");

                    char *in = on_device ? dg : g, *out = on_device ? dout : dev_out;
                    if (on_device)
                        TT_FAIL_IF(cudaMemcpy(ip ? dout : dg, g, n * e, cudaMemcpyHostToDevice), "copy in");
                    else
                        memcpy(dev_out, g, n * e);
                    TT_FAIL_IF(tutti_allreduce_compressed(ip ? out : in, out, n, t, op, &schemes[si], ef_dev,
                                                          comm, on_device ? stream : NULL),
                               "device call: %s", tutti_comm_last_error(comm));
                    TT_FAIL_IF(tutti_compress_last_stats(comm, &st_dev), "stats");
                    if (on_device)
                        TT_FAIL_IF(cudaMemcpyAsync(dev_out, dout, n * e, cudaMemcpyDeviceToHost, stream) ||
                                       cudaStreamSynchronize(stream),
                                   "copy out");
                    TT_FAIL_IF(memcmp(host_out, dev_out, n * e),
                               "scheme %zu %s in_place=%d call %d: results differ", si, tutti_dtype_name(t),
                               ip, call);
                    TT_FAIL_IF(st_host.bytes_sent != st_dev.bytes_sent || st_host.k_sent != st_dev.k_sent ||
                                   st_host.fell_back != st_dev.fell_back,
                               "scheme %zu: stats differ", si);
                }
                const float *wh, *wd, *sh, *sd;
                size_t nwh, nwd, nsh, nsd;
                TT_FAIL_IF(tutti_ef_errors(ef_host, &wh, &nwh, &sh, &nsh) ||
                               tutti_ef_errors(ef_dev, &wd, &nwd, &sd, &nsd),
                           "ef_errors");
                TT_FAIL_IF(nwh != nwd || memcmp(wh, wd, nwh * sizeof *wh), "scheme %zu: worker errors differ",
                           si);
                TT_FAIL_IF(nsh != nsd || (nsh && memcmp(sh, sd, nsh * sizeof *sh)),
                           "scheme %zu: server errors differ", si);
                tutti_ef_destroy(ef_host);
                tutti_ef_destroy(ef_dev);
            }
    cudaFree(dg);
    cudaFree(dout);
    cudaStreamDestroy(stream);
    free(g);
    free(host_out);
    free(dev_out);
    return 0;
}

START_TEST(compressed_allreduce_on_device_buffers_matches_host_buffers)
{
    static int mixed = 1;
    tt_run_ranks(_i == 0 ? 2 : 4, compressed_on_device, _i == 2 ? &mixed : NULL, 240);
}
END_TEST

/*
 * Stream semantics. A gate kernel (the same one tutti uses, on a word we
 * own) holds stream a; the collectives queued behind it must return at once
 * (a blocking call would never see the gate open: the test would time out),
 * must not have run yet, and a second collective on stream b must wait for
 * the first (calls run in the order they were made). Then the gate opens,
 * and a kernel enqueued after the collective on the same stream (result +
 * result) must read the finished result.
 */
static int stream_order(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    const size_t n = 1 << 20;
    float *host = malloc(n * sizeof *host), *dx, *dy, *dz, *dw;
    unsigned *gate, *gate_dev;
    cudaStream_t a, b;
    TT_FAIL_IF(!host || cudaMalloc((void **)&dx, n * 4) || cudaMalloc((void **)&dy, n * 4) ||
                   cudaMalloc((void **)&dz, n * 4) || cudaMalloc((void **)&dw, n * 4) ||
                   cudaHostAlloc((void **)&gate, sizeof *gate, cudaHostAllocMapped) ||
                   cudaHostGetDevicePointer((void **)&gate_dev, gate, 0) || cudaStreamCreate(&a) ||
                   cudaStreamCreate(&b),
               "rank %d: CUDA set-up failed", r);
    for (size_t i = 0; i < n; i++)
        host[i] = (float)(r + 1) + (float)(i % 7);
    TT_FAIL_IF(cudaMemcpy(dx, host, n * 4, cudaMemcpyHostToDevice) || cudaMemset(dy, 0xff, n * 4) ||
                   cudaMemset(dw, 0xff, n * 4),
               "copy");
    *gate = 0;
    /* The test's own gate, like tutti's, may not meet a lazily loaded kernel. */
    TT_FAIL_IF(tt_cuda_preload(), "loading the kernels");
    TT_FAIL_IF(tt_cuda_wait_ticket(gate_dev, 1, a), "gate launch");
    TT_FAIL_IF(tutti_allreduce(dx, dy, n, TUTTI_FP32, TUTTI_SUM, comm, a), "allreduce: %s",
               tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_cuda_reduce(dz, dy, dy, n, TUTTI_FP32, TUTTI_SUM, a), "later kernel");
    TT_FAIL_IF(tutti_allreduce(dx, dw, n, TUTTI_FP32, TUTTI_MAX, comm, b), "second allreduce: %s",
               tutti_comm_last_error(comm));
    usleep(200000);
    TT_FAIL_IF(cudaStreamQuery(a) != cudaErrorNotReady, "stream a finished behind a closed gate");
    TT_FAIL_IF(cudaStreamQuery(b) != cudaErrorNotReady,
               "the call on stream b ran before the earlier one on a");
    cudaGetLastError();
    __atomic_store_n(gate, 1u, __ATOMIC_RELEASE);
    TT_FAIL_IF(cudaStreamSynchronize(a) || cudaStreamSynchronize(b), "synchronise");
    float *z = malloc(n * 4), *w = malloc(n * 4);
    TT_FAIL_IF(!z || !w || cudaMemcpy(z, dz, n * 4, cudaMemcpyDeviceToHost) ||
                   cudaMemcpy(w, dw, n * 4, cudaMemcpyDeviceToHost),
               "copy back");
    for (size_t i = 0; i < n; i++) {
        float sum = (float)(p * (p + 1) / 2) + (float)p * (float)(i % 7);
        TT_FAIL_IF(z[i] != 2 * sum, "later kernel read %g at %zu, not %g", z[i], i, 2 * sum);
        TT_FAIL_IF(w[i] != (float)p + (float)(i % 7), "max wrong at %zu", i);
    }
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dz);
    cudaFree(dw);
    cudaFreeHost(gate);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    free(host);
    free(z);
    free(w);
    return 0;
}

START_TEST(collectives_return_at_once_and_complete_in_stream_order)
{
    tt_run_ranks(2, stream_order, NULL, 120);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t collectives[] = {
        {"direct", every_collective_on_device_buffers_with_ranks_sharing_the_gpu, 0, 3},
        {"staged", every_collective_staged_with_ranks_sharing_the_gpu, 1, 3},
        {"staged_tcp", every_collective_staged_over_tcp_on_device_buffers, 0, 0},
        {"mixed", host_and_device_ranks_mix, 1, 3},
        {"stream_order", collectives_return_at_once_and_complete_in_stream_order, 0, 0},
        {"compressed", compressed_allreduce_on_device_buffers_matches_host_buffers, 0, 3},
    };
    tt_case_t cases[TT_DEVICE_KERNEL_CASES + sizeof collectives / sizeof *collectives];
    size_t n = tt_device_kernel_cases(cases);
    memcpy(cases + n, collectives, sizeof collectives);
    n += sizeof collectives / sizeof *collectives;
    char why[200];
    if (!(argc == 2 && strcmp(argv[1], "--list") == 0) && !tt_test_gpu_usable(why, sizeof why)) {
        printf("1..0 # SKIP %s\n", why);
        return 0;
    }
    return tt_run_cases("device", cases, n, 300, argc, argv);
}
