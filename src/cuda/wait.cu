/* SPDX-License-Identifier: MIT */
/*
 * The stream gate and signal as kernels, for GPUs or drivers without
 * stream memory operations (the device queue prefers those: see
 * src/device/queue.c). The proxy thread that runs a device collective
 * stores the collective's ticket into a word of pinned, device-mapped host
 * memory when its results are in place; the gate kernel, enqueued on the
 * caller's stream, returns once the word reaches its ticket, so later work
 * on the stream sees the results. The signal kernel is the other direction:
 * it stores a ticket into such a word once the stream's earlier work is
 * done, for the proxy to see.
 */
#include <cuda_runtime.h>

#include "cuda/grid.cuh"
#include "cuda/kernels.h"

namespace
{

__global__ void wait_ticket(const volatile unsigned int *done, unsigned int ticket)
{
    /* Tickets wrap around: compare by signed distance. */
    while ((int)(*done - ticket) < 0)
        __nanosleep(2000); /* each read crosses PCIe; a few per 10 us is plenty */
}

__global__ void signal_ticket(volatile unsigned int *word, unsigned int ticket)
{
    __threadfence_system(); /* the stream's earlier writes first, as the host sees them */
    *word = ticket;
    __threadfence_system();
}

} // namespace

extern "C" int tt_cuda_wait_ticket(const unsigned int *done, unsigned int ticket, void *stream)
{
    return (int)launch_on(static_cast<cudaStream_t>(stream), 1, 1, wait_ticket,
                          (const volatile unsigned int *)done, ticket);
}

extern "C" int tt_cuda_signal_ticket(unsigned int *word, unsigned int ticket, void *stream)
{
    return (int)launch_on(static_cast<cudaStream_t>(stream), 1, 1, signal_ticket, (volatile unsigned int *)word,
                          ticket);
}

extern "C" int tt_cuda_wait_preload(void)
{
    const void *k[] = {reinterpret_cast<const void *>(wait_ticket), reinterpret_cast<const void *>(signal_ticket)};
    return (int)preload(k, sizeof k / sizeof *k);
}
