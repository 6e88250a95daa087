/* SPDX-License-Identifier: MIT */
/* Loads every tutti kernel on the current device, before any gate can hold a stream (grid.cuh says why). */
#include <cuda_runtime.h>

#include "cuda/kernels.h"

extern "C" int tt_cuda_preload(void)
{
    int e = tt_cuda_wait_preload();
    if (!e)
        e = tt_cuda_reduce_preload();
    if (!e)
        e = tt_cuda_compress_preload();
    if (!e)
        e = tt_cuda_compress_coll_preload();
    if (!e)
        e = tt_cuda_scale_preload();
    return e;
}
