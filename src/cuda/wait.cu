/* SPDX-License-Identifier: MIT */
/*
 * Holds a stream until the host says so. The proxy thread that runs a
 * device collective stores the collective's ticket into a word of pinned,
 * device-mapped host memory when its results are in place; this kernel,
 * enqueued on the caller's stream right after the collective was queued,
 * returns once the word reaches its ticket, so later work on the stream
 * sees the results.
 */
#include <cuda_runtime.h>

#include "cuda/kernels.h"

__global__ void wait_ticket(const volatile unsigned int *done, unsigned int ticket)
{
    /* Tickets wrap around: compare by signed distance. */
    while ((int)(*done - ticket) < 0)
        __nanosleep(2000); /* each read crosses PCIe; a few per 10 us is plenty */
}

extern "C" int tt_cuda_wait_ticket(const unsigned int *done, unsigned int ticket, void *stream)
{
    wait_ticket<<<1, 1, 0, (cudaStream_t)stream>>>(done, ticket);
    return (int)cudaGetLastError();
}
