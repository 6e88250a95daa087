/* SPDX-License-Identifier: MIT */
/* Where a buffer lives (host or CUDA device memory), and whether a GPU can be used at all. */
#include <stdio.h>

#include "core/cuda_why.h"
#include "device/memkind.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>

/* 1: a device answered; 0: none (no GPU, no driver); -1: not asked yet. */
static int devices = -1;
static char reason[160];

static int probe(void)
{
    if (devices < 0) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        devices = e == cudaSuccess && n > 0;
        if (!devices)
            tt_cuda_why((int)e, n, reason, sizeof reason);
        cudaGetLastError(); /* the runtime keeps the failure otherwise */
    }
    return devices;
}

tt_mem_kind_t tt_mem_kind(const void *p)
{
    if (!p || !probe())
        return TT_MEM_HOST;
    struct cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
        cudaGetLastError();
        return TT_MEM_HOST;
    }
    return attr.type == cudaMemoryTypeDevice ? TT_MEM_DEVICE : TT_MEM_HOST;
}

int tt_cuda_usable(char *why, unsigned long whylen)
{
    if (!probe()) {
        snprintf(why, whylen, "%s", reason);
        return 0;
    }
    return 1;
}
#else
tt_mem_kind_t tt_mem_kind(const void *p)
{
    (void)p;
    return TT_MEM_HOST;
}

int tt_cuda_usable(char *why, unsigned long whylen)
{
    snprintf(why, whylen, "this tutti was built without CUDA");
    return 0;
}
#endif
