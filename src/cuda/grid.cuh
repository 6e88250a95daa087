/* SPDX-License-Identifier: MIT */
/* Launch shapes the CUDA kernels share: THREADS per block, a grid that
 * covers work elements (capped, for grid-stride loops), the loop's start and
 * stride, and a launch that returns its own error. */
#ifndef TT_CUDA_GRID_CUH
#define TT_CUDA_GRID_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <utility>

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

/* Launches kernel k on stream s and returns this launch's error. A launch
 * with <<< >>> leaves it to cudaGetLastError, which also reports an older
 * error still pending on the thread (an unrelated failed call becomes "a
 * reduction failed"). */
template <typename... P, typename... A>
static inline cudaError_t launch_on(cudaStream_t s, unsigned grid, unsigned threads, void (*k)(P...),
                                    A &&...args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(threads);
    cfg.stream = s;
    return cudaLaunchKernelEx(&cfg, k, std::forward<A>(args)...);
}

/* Loads every kernel of the list now (cudaFuncGetAttributes does), so that
 * none is loaded lazily later, while a kernel may be holding a stream: with
 * CUDA_MODULE_LOADING=LAZY (the default) loading can wait for the device to
 * drain, which such a kernel prevents. */
static inline cudaError_t preload(const void *const *kernels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cudaFuncAttributes attr;
        cudaError_t e = cudaFuncGetAttributes(&attr, kernels[i]);
        if (e)
            return e;
    }
    return cudaSuccess;
}

#endif
