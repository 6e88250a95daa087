/* SPDX-License-Identifier: MIT */
/*
 * Elementwise reductions on the GPU, one kernel per dtype and op. Where the
 * three buffers are 16-byte aligned each thread loads and stores 16 bytes
 * at a time, with a scalar tail; otherwise element by element. fp16, bf16
 * and fp8 go through the conversions of half.h and fp8.h, shared with the
 * CPU, so both give the same bits.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/fp8.h"
#include "core/half.h"
#include "cuda/kernels.h"

namespace
{

struct f16 {
    uint16_t bits;
};
struct b16 {
    uint16_t bits;
};
struct e4m3 {
    uint8_t bits;
};
struct e5m2 {
    uint8_t bits;
};

/* Load and store through fp32 for the narrow floats, as the CPU does. */
template <typename T> struct wide {
    typedef T type;
    static __device__ T load(T v)
    {
        return v;
    }
    static __device__ T store(T v)
    {
        return v;
    }
};
template <> struct wide<f16> {
    typedef float type;
    static __device__ float load(f16 v)
    {
        return tt_fp16_to_f32(v.bits);
    }
    static __device__ f16 store(float v)
    {
        return f16{tt_f32_to_fp16(v)};
    }
};
template <> struct wide<b16> {
    typedef float type;
    static __device__ float load(b16 v)
    {
        return tt_bf16_to_f32(v.bits);
    }
    static __device__ b16 store(float v)
    {
        return b16{tt_f32_to_bf16(v)};
    }
};

template <> struct wide<e4m3> {
    typedef float type;
    static __device__ float load(e4m3 v)
    {
        return tt_e4m3_to_f32(v.bits);
    }
    static __device__ e4m3 store(float v)
    {
        return e4m3{tt_f32_to_e4m3(v)};
    }
};
template <> struct wide<e5m2> {
    typedef float type;
    static __device__ float load(e5m2 v)
    {
        return tt_e5m2_to_f32(v.bits);
    }
    static __device__ e5m2 store(float v)
    {
        return e5m2{tt_f32_to_e5m2(v)};
    }
};

/* The ops, as the CPU kernels (reduce_loops.h) define them: for floats,
 * min and max return NaN when either input is NaN. */
template <typename W> __device__ W apply(W x, W y, tutti_op_t op)
{
    switch (op) {
    case TUTTI_PROD: return x * y;
    case TUTTI_MIN: return x < y ? x : y;
    case TUTTI_MAX: return x > y ? x : y;
    default: return x + y; /* sum, and avg until it is divided */
    }
}
template <typename F> __device__ F apply_float(F x, F y, tutti_op_t op)
{
    switch (op) {
    case TUTTI_PROD: return x * y;
    case TUTTI_MIN: return (x != x || y != y) ? x + y : (x < y ? x : y);
    case TUTTI_MAX: return (x != x || y != y) ? x + y : (x > y ? x : y);
    default: return x + y;
    }
}
template <> __device__ float apply<float>(float x, float y, tutti_op_t op)
{
    return apply_float(x, y, op);
}
template <> __device__ double apply<double>(double x, double y, tutti_op_t op)
{
    return apply_float(x, y, op);
}

template <typename T> __device__ T one(T x, T y, tutti_op_t op)
{
    return wide<T>::store(apply<typename wide<T>::type>(wide<T>::load(x), wide<T>::load(y), op));
}

/* 16 bytes at a time: a uint4 holds 16 / sizeof(T) elements. */
template <typename T> __global__ void reduce_vec(T *dst, const T *a, const T *b, size_t nvec, tutti_op_t op)
{
    const size_t per = sizeof(uint4) / sizeof(T);
    for (size_t v = blockIdx.x * (size_t)blockDim.x + threadIdx.x; v < nvec;
         v += (size_t)gridDim.x * blockDim.x) {
        uint4 x = reinterpret_cast<const uint4 *>(a)[v], y = reinterpret_cast<const uint4 *>(b)[v], z;
        const T *xs = reinterpret_cast<const T *>(&x), *ys = reinterpret_cast<const T *>(&y);
        T *zs = reinterpret_cast<T *>(&z);
#pragma unroll
        for (size_t k = 0; k < per; k++)
            zs[k] = one(xs[k], ys[k], op);
        reinterpret_cast<uint4 *>(dst)[v] = z;
    }
}

template <typename T> __global__ void reduce_scalar(T *dst, const T *a, const T *b, size_t n, tutti_op_t op)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = one(a[i], b[i], op);
}

/* avg's last step: each element divided by the number of ranks, in the
 * wide type, as tt_reduce_avg_finish does on the CPU. */
template <typename T> __global__ void divide_scalar(T *p, size_t n, int nranks)
{
    typedef typename wide<T>::type W;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = wide<T>::store((W)(wide<T>::load(p[i]) / (W)nranks));
}

template <typename T> cudaError_t launch_divide(void *buf, size_t n, int nranks, cudaStream_t s)
{
    const int threads = 256;
    unsigned blocks = (unsigned)((n + threads - 1) / threads < 65535 ? (n + threads - 1) / threads : 65535);
    divide_scalar<T><<<blocks, threads, 0, s>>>(static_cast<T *>(buf), n, nranks);
    return cudaGetLastError();
}

template <typename T>
cudaError_t launch(void *dst, const void *a, const void *b, size_t n, tutti_op_t op, cudaStream_t s)
{
    T *d = static_cast<T *>(dst);
    const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
    const size_t per = sizeof(uint4) / sizeof(T);
    const int threads = 256;
    size_t nvec =
        ((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) %
         16)
            ? 0
            : n / per;
    if (nvec) {
        unsigned blocks =
            (unsigned)((nvec + threads - 1) / threads < 65535 ? (nvec + threads - 1) / threads : 65535);
        reduce_vec<T><<<blocks, threads, 0, s>>>(d, x, y, nvec, op);
    }
    size_t done = nvec * per, rest = n - done;
    if (rest) {
        unsigned blocks =
            (unsigned)((rest + threads - 1) / threads < 65535 ? (rest + threads - 1) / threads : 65535);
        reduce_scalar<T><<<blocks, threads, 0, s>>>(d + done, x + done, y + done, rest, op);
    }
    return cudaGetLastError();
}

} // namespace

extern "C" int tt_cuda_reduce(void *dst, const void *a, const void *b, size_t n, tutti_dtype_t dtype,
                              tutti_op_t op, void *stream)
{
    if (n == 0)
        return 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
    case TUTTI_INT8: return launch<int8_t>(dst, a, b, n, op, s);
    case TUTTI_UINT8: return launch<uint8_t>(dst, a, b, n, op, s);
    case TUTTI_INT32: return launch<int32_t>(dst, a, b, n, op, s);
    case TUTTI_UINT32: return launch<uint32_t>(dst, a, b, n, op, s);
    case TUTTI_INT64: return launch<int64_t>(dst, a, b, n, op, s);
    case TUTTI_UINT64: return launch<uint64_t>(dst, a, b, n, op, s);
    case TUTTI_FP16: return launch<f16>(dst, a, b, n, op, s);
    case TUTTI_BF16: return launch<b16>(dst, a, b, n, op, s);
    case TUTTI_FP32: return launch<float>(dst, a, b, n, op, s);
    case TUTTI_FP64: return launch<double>(dst, a, b, n, op, s);
    case TUTTI_FP8_E4M3: return launch<e4m3>(dst, a, b, n, op, s);
    case TUTTI_FP8_E5M2: return launch<e5m2>(dst, a, b, n, op, s);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" int tt_cuda_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks, void *stream)
{
    if (n == 0)
        return 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
    case TUTTI_INT8: return launch_divide<int8_t>(buf, n, nranks, s);
    case TUTTI_UINT8: return launch_divide<uint8_t>(buf, n, nranks, s);
    case TUTTI_INT32: return launch_divide<int32_t>(buf, n, nranks, s);
    case TUTTI_UINT32: return launch_divide<uint32_t>(buf, n, nranks, s);
    case TUTTI_INT64: return launch_divide<int64_t>(buf, n, nranks, s);
    case TUTTI_UINT64: return launch_divide<uint64_t>(buf, n, nranks, s);
    case TUTTI_FP16: return launch_divide<f16>(buf, n, nranks, s);
    case TUTTI_BF16: return launch_divide<b16>(buf, n, nranks, s);
    case TUTTI_FP32: return launch_divide<float>(buf, n, nranks, s);
    case TUTTI_FP64: return launch_divide<double>(buf, n, nranks, s);
    case TUTTI_FP8_E4M3: return launch_divide<e4m3>(buf, n, nranks, s);
    case TUTTI_FP8_E5M2: return launch_divide<e5m2>(buf, n, nranks, s);
    default: return (int)cudaErrorInvalidValue;
    }
}
