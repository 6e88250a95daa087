/* SPDX-License-Identifier: MIT */
/*
 * Scalar fp16 (IEEE binary16) and bf16 conversions: the reference every
 * vector kernel is tested against. Narrowing rounds to nearest even, keeps
 * subnormals, turns overflow into Inf and every NaN into a quiet NaN that
 * keeps the sign and the top payload bits.
 */
#ifndef TT_HALF_H
#define TT_HALF_H

#include <stdint.h>
#include <string.h>

#include "core/hd.h" /* the same conversions run in the CUDA kernels */

static inline TT_HD uint32_t tt_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline TT_HD float tt_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline TT_HD float tt_bf16_to_f32(uint16_t h)
{
    return tt_f32_from_bits((uint32_t)h << 16);
}

static inline TT_HD uint16_t tt_f32_to_bf16(float f)
{
    uint32_t u = tt_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Adding 0x7fff plus the lowest kept bit rounds half to even; a carry
     * into the exponent is the correct rounding up (to Inf at the top). */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline TT_HD float tt_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) /* Inf, or NaN made quiet as an IEEE conversion does */
        return tt_f32_from_bits(sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u));
    if (exp != 0)
        return tt_f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0)
        return tt_f32_from_bits(sign);
    /* Subnormal: normalise the mantissa into an fp32 normal. */
    int shift = 0;
    while (!(mant & 0x400u)) {
        mant <<= 1;
        shift++;
    }
    return tt_f32_from_bits(sign | ((uint32_t)(113 - shift) << 23) | ((mant & 0x3ffu) << 13));
}

static inline TT_HD uint16_t tt_f32_to_fp16(float f)
{
    uint32_t u = tt_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* NaN: quiet it, keep the top payload bits */
        return sign | 0x7e00u | (uint16_t)((abs >> 13) & 0x3ffu);
    if (abs >= 0x477ff000u) /* rounds to a value >= 65520: Inf */
        return sign | 0x7c00u;
    if (abs >= 0x38800000u) { /* normal fp16 result */
        uint32_t r = abs - (112u << 23);
        r += 0xfffu + ((r >> 13) & 1u);
        return sign | (uint16_t)(r >> 13);
    }
    if (abs < 0x33000000u) /* below half the smallest subnormal: zero */
        return sign;
    /* Subnormal fp16 result: shift the full 24-bit mantissa, round to even. */
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; /* 14..24 */
    uint32_t kept = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    return sign | (uint16_t)kept;
}

#endif
