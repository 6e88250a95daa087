/* SPDX-License-Identifier: MIT */
/*
 * dst[i] = src[i] * scalar on the CPU: the first half of a pre-multiplied
 * sum (libnccl's ncclRedOpCreatePreMulSum). The CUDA kernel
 * (cuda/scale.cu) takes the same products, and both follow the NaN rule of
 * float_ops.h.
 */
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/half.h"
#include "reduce/float_ops.h"
#include "reduce/reduce.h"

/* Integers wrap around: the product in the unsigned type of that width. */
#define SCALE_WRAPPING(T, U)                                                                                 \
    do {                                                                                                     \
        T k, *y = dst;                                                                                       \
        const T *x = src;                                                                                    \
        memcpy(&k, scalar, sizeof k);                                                                        \
        for (size_t i = 0; i < n; i++)                                                                       \
            y[i] = (T)(U)((U)x[i] * (U)k);                                                                   \
    } while (0)

#define SCALE_CANON(T, CANON)                                                                                \
    do {                                                                                                     \
        T k, *y = dst;                                                                                       \
        const T *x = src;                                                                                    \
        memcpy(&k, scalar, sizeof k);                                                                        \
        for (size_t i = 0; i < n; i++)                                                                       \
            y[i] = CANON(x[i] * k);                                                                          \
    } while (0)

/* Narrow floats go through fp32 and are rounded to nearest even on store. */
#define SCALE_THROUGH_F32(B, LOAD, STORE)                                                                    \
    do {                                                                                                     \
        B kb, *y = dst;                                                                                      \
        const B *x = src;                                                                                    \
        memcpy(&kb, scalar, sizeof kb);                                                                      \
        float k = LOAD(kb);                                                                                  \
        for (size_t i = 0; i < n; i++)                                                                       \
            y[i] = STORE(tt_canon_f32(LOAD(x[i]) * k));                                                      \
    } while (0)

#define SCALE_INT(T, U, TAG) SCALE_WRAPPING(T, U)
#define SCALE_FLOAT(T, U, TAG) SCALE_CANON(T, tt_canon_##TAG)
#define SCALE_NARROW(T, U, TAG) SCALE_THROUGH_F32(T, tt_##TAG##_to_f32, tt_f32_to_##TAG)
#define SCALE_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                             \
    case ENUM: SCALE_##KIND(T, U, TAG); break;

void tt_reduce_scale(void *dst, const void *src, size_t n, tutti_dtype_t dtype, const void *scalar)
{
    switch (dtype) {
        TT_DTYPE_LIST(SCALE_CASE)
    case TUTTI_NUM_DTYPES: break;
    }
}
