/* SPDX-License-Identifier: MIT */
/*
 * libnccl.so.2's device paths on a real GPU, as an NCCL program calls them
 * (built with nccl.h, linked with tutti's libnccl.so.2 and the CUDA
 * runtime by tests/device/gpu-kit.sh; gpu-check.sh runs it): two forked ranks
 * sharing GPU 0, on device buffers and a stream, run pre-multiplied sums
 * (the scalar on the host and on the device), grouped sends and receives
 * around the ring, gather, scatter and an all-to-all of grouped calls, and
 * check every element. Exit 0, 1 on a wrong result or failed call, 77
 * without a GPU.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 1 << 16, RANKS = 2 };

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "rank %d: ", rank);                                                              \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            return 1;                                                                                        \
        }                                                                                                    \
    } while (0)
#define NCCL(call) CHECK((call) == ncclSuccess, "%s: %s", #call, ncclGetLastError(NULL))

/* Copies n floats of dev back and checks each against want(i). */
static int expect(int rank, const char *what, const float *dev, size_t n, float (*want)(int, size_t), int arg)
{
    float *h = malloc(n * sizeof *h);
    CHECK(h && cudaMemcpy(h, dev, n * sizeof *h, cudaMemcpyDeviceToHost) == cudaSuccess, "%s: copy back",
          what);
    for (size_t i = 0; i < n; i++)
        CHECK(h[i] == want(arg, i), "%s: element %zu is %g, not %g", what, i, (double)h[i],
              (double)want(arg, i));
    free(h);
    return 0;
}

static float input(int r, size_t i)
{
    return (float)(r + (int)(i % 5));
}

static float sum_half(int unused, size_t i)
{
    (void)unused;
    return 0.5f * (float)(RANKS * (RANKS - 1) / 2 + RANKS * (int)(i % 5));
}

static float sum_three(int unused, size_t i)
{
    return 6.0f * sum_half(unused, i);
}

static float scattered(int r, size_t i)
{
    return (float)(10 * r + (int)(i % 3));
}

static int rank_main(int rank, ncclUniqueId id)
{
    ncclComm_t comm;
    cudaStream_t s;
    float *x, *y, *k, *all, *h = malloc((size_t)RANKS * N * sizeof *h), three = 3.0f, half = 0.5f;
    CHECK(h && cudaSetDevice(0) == cudaSuccess && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == 0 &&
              cudaMalloc((void **)&x, N * sizeof *x) == 0 && cudaMalloc((void **)&y, N * sizeof *y) == 0 &&
              cudaMalloc((void **)&k, sizeof *k) == 0 &&
              cudaMalloc((void **)&all, (size_t)RANKS * N * sizeof *all) == 0,
          "CUDA set-up");
    for (size_t i = 0; i < (size_t)RANKS * N; i++)
        h[i] = i < N ? input(rank, i) : 0;
    CHECK(cudaMemcpy(x, h, N * sizeof *h, cudaMemcpyHostToDevice) == 0 &&
              cudaMemcpy(k, &three, sizeof three, cudaMemcpyHostToDevice) == 0,
          "inputs");
    NCCL(ncclCommInitRank(&comm, RANKS, id, rank));
    ncclRedOp_t op_half, op_dev;
    NCCL(ncclRedOpCreatePreMulSum(&op_half, &half, ncclFloat32, ncclScalarHostImmediate, comm));
    NCCL(ncclRedOpCreatePreMulSum(&op_dev, k, ncclFloat32, ncclScalarDevice, comm));

    NCCL(ncclAllReduce(x, y, N, ncclFloat32, op_half, comm, s));
    CHECK(cudaStreamSynchronize(s) == 0, "sync");
    if (expect(rank, "pre-multiplied sum (host scalar)", y, N, sum_half, 0))
        return 1;
    NCCL(ncclAllReduce(x, y, N, ncclFloat32, op_dev, comm, s));
    CHECK(cudaStreamSynchronize(s) == 0, "sync");
    if (expect(rank, "pre-multiplied sum (device scalar)", y, N, sum_three, 0))
        return 1;

    int right = (rank + 1) % RANKS, left = (rank + RANKS - 1) % RANKS;
    NCCL(ncclGroupStart());
    NCCL(ncclSend(x, N, ncclFloat32, right, comm, s));
    NCCL(ncclRecv(y, N, ncclFloat32, left, comm, s));
    NCCL(ncclGroupEnd());
    CHECK(cudaStreamSynchronize(s) == 0, "sync");
    if (expect(rank, "grouped send and receive", y, N, input, left))
        return 1;

    NCCL(ncclGather(x, all, N, ncclFloat32, 1, comm, s));
    CHECK(cudaStreamSynchronize(s) == 0, "sync");
    for (int q = 0; rank == 1 && q < RANKS; q++)
        if (expect(rank, "gather", all + (size_t)q * N, N, input, q))
            return 1;

    for (size_t i = 0; i < (size_t)RANKS * N; i++)
        h[i] = scattered((int)(i / N), i % N);
    CHECK(cudaMemcpy(all, h, (size_t)RANKS * N * sizeof *h, cudaMemcpyHostToDevice) == 0, "scatter input");
    NCCL(ncclScatter(all, y, N, ncclFloat32, 0, comm, s));
    CHECK(cudaStreamSynchronize(s) == 0, "sync");
    if (expect(rank, "scatter", y, N, scattered, rank))
        return 1;

    NCCL(ncclGroupStart());
    for (int q = 0; q < RANKS; q++) {
        NCCL(ncclSend(x, N, ncclFloat32, q, comm, s));
        NCCL(ncclRecv(all + (size_t)q * N, N, ncclFloat32, q, comm, s));
    }
    NCCL(ncclGroupEnd());
    CHECK(cudaStreamSynchronize(s) == 0, "sync");
    for (int q = 0; q < RANKS; q++)
        if (expect(rank, "all-to-all of grouped calls", all + (size_t)q * N, N, input, q))
            return 1;

    NCCL(ncclRedOpDestroy(op_half, comm));
    NCCL(ncclRedOpDestroy(op_dev, comm));
    NCCL(ncclCommDestroy(comm));
    return 0;
}

/* The parent makes no CUDA call: a process forked after one cannot use CUDA. */
int main(void)
{
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess)
        return 1;
    pid_t pids[RANKS];
    for (int r = 0; r < RANKS; r++)
        if ((pids[r] = fork()) == 0) {
            int n = 0;
            _exit(cudaGetDeviceCount(&n) != cudaSuccess || n == 0 ? 77 : rank_main(r, id));
        }
    int failed = 0, skipped = 0;
    for (int r = 0; r < RANKS; r++) {
        int status,
            code = waitpid(pids[r], &status, 0) == pids[r] && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        skipped |= code == 77;
        failed |= code != 0 && code != 77;
    }
    if (skipped && !failed) {
        printf("nccl-gpu: no usable GPU: skipped\n");
        return 77;
    }
    printf("nccl-gpu: pre-multiplied sums, grouped sends and receives, gather, scatter, all-to-all on device "
           "buffers: %s\n",
           failed || skipped ? "FAILED" : "passed");
    return failed || skipped;
}
