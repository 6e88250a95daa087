/* SPDX-License-Identifier: MIT */
/*
 * An application's own kernel, in a module of its own, for the GPU suite:
 * with CUDA_MODULE_LOADING=LAZY it is loaded at its first launch, which
 * the suite makes while a tutti call holds another stream.
 */
#include <cuda_runtime.h>

__global__ void add_one(int *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] += 1;
}

extern "C" int tt_test_lazy_kernel(int *p, size_t n, void *stream)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(64);
    cfg.blockDim = dim3(256);
    cfg.stream = static_cast<cudaStream_t>(stream);
    return (int)cudaLaunchKernelEx(&cfg, add_one, p, n);
}
