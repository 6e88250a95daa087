/* SPDX-License-Identifier: MIT */
/* Every dtype's facts in one list, element sizes and names. */
#ifndef TT_DTYPE_H
#define TT_DTYPE_H

#include <stddef.h>

#include "tutti.h"

/*
 * Every dtype, in tutti_dtype_t's order (dtype.c checks it against the public
 * values). Code that needs a case, a kernel or a table row per dtype expands
 * this list, so a new dtype is its value in tutti.h plus one line here.
 * X(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG):
 *   NAME, NCCL_TESTS_NAME  tutti_dtype_name's, and nccl-tests' -d name; tt_dtype_parse takes both
 *   KIND  INT: wraps around, so it is computed in U, the unsigned type of its width;
 *         FLOAT: computed in U (= T), a NaN result made canonical (reduce/float_ops.h);
 *         NARROW: T holds the bits, computed in U (float) through tt_TAG_to_f32 and
 *         tt_f32_to_TAG (core/half.h, core/fp8.h), rounded to nearest even
 *   T     the C type of one element; its size is the dtype's
 *   TAG   the stem of the kernels' and conversions' names (sum_TAG, tt_canon_TAG)
 */
#define TT_DTYPE_LIST(X)                                                                                     \
    X(TUTTI_INT8, "int8", "int8", INT, int8_t, uint8_t, i8)                                                  \
    X(TUTTI_UINT8, "uint8", "uint8", INT, uint8_t, uint8_t, u8)                                              \
    X(TUTTI_INT32, "int32", "int32", INT, int32_t, uint32_t, i32)                                            \
    X(TUTTI_UINT32, "uint32", "uint32", INT, uint32_t, uint32_t, u32)                                        \
    X(TUTTI_INT64, "int64", "int64", INT, int64_t, uint64_t, i64)                                            \
    X(TUTTI_UINT64, "uint64", "uint64", INT, uint64_t, uint64_t, u64)                                        \
    X(TUTTI_FP16, "fp16", "half", NARROW, uint16_t, float, fp16)                                             \
    X(TUTTI_BF16, "bf16", "bfloat16", NARROW, uint16_t, float, bf16)                                         \
    X(TUTTI_FP32, "fp32", "float", FLOAT, float, float, f32)                                                 \
    X(TUTTI_FP64, "fp64", "double", FLOAT, double, double, f64)                                              \
    X(TUTTI_FP8_E4M3, "fp8e4m3", "f8e4m3", NARROW, uint8_t, float, e4m3)                                     \
    X(TUTTI_FP8_E5M2, "fp8e5m2", "f8e5m2", NARROW, uint8_t, float, e5m2)

static inline int tt_dtype_valid(int dtype)
{
    return dtype >= 0 && dtype < TUTTI_NUM_DTYPES;
}

static inline int tt_op_valid(int op)
{
    return op >= 0 && op < TUTTI_NUM_OPS;
}

/* A type from its tutti-perf / nccl-tests name ("float", "fp32", "bf16",
 * "half"...). 0, or -1 for an unknown name. */
int tt_dtype_parse(const char *name, tutti_dtype_t *out);

#endif
