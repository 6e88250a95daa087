/*
 * Elementwise reductions on the GPU, one kernel per dtype and op. Each
 * thread loads and stores 16 bytes at a time where the three buffers share
 * their offset from a 16-byte boundary, after a scalar head up to it
 * (vec_split.h); otherwise element by element, byte-wise where a pointer is
 * not even aligned to its element. Floats follow the CPU's NaN rule, and
 * fp16, bf16 and fp8 go through the conversions of half.h and fp8.h: these
 * and the scalar ops of reduce/float_ops.h, shared with the CPU kernels,
 * give both the same bits.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/half.h"
#include "cuda/grid.cuh"
#include "cuda/kernels.h"
#include "cuda/vec_split.h"
#include "reduce/float_ops.h"

namespace
{

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

/* A narrow float is a struct around its bits, so that it has kernels of
 * its own, which load and store through fp32. */
#define NARROW_TYPE_INT(T, U, TAG)
#define NARROW_TYPE_FLOAT(T, U, TAG)
#define NARROW_TYPE_NARROW(T, U, TAG)                                                                        \
    struct narrow_##TAG {                                                                                    \
        T bits;                                                                                              \
    };                                                                                                       \
    template <> struct wide<narrow_##TAG> {                                                                  \
        typedef float type;                                                                                  \
        static __device__ float load(narrow_##TAG v)                                                         \
        {                                                                                                    \
            return tt_##TAG##_to_f32(v.bits);                                                                \
        }                                                                                                    \
        static __device__ narrow_##TAG store(float v)                                                        \
        {                                                                                                    \
            return narrow_##TAG{tt_f32_to_##TAG(v)};                                                         \
        }                                                                                                    \
    };
#define NARROW_TYPE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) NARROW_TYPE_##KIND(T, U, TAG)
TT_DTYPE_LIST(NARROW_TYPE)

/* The type a dtype's kernels take: its C type, a narrow float's struct. */
#define ELEMENT_INT(T, TAG) T
#define ELEMENT_FLOAT(T, TAG) T
#define ELEMENT_NARROW(T, TAG) narrow_##TAG

/* Integer ops wrap: computed on the unsigned type (no signed overflow). */
template <typename T> struct bits_of {
    typedef T type;
};
#define BITS_OF_INT(T, U)                                                                                    \
    template <> struct bits_of<T> {                                                                          \
        typedef U type;                                                                                      \
    };
#define BITS_OF_FLOAT(T, U)
#define BITS_OF_NARROW(T, U)
#define BITS_OF(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) BITS_OF_##KIND(T, U)
TT_DTYPE_LIST(BITS_OF)

/* The ops, as the CPU kernels (reduce/loops.h) define them: integers wrap,
 * floats take float_ops.h's rule. */
template <typename W> __device__ W apply(W x, W y, tutti_op_t op)
{
    typedef typename bits_of<W>::type U;
    switch (op) {
    case TUTTI_PROD: return (W)((U)x * (U)y);
    case TUTTI_MIN: return x < y ? x : y;
    case TUTTI_MAX: return x > y ? x : y;
    default: return (W)((U)x + (U)y); /* sum, and avg until it is divided */
    }
}
template <> __device__ float apply<float>(float x, float y, tutti_op_t op)
{
    return tt_float_op(op, x, y);
}
template <> __device__ double apply<double>(double x, double y, tutti_op_t op)
{
    return tt_double_op(op, x, y);
}

template <typename W> __device__ W canon(W v)
{
    return v;
}
template <> __device__ float canon<float>(float v)
{
    return tt_canon_f32(v);
}
template <> __device__ double canon<double>(double v)
{
    return tt_canon_f64(v);
}

template <typename T> __device__ T one(T x, T y, tutti_op_t op)
{
    return wide<T>::store(apply<typename wide<T>::type>(wide<T>::load(x), wide<T>::load(y), op));
}

/*
 * One launch per call: work item v < nvec is the v-th 16-byte vector after
 * the head; the items after those are the head's elements, then the
 * tail's. With misaligned elements (bytes) each element is moved byte-wise.
 */
template <typename T>
__global__ void reduce_split(T *dst, const T *a, const T *b, tt_vec_split_t sp, tutti_op_t op, int bytes)
{
    constexpr size_t per = sizeof(uint4) / sizeof(T);
    const size_t scalars = sp.head + sp.tail;
    for (size_t w = first_index(); w < sp.nvec + scalars; w += stride()) {
        if (w < sp.nvec) {
            size_t v = w;
            const uint4 *va = reinterpret_cast<const uint4 *>(a + sp.head),
                        *vb = reinterpret_cast<const uint4 *>(b + sp.head);
            uint4 x = va[v], y = vb[v], z;
            /* The vector's elements through memcpy: read through a T
             * pointer, a uint4 would be an object of another type, which
             * a compiler may assume a T store does not change. */
            T xs[per], ys[per], zs[per];
            memcpy(xs, &x, sizeof x);
            memcpy(ys, &y, sizeof y);
#pragma unroll
            for (size_t k = 0; k < per; k++)
                zs[k] = one(xs[k], ys[k], op);
            memcpy(&z, zs, sizeof z);
            reinterpret_cast<uint4 *>(dst + sp.head)[v] = z;
            continue;
        }
        size_t j = w - sp.nvec, i = j < sp.head ? j : sp.head + sp.nvec * per + (j - sp.head);
        if (!bytes) {
            dst[i] = one(a[i], b[i], op);
            continue;
        }
        T x, y, z;
        memcpy(&x, reinterpret_cast<const char *>(a) + i * sizeof(T), sizeof(T));
        memcpy(&y, reinterpret_cast<const char *>(b) + i * sizeof(T), sizeof(T));
        z = one(x, y, op);
        memcpy(reinterpret_cast<char *>(dst) + i * sizeof(T), &z, sizeof(T));
    }
}

/* avg's last step: each element divided by the number of ranks, in the
 * wide type, as tt_reduce_avg_finish does on the CPU (NaN rule included):
 * nranks stays an int, so C's conversions give the CPU's division (an int8
 * divisor would turn 128 ranks into -128, and 256 into 0). */
template <typename T> __global__ void divide_scalar(T *p, size_t n, int nranks, int bytes)
{
    typedef typename wide<T>::type W;
    for (size_t i = first_index(); i < n; i += stride()) {
        T v;
        if (bytes)
            memcpy(&v, reinterpret_cast<const char *>(p) + i * sizeof(T), sizeof(T));
        else
            v = p[i];
        v = wide<T>::store(canon<W>((W)(wide<T>::load(v) / nranks)));
        if (bytes)
            memcpy(reinterpret_cast<char *>(p) + i * sizeof(T), &v, sizeof(T));
        else
            p[i] = v;
    }
}

template <typename T> cudaError_t launch_divide(void *buf, size_t n, int nranks, cudaStream_t s)
{
    int bytes = reinterpret_cast<uintptr_t>(buf) % sizeof(T) != 0;
    return launch_on(s, grid_for(n), THREADS, divide_scalar<T>, static_cast<T *>(buf), n, nranks, bytes);
}

template <typename T>
cudaError_t launch(void *dst, const void *a, const void *b, size_t n, tutti_op_t op, cudaStream_t s)
{
    tt_vec_split_t sp = tt_vec_split(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(a),
                                     reinterpret_cast<uintptr_t>(b), n, sizeof(T));
    return launch_on(s, grid_for(sp.nvec + sp.head + sp.tail), THREADS, reduce_split<T>,
                     static_cast<T *>(dst), static_cast<const T *>(a), static_cast<const T *>(b), sp, op,
                     !sp.aligned);
}

template <typename T> cudaError_t preload_type()
{
    const void *k[] = {reinterpret_cast<const void *>(reduce_split<T>),
                       reinterpret_cast<const void *>(divide_scalar<T>)};
    return preload(k, 2);
}

} // namespace

#define REDUCE_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                            \
    case ENUM: return launch<ELEMENT_##KIND(T, TAG)>(dst, a, b, n, op, s);

extern "C" int tt_cuda_reduce(void *dst, const void *a, const void *b, size_t n, tutti_dtype_t dtype,
                              tutti_op_t op, void *stream)
{
    if (n == 0)
        return 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
        TT_DTYPE_LIST(REDUCE_CASE)
    default: return (int)cudaErrorInvalidValue;
    }
}

#define PRELOAD_TYPE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                           \
    e = e ? e : preload_type<ELEMENT_##KIND(T, TAG)>();

extern "C" int tt_cuda_reduce_preload(void)
{
    cudaError_t e = cudaSuccess;
    TT_DTYPE_LIST(PRELOAD_TYPE)
    return (int)e;
}

#define DIVIDE_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                            \
    case ENUM: return launch_divide<ELEMENT_##KIND(T, TAG)>(buf, n, nranks, s);

extern "C" int tt_cuda_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks, void *stream)
{
    if (n == 0)
        return 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
        TT_DTYPE_LIST(DIVIDE_CASE)
    default: return (int)cudaErrorInvalidValue;
    }
}
