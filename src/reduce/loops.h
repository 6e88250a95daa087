/* SPDX-License-Identifier: MIT */
/*
 * Element-wise loops for every dtype and op, written so the compiler can
 * vectorise them. Included by each reduce_<isa>.c, which compiles them for
 * its own target; TT_KERNEL_PREFIX names that copy's functions.
 */
#include <math.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/half.h"
#include "reduce/float_ops.h"
#include "reduce/reduce.h"

/* User buffers need not be aligned to their element size: every access
 * goes through these alignment-1 types (a GCC extension), so misaligned
 * elements are defined behaviour and still vectorise with unaligned loads. */
#ifndef TT_UNALIGNED_TYPES
#define TT_UNALIGNED_TYPES
typedef int8_t tt_i8u_t;
typedef uint8_t tt_u8u_t;
typedef int32_t __attribute__((aligned(1))) tt_i32u_t;
typedef uint32_t __attribute__((aligned(1))) tt_u32u_t;
typedef int64_t __attribute__((aligned(1))) tt_i64u_t;
typedef uint64_t __attribute__((aligned(1))) tt_u64u_t;
typedef uint16_t __attribute__((aligned(1))) tt_u16u_t;
typedef float __attribute__((aligned(1))) tt_f32u_t;
typedef double __attribute__((aligned(1))) tt_f64u_t;
#endif

#define TT_CAT2(a, b) a##b
#define TT_CAT(a, b) TT_CAT2(a, b)
#define TT_KFN(name) TT_CAT(TT_KERNEL_PREFIX, name)

/* One kernel: pd[i] = EXPR of x = pa[i] and y = pb[i]. */
#define TT_ELEMENTWISE(name, T, U, EXPR)                                                                     \
    static void TT_KFN(name)(void *d, const void *a, const void *b, size_t n)                                \
    {                                                                                                        \
        U *restrict pd = d;                                                                                  \
        const U *pa = a, *pb = b;                                                                            \
        for (size_t i = 0; i < n; i++) {                                                                     \
            T x = pa[i], y = pb[i];                                                                          \
            pd[i] = (EXPR);                                                                                  \
        }                                                                                                    \
    }

/* Integers wrap (computed unsigned: no signed-overflow UB). */
#define TT_INT_KERNELS(T, UT, tag, U)                                                                        \
    TT_ELEMENTWISE(sum_##tag, T, U, (T)((UT)x + (UT)y))                                                      \
    TT_ELEMENTWISE(prod_##tag, T, U, (T)((UT)x * (UT)y))                                                     \
    TT_ELEMENTWISE(min_##tag, T, U, x < y ? x : y)                                                           \
    TT_ELEMENTWISE(max_##tag, T, U, x > y ? x : y)

/* Floats: a NaN result is the canonical NaN (float_ops.h); min/max are NaN
 * when either input is. */
#define TT_FLOAT_KERNELS(T, tag, U, NAN_OF)                                                                  \
    TT_ELEMENTWISE(sum_##tag, T, U, tt_canon_##tag(x + y))                                                   \
    TT_ELEMENTWISE(prod_##tag, T, U, tt_canon_##tag(x *y))                                                   \
    TT_ELEMENTWISE(min_##tag, T, U, (x != x) | (y != y) ? NAN_OF() : (x < y ? x : y))                        \
    TT_ELEMENTWISE(max_##tag, T, U, (x != x) | (y != y) ? NAN_OF() : (x > y ? x : y))

/* Half types one element at a time: the tails of the vector kernels and
 * the whole portable kernels. */
static inline void TT_KFN(fp16_tail)(int op, tt_u16u_t *d, const tt_u16u_t *a, const tt_u16u_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = tt_f32_to_fp16(tt_float_op(op, tt_fp16_to_f32(a[i]), tt_fp16_to_f32(b[i])));
}

static inline void TT_KFN(bf16_tail)(int op, tt_u16u_t *d, const tt_u16u_t *a, const tt_u16u_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = tt_f32_to_bf16(tt_float_op(op, tt_bf16_to_f32(a[i]), tt_bf16_to_f32(b[i])));
}

/* fp8 one element at a time: through fp32 like the half types; the
 * conversions saturate and canonicalise NaN (core/fp8.h). */
static inline void TT_KFN(e4m3_tail)(int op, uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = tt_f32_to_e4m3(tt_float_op(op, tt_e4m3_to_f32(a[i]), tt_e4m3_to_f32(b[i])));
}

static inline void TT_KFN(e5m2_tail)(int op, uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = tt_f32_to_e5m2(tt_float_op(op, tt_e5m2_to_f32(a[i]), tt_e5m2_to_f32(b[i])));
}

/* The integer and float kernels of every dtype; the narrow floats' each
 * file defines itself (TT_HALF_KERNELS). */
#define TT_KERNELS_INT(T, U, TAG) TT_INT_KERNELS(T, U, TAG, tt_##TAG##u_t)
#define TT_KERNELS_FLOAT(T, U, TAG) TT_FLOAT_KERNELS(T, TAG, tt_##TAG##u_t, tt_nan_##TAG)
#define TT_KERNELS_NARROW(T, U, TAG)
#define TT_KERNELS_OF(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) TT_KERNELS_##KIND(T, U, TAG)
TT_DTYPE_LIST(TT_KERNELS_OF)

#define TT_FILL_ROW(table, dtype, tag)                                                                       \
    do {                                                                                                     \
        table[dtype][TUTTI_SUM] = TT_KFN(sum_##tag);                                                         \
        table[dtype][TUTTI_PROD] = TT_KFN(prod_##tag);                                                       \
        table[dtype][TUTTI_MIN] = TT_KFN(min_##tag);                                                         \
        table[dtype][TUTTI_MAX] = TT_KFN(max_##tag);                                                         \
        table[dtype][TUTTI_AVG] = TT_KFN(sum_##tag);                                                         \
    } while (0)

#define TT_FILL_ROW_OF(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) TT_FILL_ROW(t, ENUM, TAG);

/* Fills every row: the narrow floats' kernels must be defined by then. */
#define TT_FILL_ROWS(table)                                                                                  \
    do {                                                                                                     \
        tt_reduce_fn(*t)[TUTTI_NUM_OPS] = table;                                                             \
        TT_DTYPE_LIST(TT_FILL_ROW_OF)                                                                        \
    } while (0)

/* Defines the 4 fp16, bf16 or fp8 kernels of one file from a body macro
 * BODY(op, d, a, b, n) that handles the whole array. */
#define TT_HALF_KERNELS(tag, BODY)                                                                           \
    static void TT_KFN(sum_##tag)(void *d, const void *a, const void *b, size_t n)                           \
    {                                                                                                        \
        BODY(TUTTI_SUM, d, a, b, n);                                                                         \
    }                                                                                                        \
    static void TT_KFN(prod_##tag)(void *d, const void *a, const void *b, size_t n)                          \
    {                                                                                                        \
        BODY(TUTTI_PROD, d, a, b, n);                                                                        \
    }                                                                                                        \
    static void TT_KFN(min_##tag)(void *d, const void *a, const void *b, size_t n)                           \
    {                                                                                                        \
        BODY(TUTTI_MIN, d, a, b, n);                                                                         \
    }                                                                                                        \
    static void TT_KFN(max_##tag)(void *d, const void *a, const void *b, size_t n)                           \
    {                                                                                                        \
        BODY(TUTTI_MAX, d, a, b, n);                                                                         \
    }
