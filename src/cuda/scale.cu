/* SPDX-License-Identifier: MIT */
/*
 * dst[i] = src[i] * scalar on device buffers: the first half of a
 * pre-multiplied sum (libnccl's ncclRedOpCreatePreMulSum). The product is
 * taken as tt_reduce_scale takes it on the CPU: narrow floats through fp32,
 * rounded to nearest even on store; integers wrap around; a NaN product is
 * the canonical NaN (reduce/float_ops.h). The buffers are the user's and
 * need not be aligned to their element (nor the scalar): then every
 * element moves through memcpy, bytes at a time.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/half.h"
#include "cuda/grid.cuh"
#include "cuda/kernels.h"
#include "reduce/float_ops.h"

namespace
{

/* The scalar: read from device memory when the kernel runs, else the
 * bytes passed by value. */
struct scalar_arg {
    const void *dev;
    uint64_t bytes;
};

template <typename T> __device__ T scalar_of(scalar_arg s)
{
    T v;
    memcpy(&v, s.dev ? s.dev : &s.bytes, sizeof v);
    return v;
}

/* Element i of p; with bytes, p need not be aligned to T. */
template <typename T> __device__ T load(const T *p, size_t i, int bytes)
{
    if (!bytes)
        return p[i];
    T v;
    memcpy(&v, reinterpret_cast<const char *>(p) + i * sizeof(T), sizeof v);
    return v;
}

template <typename T> __device__ void store(T *p, size_t i, T v, int bytes)
{
    if (!bytes)
        p[i] = v;
    else
        memcpy(reinterpret_cast<char *>(p) + i * sizeof(T), &v, sizeof v);
}

template <typename T, typename U>
__global__ void scale_int(T *dst, const T *src, size_t n, scalar_arg s, int bytes)
{
    U k = (U)scalar_of<T>(s);
    for (size_t i = first_index(); i < n; i += stride())
        store(dst, i, (T)(U)((U)load(src, i, bytes) * k), bytes);
}

__device__ float canon(float v)
{
    return tt_canon_f32(v);
}
__device__ double canon(double v)
{
    return tt_canon_f64(v);
}

template <typename T> __global__ void scale_float(T *dst, const T *src, size_t n, scalar_arg s, int bytes)
{
    T k = scalar_of<T>(s);
    for (size_t i = first_index(); i < n; i += stride())
        store(dst, i, canon(load(src, i, bytes) * k), bytes);
}

/* Narrow floats as bits: to fp32, multiply, back. */
template <float (*LOAD)(uint16_t), uint16_t (*STORE)(float), typename B>
__global__ void scale_narrow(B *dst, const B *src, size_t n, scalar_arg s, int bytes)
{
    float k = LOAD((uint16_t)scalar_of<B>(s));
    for (size_t i = first_index(); i < n; i += stride())
        store(dst, i, (B)STORE(tt_canon_f32(LOAD((uint16_t)load(src, i, bytes)) * k)), bytes);
}

/* A narrow float's conversions, with the signature scale_narrow takes. */
#define NARROW_CONVERSIONS_INT(T, TAG)
#define NARROW_CONVERSIONS_FLOAT(T, TAG)
#define NARROW_CONVERSIONS_NARROW(T, TAG)                                                                    \
    __device__ float TAG##_load(uint16_t b)                                                                  \
    {                                                                                                        \
        return tt_##TAG##_to_f32((T)b);                                                                      \
    }                                                                                                        \
    __device__ uint16_t TAG##_store(float f)                                                                 \
    {                                                                                                        \
        return tt_f32_to_##TAG(f);                                                                           \
    }
#define NARROW_CONVERSIONS(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) NARROW_CONVERSIONS_##KIND(T, TAG)
TT_DTYPE_LIST(NARROW_CONVERSIONS)

/* Each dtype's kernel. */
#define SCALE_KERNEL_INT(T, U, TAG) scale_int<T, U>
#define SCALE_KERNEL_FLOAT(T, U, TAG) scale_float<T>
#define SCALE_KERNEL_NARROW(T, U, TAG) scale_narrow<TAG##_load, TAG##_store, T>

} // namespace

#define SCALE_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                             \
    case ENUM:                                                                                               \
        return (int)launch_on(st, g, THREADS, SCALE_KERNEL_##KIND(T, U, TAG), (T *)dst, (const T *)src, n,   \
                              s, b);

extern "C" int tt_cuda_scale(void *dst, const void *src, size_t n, tutti_dtype_t dtype,
                             const void *scalar_dev, const void *scalar_host, void *stream)
{
    if (n == 0)
        return 0;
    scalar_arg s = {scalar_dev, 0};
    if (!scalar_dev)
        memcpy(&s.bytes, scalar_host, tutti_dtype_size(dtype));
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    unsigned g = grid_for(n);
    int b =
        (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % tutti_dtype_size(dtype) != 0;
    switch (dtype) {
        TT_DTYPE_LIST(SCALE_CASE)
    default: return (int)cudaErrorInvalidValue;
    }
}

#define SCALE_KERNEL_ADDRESS(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                   \
    reinterpret_cast<const void *>(SCALE_KERNEL_##KIND(T, U, TAG)),

extern "C" int tt_cuda_scale_preload(void)
{
    const void *k[] = {TT_DTYPE_LIST(SCALE_KERNEL_ADDRESS)};
    return (int)preload(k, sizeof k / sizeof *k);
}
