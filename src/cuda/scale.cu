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

__device__ float fp16_load(uint16_t b)
{
    return tt_fp16_to_f32(b);
}
__device__ uint16_t fp16_store(float f)
{
    return tt_f32_to_fp16(f);
}
__device__ float bf16_load(uint16_t b)
{
    return tt_bf16_to_f32(b);
}
__device__ uint16_t bf16_store(float f)
{
    return tt_f32_to_bf16(f);
}
__device__ float e4m3_load(uint16_t b)
{
    return tt_e4m3_to_f32((uint8_t)b);
}
__device__ uint16_t e4m3_store(float f)
{
    return tt_f32_to_e4m3(f);
}
__device__ float e5m2_load(uint16_t b)
{
    return tt_e5m2_to_f32((uint8_t)b);
}
__device__ uint16_t e5m2_store(float f)
{
    return tt_f32_to_e5m2(f);
}

} // namespace

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
    case TUTTI_INT8:
        return (int)launch_on(st, g, THREADS, scale_int<int8_t, uint8_t>, (int8_t *)dst, (const int8_t *)src,
                              n, s, b);
    case TUTTI_UINT8:
        return (int)launch_on(st, g, THREADS, scale_int<uint8_t, uint8_t>, (uint8_t *)dst,
                              (const uint8_t *)src, n, s, b);
    case TUTTI_INT32:
        return (int)launch_on(st, g, THREADS, scale_int<int32_t, uint32_t>, (int32_t *)dst,
                              (const int32_t *)src, n, s, b);
    case TUTTI_UINT32:
        return (int)launch_on(st, g, THREADS, scale_int<uint32_t, uint32_t>, (uint32_t *)dst,
                              (const uint32_t *)src, n, s, b);
    case TUTTI_INT64:
        return (int)launch_on(st, g, THREADS, scale_int<int64_t, uint64_t>, (int64_t *)dst,
                              (const int64_t *)src, n, s, b);
    case TUTTI_UINT64:
        return (int)launch_on(st, g, THREADS, scale_int<uint64_t, uint64_t>, (uint64_t *)dst,
                              (const uint64_t *)src, n, s, b);
    case TUTTI_FP32:
        return (int)launch_on(st, g, THREADS, scale_float<float>, (float *)dst, (const float *)src, n, s, b);
    case TUTTI_FP64:
        return (int)launch_on(st, g, THREADS, scale_float<double>, (double *)dst, (const double *)src, n, s,
                              b);
    case TUTTI_FP16:
        return (int)launch_on(st, g, THREADS, scale_narrow<fp16_load, fp16_store, uint16_t>, (uint16_t *)dst,
                              (const uint16_t *)src, n, s, b);
    case TUTTI_BF16:
        return (int)launch_on(st, g, THREADS, scale_narrow<bf16_load, bf16_store, uint16_t>, (uint16_t *)dst,
                              (const uint16_t *)src, n, s, b);
    case TUTTI_FP8_E4M3:
        return (int)launch_on(st, g, THREADS, scale_narrow<e4m3_load, e4m3_store, uint8_t>, (uint8_t *)dst,
                              (const uint8_t *)src, n, s, b);
    case TUTTI_FP8_E5M2:
        return (int)launch_on(st, g, THREADS, scale_narrow<e5m2_load, e5m2_store, uint8_t>, (uint8_t *)dst,
                              (const uint8_t *)src, n, s, b);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" int tt_cuda_scale_preload(void)
{
    const void *k[] = {reinterpret_cast<const void *>(scale_int<int8_t, uint8_t>),
                       reinterpret_cast<const void *>(scale_int<uint8_t, uint8_t>),
                       reinterpret_cast<const void *>(scale_int<int32_t, uint32_t>),
                       reinterpret_cast<const void *>(scale_int<uint32_t, uint32_t>),
                       reinterpret_cast<const void *>(scale_int<int64_t, uint64_t>),
                       reinterpret_cast<const void *>(scale_int<uint64_t, uint64_t>),
                       reinterpret_cast<const void *>(scale_float<float>),
                       reinterpret_cast<const void *>(scale_float<double>),
                       reinterpret_cast<const void *>(scale_narrow<fp16_load, fp16_store, uint16_t>),
                       reinterpret_cast<const void *>(scale_narrow<bf16_load, bf16_store, uint16_t>),
                       reinterpret_cast<const void *>(scale_narrow<e4m3_load, e4m3_store, uint8_t>),
                       reinterpret_cast<const void *>(scale_narrow<e5m2_load, e5m2_store, uint8_t>)};
    return (int)preload(k, sizeof k / sizeof *k);
}
