/* SPDX-License-Identifier: MIT */
/*
 * The kernel stand-in's CUDA runtime (kcpu.h says what it models): what
 * the .cu files of src/cuda and src/compress/allreduce_gpu.c use of CUDA,
 * and no more, so that they compile unmodified as C++ (or C) and run on the CPU. The
 * values of the error codes and copy kinds are CUDA's. Every function is
 * static: nothing here clashes with the real runtime a CUDA build links.
 */
#ifndef TT_TEST_KCPU_CUDA_RUNTIME_H
#define TT_TEST_KCPU_CUDA_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kcpu.h"

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorIllegalAddress = 700,
    cudaErrorNotSupported = 801,
} cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

typedef struct tt_kcpu_stream *cudaStream_t;

struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs;
};

static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                                          cudaStream_t stream)
{
    (void)stream; /* everything is done when its call returns */
    return (cudaError_t)tt_kcpu_copy(dst, src, bytes, (int)kind);
}

static inline cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream)
{
    (void)stream;
    return (cudaError_t)tt_kcpu_set(dst, value, bytes);
}

static inline cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

static inline cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *kernel)
{
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    tt_kcpu_loaded(kernel);
    return cudaSuccess;
}

#ifdef __cplusplus
#include <stdint.h>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* Block-scope arrays shared by a block's threads (fibers on one stack
 * each): static, in one section the stand-in fills before each block. */
#define __shared__ static __attribute__((section("tt_kcpu_shared"), aligned(16)))

struct uint3 {
    unsigned x, y, z;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_)
    {
    }
};

/* The running thread's indices, set by the stand-in before it runs one. */
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;

struct cudaLaunchConfig_t {
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    void *attrs;
    unsigned numAttrs;
};

static inline void __syncthreads()
{
    tt_kcpu_barrier();
}
static inline void __threadfence_system()
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
static inline void __nanosleep(unsigned ns)
{
    tt_kcpu_nanosleep(ns);
}
static inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline int atomicAdd(int *p, int v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
/* One IEEE operation, rounded to nearest even (-ffp-contract=off keeps it
 * apart from its neighbours); a NaN result is the GPU's own NaN, 0x7fffffff,
 * whatever the operands, where a CPU makes others. */
static inline float tt_kcpu_gpu_nan(float r)
{
    unsigned nan = 0x7fffffffu;
    if (r == r)
        return r;
    memcpy(&r, &nan, sizeof r);
    return r;
}
static inline float __fadd_rn(float a, float b)
{
    return tt_kcpu_gpu_nan(a + b);
}
static inline float __fsub_rn(float a, float b)
{
    return tt_kcpu_gpu_nan(a - b);
}
static inline float __fmul_rn(float a, float b)
{
    return tt_kcpu_gpu_nan(a * b);
}
static inline float __fdiv_rn(float a, float b)
{
    return tt_kcpu_gpu_nan(a / b);
}
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A parameter's value as a pointer to check, or (void *)-1 for none. */
template <typename T> static inline const void *tt_kcpu_pointer(const T &v)
{
    if constexpr (std::is_pointer<T>::value)
        return (const void *)v;
    else
        return (const void *)(intptr_t)-1;
}

template <typename K, typename Tuple> struct tt_kcpu_call {
    K kernel;
    Tuple *params;
    static void thread(void *arg)
    {
        tt_kcpu_call *c = static_cast<tt_kcpu_call *>(arg);
        std::apply(c->kernel, *c->params);
    }
};

/* The parameter types of the kernel, from this function's own name. */
template <typename... P> static inline const char *tt_kcpu_signature()
{
    return __PRETTY_FUNCTION__;
}

/* The launch: the arguments are converted to the kernel's parameter types
 * as a real launch converts them, then every thread of the grid calls the
 * kernel with them. */
template <typename... P, typename... A>
static inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *cfg, void (*kernel)(P...), A &&...args)
{
    typedef std::tuple<typename std::decay<P>::type...> params_t;
    params_t params(std::forward<A>(args)...);
    const void *pointers[sizeof...(P) + 1] = {};
    std::apply(
        [&pointers](const auto &...p) {
            int i = 0;
            ((pointers[i++] = tt_kcpu_pointer(p)), ...);
        },
        params);
    tt_kcpu_call<void (*)(P...), params_t> call = {kernel, &params};
    struct tt_kcpu_grid l = {{cfg->gridDim.x, cfg->gridDim.y, cfg->gridDim.z},
                             {cfg->blockDim.x, cfg->blockDim.y, cfg->blockDim.z},
                             cfg->dynamicSmemBytes,
                             reinterpret_cast<const void *>(kernel),
                             tt_kcpu_signature<P...>(),
                             (int)sizeof...(P),
                             pointers};
    return (cudaError_t)tt_kcpu_launch(&l, call.thread, &call);
}
#endif

#endif
