/* SPDX-License-Identifier: MIT */
/*
 * Scalar fp8 conversions (OCP FP8: e4m3 as CUDA's __nv_fp8_e4m3, e5m2 as
 * __nv_fp8_e5m2), the reference every vector and GPU kernel is tested
 * against. Narrowing rounds to nearest even and saturates as CUDA's
 * __NV_SATFINITE does (and so NCCL's fp8 reductions): anything beyond the
 * largest finite value, infinities included, becomes that value with its
 * sign. Every NaN becomes 0x7f, the NaN CUDA's conversions produce.
 */
#ifndef TT_FP8_H
#define TT_FP8_H

#include <stdint.h>

#include "core/half.h" /* tt_f32_bits, tt_fp16_to_f32; TT_HD */

#define TT_FP8_NAN 0x7fu
#define TT_E4M3_MAX_BITS 0x7eu /* 448 */
#define TT_E5M2_MAX_BITS 0x7bu /* 57344 */

/* e4m3 ("fn"): bias 7, 3 mantissa bits, no infinities; 0x7f and 0xff are NaN. */
static inline TT_HD float tt_e4m3_to_f32(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t em = b & 0x7fu;
    if (em == 0x7fu)
        return tt_f32_from_bits(sign | 0x7fc00000u);
    if (em >= 0x08u) /* normal: move the fields and rebias 7 -> 127 */
        return tt_f32_from_bits(sign | ((em << 20) + (120u << 23)));
    /* zero or subnormal: em * 2^-9, exact; no fp32 subnormal on the way, so
     * a denormals-are-zero mode cannot change it */
    return tt_f32_from_bits(sign | tt_f32_bits((float)em * 0.001953125f));
}

/* e5m2: the top byte of an IEEE binary16, infinities and NaNs included. */
static inline TT_HD float tt_e5m2_to_f32(uint8_t b)
{
    return tt_fp16_to_f32((uint16_t)((uint16_t)b << 8));
}

/*
 * Rounds f to an fp8 format with mbits mantissa bits and exponent bias
 * bias, whose largest finite value has the bits max_code and is the fp32
 * with bits max_f32. Both formats below inline this with constants.
 */
static inline TT_HD uint8_t tt_f32_to_fp8(float f, uint32_t mbits, uint32_t bias, uint8_t max_code,
                                          uint32_t max_f32)
{
    uint32_t u = tt_f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u)
        return TT_FP8_NAN;
    if (abs >= max_f32) /* saturate: the largest finite value, Inf too */
        return sign | max_code;
    if (abs >= (128u - bias) << 23) { /* a normal fp8 */
        uint32_t drop = 23u - mbits;
        uint32_t r = abs - ((127u - bias) << 23);
        /* Half an fp8 ulp less one, plus the lowest kept bit: ties go to even.
         * Below max_f32 the carry reaches max_code at most. */
        r += (1u << (drop - 1u)) - 1u + ((r >> drop) & 1u);
        return sign | (uint8_t)(r >> drop);
    }
    if (abs <= (127u - bias - mbits) << 23) /* at most half the smallest subnormal: zero */
        return sign;
    /* Subnormal fp8: the full 24-bit fp32 significand shifted into units of
     * the smallest subnormal, rounded to even; a carry into the implicit bit
     * gives the smallest normal, which is the right answer. */
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 151u - bias - mbits - exp;
    uint32_t kept = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    return sign | (uint8_t)kept;
}

/* 448 is 0x43e00000, 57344 is 0x47600000 as fp32. */
static inline TT_HD uint8_t tt_f32_to_e4m3(float f)
{
    return tt_f32_to_fp8(f, 3u, 7u, TT_E4M3_MAX_BITS, 0x43e00000u);
}

static inline TT_HD uint8_t tt_f32_to_e5m2(float f)
{
    return tt_f32_to_fp8(f, 2u, 15u, TT_E5M2_MAX_BITS, 0x47600000u);
}

#endif
