/* SPDX-License-Identifier: MIT */
/* Launch shapes the CUDA kernels share: THREADS per block, a grid that
 * covers work elements (capped, for grid-stride loops), and the loop's
 * start and stride. */
#ifndef TT_CUDA_GRID_CUH
#define TT_CUDA_GRID_CUH

#include <stddef.h>

enum { THREADS = 256 };

static inline unsigned grid_for(size_t work)
{
    size_t blocks = (work + THREADS - 1) / THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

static __device__ inline size_t first_index()
{
    return blockIdx.x * (size_t)blockDim.x + threadIdx.x;
}

static __device__ inline size_t stride()
{
    return (size_t)gridDim.x * blockDim.x;
}

#endif
