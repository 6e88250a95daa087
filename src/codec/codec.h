/* SPDX-License-Identifier: MIT */
/*
 * Compression kernels on the CPU: per-block scaled quantizers (int8, int4,
 * scaled sign) and top-k selection. Plain loops over fp32 that the compiler
 * vectorises; the CUDA kernels follow the same arithmetic element by
 * element, and the same counter-based random numbers.
 */
#ifndef TT_CODEC_H
#define TT_CODEC_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/half.h"
#include "core/hd.h"
#include "tutti.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    tutti_compress_kind_t kind; /* INT8, INT4 or SIGN */
    size_t block;               /* elements per scale; 0: one scale for the whole run */
    tutti_rounding_t rounding;
    uint64_t seed;
} tt_quant_t;

/* Bytes of the encoding of n values: the scales (fp32, one per block), then
 * the codes (1 byte, half a byte or one bit each). */
size_t tt_quant_bytes(const tt_quant_t *q, size_t n);
/*
 * Encodes x = g + e (g alone when e is NULL), n values, into out
 * (tt_quant_bytes(q, n) bytes), and replaces e with x - decode(out): what
 * the encoding dropped. One pass over g and e for the scales, one for the
 * codes. stream picks the random numbers of stochastic rounding (element i
 * uses number i of the stream, rounding x / scale + u - 1/2 to nearest), so
 * results do not depend on how the work is split.
 */
void tt_quant_encode(const tt_quant_t *q, const float *g, float *e, size_t n, uint64_t stream,
                     unsigned char *out);
/* out[0..n) = the values in; with add, out += them instead. */
void tt_quant_decode(const tt_quant_t *q, const unsigned char *in, size_t n, float *out, int add);

/* A uniform number in [0, 1) for (seed, stream, i): splitmix64 of the
 * three, top 24 bits as a fraction; the same on CPU and GPU. */
static inline TT_HD float tt_uniform01(uint64_t seed, uint64_t stream, uint64_t i)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1) + 0xD1B54A32D192ED03ull * i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* Largest code of a quantizer: 127 (int8) or 7 (int4). */
static inline TT_HD int tt_quant_levels(tutti_compress_kind_t kind)
{
    return kind == TUTTI_COMPRESS_INT8 ? 127 : 7;
}

/*
 * Finite values stay finite inside the codec, and what is not finite has
 * the same bits on the CPU and the GPU. A NaN can still arise where the
 * input holds one, or where g + e or the server's sum overflows; the codec
 * stores it as the canonical NaN of the reductions' NaN rule
 * (reduce/float_ops.h), since CPUs and GPUs make NaNs of different bits.
 */
static inline TT_HD float tt_codec_canon(float x)
{
    return x != x ? tt_f32_from_bits(0x7fc00000u) : x;
}

/*
 * int8/int4: a block's scale from its largest magnitude, top the largest
 * code. 0 below FLT_MIN, where the reciprocal the codes are computed with
 * would overflow (the block is sent as zeros and stays in the error); one
 * ulp lower where top times it would round to infinity, so that every code
 * decodes to a finite value.
 */
static inline TT_HD float tt_quant_scale(float max_abs, float top)
{
    float s = max_abs / top;
    if (s < FLT_MIN)
        return 0.0f;
    while (s * top > FLT_MAX && s <= FLT_MAX)
        s = tt_f32_from_bits(tt_f32_bits(s) - 1);
    return s;
}

/* A rounded x / scale as a code in -top..top; a NaN (from a NaN or an
 * infinite x) is code 0. */
static inline TT_HD float tt_quant_clamp(float r, float top)
{
    return r > top ? top : r < -top ? -top : r == r ? r : 0.0f;
}

/* The sign scale's sum of |g + e| once more, where its float lanes
 * overflowed (magnitudes near FLT_MAX): in double, element by element, on
 * the CPU and the GPU alike. */
static inline TT_HD double tt_sign_sum_exact(const float *g, const float *e, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += fabsf(e ? g[i] + e[i] : g[i]);
    return sum;
}

/* Rounds to nearest even for |t| < 2^22 without a library call (the GPU
 * kernels use the same two additions, never fused). */
static inline TT_HD float tt_round_even(float t)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    return (t + magic) - magic;
}

/* The sign scale's partial sums on the GPU: tiles of 4096 elements (512
 * groups of eight lanes) per block of bsize, and at least one, so that a
 * block shorter than one group (n < 8 with the whole vector as its block)
 * still owns a tile: its threads divide by this. */
static inline TT_HD size_t tt_sign_tiles_per_block(size_t bsize)
{
    size_t tiles = (bsize / 8 + 511) / 512;
    return tiles ? tiles : 1;
}

/* One element a top-k call sends: its index and its value (g + e). */
typedef struct {
    uint32_t index;
    float value;
} tt_pair_t;

/* The indices, ascending, of the k largest |x[i]| (ties to the lower index).
 * Returns k (n if k > n; 0 when out of memory). */
size_t tt_topk_exact(const float *x, size_t n, size_t k, uint32_t *idx);
/*
 * DGC-style: a threshold from a random sample of |x| that about k elements
 * pass, then the elements that pass (capped by an exact pass among them at
 * 2k). Returns how many were selected, ascending in idx (room for 2k).
 */
size_t tt_topk_sampled(const float *x, size_t n, size_t k, uint64_t seed, uint64_t stream, uint32_t *idx,
                       float *mag);

#ifdef __cplusplus
}
#endif

#endif
