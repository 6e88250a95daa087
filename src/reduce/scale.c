/* SPDX-License-Identifier: MIT */
/*
 * dst[i] = src[i] * scalar on the CPU: the first half of a pre-multiplied
 * sum (libnccl's ncclRedOpCreatePreMulSum). The CUDA kernel
 * (cuda/scale.cu) takes the same products, and both follow the NaN rule of
 * float_ops.h.
 */
#include <stdint.h>
#include <string.h>

#include "core/fp8.h"
#include "core/half.h"
#include "reduce/float_ops.h"
#include "reduce/reduce.h"

/* Integers wrap around: the product in the unsigned type of that width. */
#define SCALE_INT(T, U)                                                                                      \
    do {                                                                                                     \
        T k, *y = dst;                                                                                       \
        const T *x = src;                                                                                    \
        memcpy(&k, scalar, sizeof k);                                                                        \
        for (size_t i = 0; i < n; i++)                                                                       \
            y[i] = (T)(U)((U)x[i] * (U)k);                                                                   \
    } while (0)

#define SCALE_FLOAT(T, CANON)                                                                                \
    do {                                                                                                     \
        T k, *y = dst;                                                                                       \
        const T *x = src;                                                                                    \
        memcpy(&k, scalar, sizeof k);                                                                        \
        for (size_t i = 0; i < n; i++)                                                                       \
            y[i] = CANON(x[i] * k);                                                                          \
    } while (0)

/* Narrow floats go through fp32 and are rounded to nearest even on store. */
#define SCALE_NARROW(B, LOAD, STORE)                                                                         \
    do {                                                                                                     \
        B kb, *y = dst;                                                                                      \
        const B *x = src;                                                                                    \
        memcpy(&kb, scalar, sizeof kb);                                                                      \
        float k = LOAD(kb);                                                                                  \
        for (size_t i = 0; i < n; i++)                                                                       \
            y[i] = STORE(tt_canon_f32(LOAD(x[i]) * k));                                                      \
    } while (0)

void tt_reduce_scale(void *dst, const void *src, size_t n, tutti_dtype_t dtype, const void *scalar)
{
    switch (dtype) {
    case TUTTI_INT8: SCALE_INT(int8_t, uint8_t); break;
    case TUTTI_UINT8: SCALE_INT(uint8_t, uint8_t); break;
    case TUTTI_INT32: SCALE_INT(int32_t, uint32_t); break;
    case TUTTI_UINT32: SCALE_INT(uint32_t, uint32_t); break;
    case TUTTI_INT64: SCALE_INT(int64_t, uint64_t); break;
    case TUTTI_UINT64: SCALE_INT(uint64_t, uint64_t); break;
    case TUTTI_FP32: SCALE_FLOAT(float, tt_canon_f32); break;
    case TUTTI_FP64: SCALE_FLOAT(double, tt_canon_f64); break;
    case TUTTI_FP16: SCALE_NARROW(uint16_t, tt_fp16_to_f32, tt_f32_to_fp16); break;
    case TUTTI_BF16: SCALE_NARROW(uint16_t, tt_bf16_to_f32, tt_f32_to_bf16); break;
    case TUTTI_FP8_E4M3: SCALE_NARROW(uint8_t, tt_e4m3_to_f32, tt_f32_to_e4m3); break;
    case TUTTI_FP8_E5M2: SCALE_NARROW(uint8_t, tt_e5m2_to_f32, tt_f32_to_e5m2); break;
    case TUTTI_NUM_DTYPES: break;
    }
}
