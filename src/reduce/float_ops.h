/* SPDX-License-Identifier: MIT */
/*
 * Float reductions one element at a time, and their NaN rule, shared by the
 * CPU kernels and (compiled by nvcc) the CUDA kernels, so both give the same
 * bits. The rule: a result that is NaN is always the canonical quiet NaN of
 * its type (positive, only the quiet bit set: 0x7fc00000, 0x7ff8000000000000,
 * and after narrowing 0x7e00 for fp16, 0x7fc0 for bf16). Neither the sign
 * nor the payload of a NaN operand survives, because CPUs and GPUs disagree
 * on both: x86 keeps the first NaN operand's payload and makes Inf - Inf
 * 0xffc00000, Arm makes it 0x7fc00000, NVIDIA GPUs return a canonical NaN of
 * their own (0x7fffffff for fp32), and a compiler may swap the operands of a
 * commutative operation.
 */
#ifndef TT_REDUCE_FLOAT_OPS_H
#define TT_REDUCE_FLOAT_OPS_H

#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "tutti.h"

#define TT_NAN_F32_BITS 0x7fc00000u
#define TT_NAN_F64_BITS 0x7ff8000000000000ull

static inline TT_HD float tt_nan_f32(void)
{
    return tt_f32_from_bits(TT_NAN_F32_BITS);
}

static inline TT_HD double tt_nan_f64(void)
{
    uint64_t u = TT_NAN_F64_BITS;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline TT_HD float tt_canon_f32(float r)
{
    return r != r ? tt_nan_f32() : r;
}

static inline TT_HD double tt_canon_f64(double r)
{
    return r != r ? tt_nan_f64() : r;
}

/* x op y with the rule; min and max are NaN when either input is (a sum or
 * product is NaN exactly when an input is or the operation is invalid, so
 * its result alone tells). avg reduces as sum (the division comes at the
 * end). */
static inline TT_HD float tt_float_op(int op, float x, float y)
{
    switch (op) {
    case TUTTI_PROD: return tt_canon_f32(x * y);
    case TUTTI_MIN: return (x != x) | (y != y) ? tt_nan_f32() : (x < y ? x : y);
    case TUTTI_MAX: return (x != x) | (y != y) ? tt_nan_f32() : (x > y ? x : y);
    default: return tt_canon_f32(x + y);
    }
}

static inline TT_HD double tt_double_op(int op, double x, double y)
{
    switch (op) {
    case TUTTI_PROD: return tt_canon_f64(x * y);
    case TUTTI_MIN: return (x != x) | (y != y) ? tt_nan_f64() : (x < y ? x : y);
    case TUTTI_MAX: return (x != x) | (y != y) ? tt_nan_f64() : (x > y ? x : y);
    default: return tt_canon_f64(x + y);
    }
}

#endif
