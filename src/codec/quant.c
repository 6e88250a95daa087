/* SPDX-License-Identifier: MIT */
/*
 * Per-block scaled quantizers. int8 and int4 scale a block by its largest
 * magnitude (codes -127..127 and -7..7) and round to nearest or
 * stochastically; sign sends one bit per element and the block's mean
 * magnitude, the scale that minimises the error of a sign code.
 */
#include <math.h>
#include <string.h>

#include "codec/codec.h"

static size_t nblocks(const tt_quant_t *q, size_t n)
{
    if (n == 0)
        return 0;
    return q->block ? (n + q->block - 1) / q->block : 1;
}

static size_t code_bytes(const tt_quant_t *q, size_t n)
{
    switch (q->kind) {
    case TUTTI_COMPRESS_INT8: return n;
    case TUTTI_COMPRESS_INT4: return (n + 1) / 2;
    default: return (n + 7) / 8;
    }
}

size_t tt_quant_bytes(const tt_quant_t *q, size_t n)
{
    return nblocks(q, n) * sizeof(float) + code_bytes(q, n);
}

/* The hot loops, one per kind and direction, written so the compiler can
 * vectorise them (no calls, no branches on the kind inside); on x86 they
 * are also built for AVX2 and picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
/* (Not under ThreadSanitizer: it instruments the clones' resolver, which the
 * loader runs before the sanitizer's runtime exists.) */
#define TT_KERNEL __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define TT_KERNEL
#endif

/* Element i of what is being encoded: g + e (e may be NULL). */
#define TT_X(g, e, i) ((e) ? (g)[i] + (e)[i] : (g)[i])

TT_KERNEL static float block_max_abs(const float *g, const float *e, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float x = TT_X(g, e, i), a = x < 0 ? -x : x;
        m = a > m ? a : m;
    }
    return m;
}

TT_KERNEL static double block_sum_abs(const float *g, const float *e, size_t n)
{
    /* eight float partial sums, combined in double: vectorises, stays accurate */
    float part[8] = {0};
    double sum = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; k++) {
            float x = TT_X(g, e, i + (size_t)k);
            part[k] += x < 0 ? -x : x;
        }
        if ((i & 4095) == 4088) { /* every 4096 elements, fold the partial sums */
            for (int k = 0; k < 8; k++) {
                sum += part[k];
                part[k] = 0;
            }
        }
    }
    for (int k = 0; k < 8; k++)
        sum += part[k];
    for (; i < n; i++) {
        float x = TT_X(g, e, i);
        sum += x < 0 ? -x : x;
    }
    return sum;
}

/* The mean magnitude, from float lanes (block_sum_abs) or, where they
 * overflowed, in double element by element as the GPU takes it too. */
static float sign_scale(const float *g, const float *e, size_t n)
{
    double sum = block_sum_abs(g, e, n);
    if (!isfinite(sum))
        sum = tt_sign_sum_exact(g, e, n);
    return tt_codec_canon((float)(sum / (double)n));
}

/* Codes in -top..top (127 for int8, 7 for int4) of x / scale, to nearest or,
 * given uniform numbers u, stochastically. */
TT_KERNEL static void encode_codes(const float *g, float *e, size_t n, float scale, float top, const float *u,
                                   int8_t *codes)
{
    float inv = scale > 0 ? 1.0f / scale : 0.0f;
    for (size_t i = 0; i < n; i++) {
        float x = TT_X(g, e, i), t = x * inv;
        float r = tt_quant_clamp(u ? tt_round_even(t + u[i] - 0.5f) : tt_round_even(t), top);
        codes[i] = (int8_t)r;
        if (e)
            e[i] = tt_codec_canon(x - r * scale);
    }
}

TT_KERNEL static void decode_int8(const int8_t *codes, size_t n, float scale, float *out, int add)
{
    if (add)
        for (size_t i = 0; i < n; i++)
            out[i] = tt_codec_canon(out[i] + (float)codes[i] * scale);
    else
        for (size_t i = 0; i < n; i++)
            out[i] = tt_codec_canon((float)codes[i] * scale);
}

static void encode_sign_portable(const float *g, float *e, size_t n, float scale, unsigned char *bits)
{
    for (size_t i = 0; i < n; i += 8) {
        unsigned v = 0;
        for (size_t k = 0; k < 8 && i + k < n; k++) {
            float x = TT_X(g, e, i + k);
            v |= (unsigned)(x >= 0) << k;
            if (e)
                e[i + k] = tt_codec_canon(x - (x >= 0 ? scale : -scale));
        }
        bits[i / 8] = (unsigned char)v;
    }
}

static void decode_sign_portable(const unsigned char *bits, size_t n, float scale, float *out, int add)
{
    for (size_t i = 0; i < n; i++) {
        float v = bits[i / 8] >> (i % 8) & 1 ? scale : -scale;
        out[i] = tt_codec_canon(add ? out[i] + v : v);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* tt_codec_canon, eight lanes at a time. */
__attribute__((target("avx2"))) static inline __m256 canon8(__m256 v)
{
    __m256 nan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
    return _mm256_blendv_ps(v, nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

/* Eight signs a byte: a compare and a movemask; back: a byte's bits
 * spread over eight lanes and a blend of +scale and -scale. */
__attribute__((target("avx2"))) static void encode_sign_avx2(const float *g, float *e, size_t n, float scale,
                                                             unsigned char *bits)
{
    __m256 zero = _mm256_setzero_ps(), pos = _mm256_set1_ps(scale), neg = _mm256_set1_ps(-scale);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(g + i);
        if (e)
            v = _mm256_add_ps(v, _mm256_loadu_ps(e + i));
        __m256 ge = _mm256_cmp_ps(v, zero, _CMP_GE_OQ);
        bits[i / 8] = (unsigned char)_mm256_movemask_ps(ge);
        if (e)
            _mm256_storeu_ps(e + i, canon8(_mm256_sub_ps(v, _mm256_blendv_ps(neg, pos, ge))));
    }
    if (i < n)
        encode_sign_portable(g + i, e ? e + i : NULL, n - i, scale, bits + i / 8);
}

__attribute__((target("avx2"))) static void decode_sign_avx2(const unsigned char *bits, size_t n, float scale,
                                                             float *out, int add)
{
    __m256 pos = _mm256_set1_ps(scale), neg = _mm256_set1_ps(-scale);
    __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i b = _mm256_and_si256(_mm256_set1_epi32(bits[i / 8]), lane_bit);
        __m256 v = _mm256_blendv_ps(neg, pos, _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, lane_bit)));
        if (add)
            v = _mm256_add_ps(v, _mm256_loadu_ps(out + i));
        _mm256_storeu_ps(out + i, canon8(v));
    }
    if (i < n)
        decode_sign_portable(bits + i / 8, n - i, scale, out + i, add);
}

static int have_avx2(void)
{
    static int known = -1;
    if (known < 0)
        known = __builtin_cpu_supports("avx2") ? 1 : 0;
    return known;
}
#endif

/* Sign runs that start on a byte boundary. */
static void encode_sign(const float *g, float *e, size_t n, float scale, unsigned char *bits)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2()) {
        encode_sign_avx2(g, e, n, scale, bits);
        return;
    }
#endif
    encode_sign_portable(g, e, n, scale, bits);
}

static void decode_sign(const unsigned char *bits, size_t n, float scale, float *out, int add)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2()) {
        decode_sign_avx2(bits, n, scale, out, add);
        return;
    }
#endif
    decode_sign_portable(bits, n, scale, out, add);
}

/* int4: two codes a byte, low nibble first; done through int8 codes. */
static void pack_int4(const int8_t *c, size_t n, unsigned char *out)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        out[i / 2] = (unsigned char)((c[i] & 0xf) | (c[i + 1] & 0xf) << 4);
    if (n % 2)
        out[n / 2] = (unsigned char)(c[n - 1] & 0xf);
}

static void unpack_int4(const unsigned char *in, size_t n, int8_t *c)
{
    for (size_t i = 0; i < n; i++) {
        int nib = in[i / 2] >> (4 * (i % 2)) & 0xf;
        c[i] = (int8_t)(nib >= 8 ? nib - 16 : nib);
    }
}

enum { TT_CHUNK = 4096 }; /* elements converted at a time (int4 codes, random numbers) */

void tt_quant_encode(const tt_quant_t *q, const float *g, float *e, size_t n, uint64_t stream,
                     unsigned char *out)
{
    size_t nb = nblocks(q, n), bsize = q->block ? q->block : n;
    unsigned char *codes = out + nb * sizeof(float);
    int stochastic = q->rounding == TUTTI_ROUND_STOCHASTIC && q->kind != TUTTI_COMPRESS_SIGN;
    int8_t tmp[TT_CHUNK];
    float u[TT_CHUNK];
    memset(codes, 0, code_bytes(q, n)); /* blocks that start inside a byte fill it bit by bit */
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * bsize, hi = lo + bsize < n ? lo + bsize : n;
        const float *gb = g + lo;
        float *eb = e ? e + lo : NULL;
        float scale = q->kind == TUTTI_COMPRESS_SIGN
                          ? sign_scale(gb, eb, hi - lo)
                          : tt_quant_scale(block_max_abs(gb, eb, hi - lo), (float)tt_quant_levels(q->kind));
        memcpy(out + b * sizeof(float), &scale, sizeof scale); /* the buffer need not be aligned */
        if (q->kind == TUTTI_COMPRESS_SIGN && lo % 8 == 0) {
            encode_sign(gb, eb, hi - lo, scale, codes + lo / 8);
            continue;
        }
        if (q->kind == TUTTI_COMPRESS_SIGN) { /* a block that starts inside a byte */
            for (size_t i = lo; i < hi; i++) {
                float x = TT_X(g, e, i);
                codes[i / 8] =
                    (unsigned char)((codes[i / 8] & ~(1u << (i % 8))) | (unsigned)(x >= 0) << (i % 8));
                if (e)
                    e[i] = tt_codec_canon(x - (x >= 0 ? scale : -scale));
            }
            continue;
        }
        for (size_t at = lo; at < hi; at += TT_CHUNK) {
            size_t m = hi - at < TT_CHUNK ? hi - at : TT_CHUNK;
            for (size_t i = 0; stochastic && i < m; i++)
                u[i] = tt_uniform01(q->seed, stream, at + i);
            float *ea = e ? e + at : NULL;
            float top = (float)tt_quant_levels(q->kind);
            if (q->kind == TUTTI_COMPRESS_INT8) {
                encode_codes(g + at, ea, m, scale, top, stochastic ? u : NULL, (int8_t *)codes + at);
                continue;
            }
            encode_codes(g + at, ea, m, scale, top, stochastic ? u : NULL, tmp);
            if (at % 2 == 0)
                pack_int4(tmp, m, codes + at / 2);
            else
                for (size_t i = 0; i < m; i++) {
                    size_t k = at + i;
                    codes[k / 2] = (unsigned char)((codes[k / 2] & ~(0xfu << (4 * (k % 2)))) |
                                                   (unsigned)(tmp[i] & 0xf) << (4 * (k % 2)));
                }
        }
    }
}

void tt_quant_decode(const tt_quant_t *q, const unsigned char *in, size_t n, float *out, int add)
{
    size_t nb = nblocks(q, n), bsize = q->block ? q->block : n;
    const unsigned char *codes = in + nb * sizeof(float);
    int8_t tmp[TT_CHUNK];
    for (size_t b = 0; b < nb; b++) {
        float scale;
        memcpy(&scale, in + b * sizeof(float), sizeof scale);
        size_t lo = b * bsize, hi = lo + bsize < n ? lo + bsize : n;
        if (q->kind == TUTTI_COMPRESS_INT8) {
            decode_int8((const int8_t *)codes + lo, hi - lo, scale, out + lo, add);
        } else if (q->kind == TUTTI_COMPRESS_SIGN && lo % 8 == 0) {
            decode_sign(codes + lo / 8, hi - lo, scale, out + lo, add);
        } else if (q->kind == TUTTI_COMPRESS_SIGN) {
            for (size_t i = lo; i < hi; i++) {
                float v = codes[i / 8] >> (i % 8) & 1 ? scale : -scale;
                out[i] = tt_codec_canon(add ? out[i] + v : v);
            }
        } else {
            for (size_t at = lo; at < hi; at += TT_CHUNK) {
                size_t m = hi - at < TT_CHUNK ? hi - at : TT_CHUNK;
                if (at % 2 == 0)
                    unpack_int4(codes + at / 2, m, tmp);
                else
                    for (size_t i = 0; i < m; i++) {
                        int nib = codes[(at + i) / 2] >> (4 * ((at + i) % 2)) & 0xf;
                        tmp[i] = (int8_t)(nib >= 8 ? nib - 16 : nib);
                    }
                decode_int8(tmp, m, scale, out + at, add);
            }
        }
    }
}
