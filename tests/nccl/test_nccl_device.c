/* SPDX-License-Identifier: MIT */
/*
 * libnccl.so.2's device paths on the stream model of fake_gpu.h: the NCCL
 * layer's sources, linked here with the core and the model in place of
 * CUDA, run NCCL calls on "device" buffers and a "stream" of the model.
 * Pre-multiplied sums (the scalar on the host, and in device memory),
 * grouped sends and receives around a ring, gather and scatter, and an
 * all-to-all of grouped calls must give the right values, go through the
 * device queue (their work shows on the caller's stream) and return before
 * the stream has run them.
 */
#include <check.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "device/rt.h"
#include "tests/fakes/fake_gpu.h"
#include "tests/nccl/nccl_ranks.h"

enum { N = 1000 };

/* The stream holds the application's work until every call is queued: a
 * call that waits for the stream (or for the GPU) would hang the rank (the
 * model ends it). */
static int queued_then_released(void *s)
{
    tt_fake_gpu_release();
    if (tt_fake_gpu.stream_sync(s))
        return 1;
    char log[512];
    tt_fake_gpu_log(s, log, sizeof log);
    return strchr(log, 'G') ? 0 : 2; /* a gate: the calls went through the device queue */
}

static int device_paths(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    tt_device_set_rt(&tt_fake_gpu);
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    cudaStream_t s = tt_fake_gpu_stream();
    float *x = tt_fake_gpu_malloc(N * sizeof *x, 0), *y = tt_fake_gpu_malloc(N * sizeof *y, 0),
          *k = tt_fake_gpu_malloc(sizeof *k, 0),
          *all = tt_fake_gpu_malloc((size_t)nranks * N * sizeof *all, 0);
    int *a2a_in = tt_fake_gpu_malloc((size_t)nranks * sizeof(int), 0),
        *a2a_out = tt_fake_gpu_malloc((size_t)nranks * sizeof(int), 0);
    float half = 0.5f;
    *k = 3.0f;
    for (int i = 0; i < N; i++)
        x[i] = (float)(rank + i % 5);
    for (int q = 0; q < nranks; q++)
        a2a_in[q] = rank * 100 + q;
    ncclRedOp_t op_half, op_dev;
    /* The first device call sets the queue up (a pinned allocation, which
     * waits for the GPU): not behind a hold. */
    NCCL_OK(ncclAllReduce(x, y, N, ncclFloat32, ncclSum, comm, s));
    NCCL_FAIL_IF(tt_fake_gpu.stream_sync(s), "sync");
    NCCL_OK(ncclRedOpCreatePreMulSum(&op_half, &half, ncclFloat32, ncclScalarHostImmediate, comm));
    NCCL_OK(ncclRedOpCreatePreMulSum(&op_dev, k, ncclFloat32, ncclScalarDevice, comm));

    tt_fake_gpu_hold(s);
    NCCL_OK(ncclAllReduce(x, y, N, ncclFloat32, op_half, comm, s));
    NCCL_FAIL_IF(queued_then_released(s), "pre-multiplied sum (host scalar): not through the device queue");
    for (int i = 0; i < N; i++)
        NCCL_FAIL_IF(y[i] != 0.5f * (float)(nranks * (nranks - 1) / 2 + nranks * (i % 5)),
                     "pre-multiplied sum (host scalar): element %d is %g", i, (double)y[i]);

    tt_fake_gpu_hold(s);
    NCCL_OK(ncclAllReduce(x, y, N, ncclFloat32, op_dev, comm, s));
    NCCL_FAIL_IF(queued_then_released(s), "pre-multiplied sum (device scalar): not through the device queue");
    for (int i = 0; i < N; i++)
        NCCL_FAIL_IF(y[i] != 3.0f * (float)(nranks * (nranks - 1) / 2 + nranks * (i % 5)),
                     "pre-multiplied sum (device scalar): element %d is %g", i, (double)y[i]);

    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    tt_fake_gpu_hold(s);
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(x, N, ncclFloat32, right, comm, s));
    NCCL_OK(ncclRecv(y, N, ncclFloat32, left, comm, s));
    NCCL_OK(ncclGroupEnd());
    NCCL_FAIL_IF(queued_then_released(s), "grouped send and receive: not through the device queue");
    for (int i = 0; i < N; i++)
        NCCL_FAIL_IF(y[i] != (float)(left + i % 5), "ring: element %d is %g", i, (double)y[i]);

    tt_fake_gpu_hold(s);
    NCCL_OK(ncclGather(x, all, N, ncclFloat32, 1, comm, s));
    NCCL_FAIL_IF(queued_then_released(s), "gather: not through the device queue");
    for (int q = 0; rank == 1 && q < nranks; q++)
        for (int i = 0; i < N; i++)
            NCCL_FAIL_IF(all[q * N + i] != (float)(q + i % 5), "gather: block %d element %d", q, i);

    for (int q = 0; rank == 0 && q < nranks; q++)
        for (int i = 0; i < N; i++)
            all[q * N + i] = (float)(10 * q + i % 3);
    tt_fake_gpu_hold(s);
    NCCL_OK(ncclScatter(all, y, N, ncclFloat32, 0, comm, s));
    NCCL_FAIL_IF(queued_then_released(s), "scatter: not through the device queue");
    for (int i = 0; i < N; i++)
        NCCL_FAIL_IF(y[i] != (float)(10 * rank + i % 3), "scatter: element %d is %g", i, (double)y[i]);

    tt_fake_gpu_hold(s);
    NCCL_OK(ncclGroupStart());
    for (int q = 0; q < nranks; q++) {
        NCCL_OK(ncclSend(a2a_in + q, 1, ncclInt32, q, comm, s));
        NCCL_OK(ncclRecv(a2a_out + q, 1, ncclInt32, q, comm, s));
    }
    NCCL_OK(ncclGroupEnd());
    NCCL_FAIL_IF(queued_then_released(s), "all-to-all of grouped calls: not through the device queue");
    for (int q = 0; q < nranks; q++)
        NCCL_FAIL_IF(a2a_out[q] != q * 100 + rank, "all-to-all: from rank %d came %d", q, a2a_out[q]);

    NCCL_OK(ncclRedOpDestroy(op_half, comm));
    NCCL_OK(ncclRedOpDestroy(op_dev, comm));
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(device_paths_on_the_stream_model)
{
    nccl_run(2 + _i, device_paths, NULL, 120);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nccl-device");
    TCase *tc = tcase_create("nccl-device");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, device_paths_on_the_stream_model, 0, 2);
    suite_add_tcase(s, tc);
    return nccl_run_suite(s);
}
