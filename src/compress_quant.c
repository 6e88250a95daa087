/* SPDX-License-Identifier: MIT */
/*
 * Per-block scaled quantizers. int8 and int4 scale a block by its largest
 * magnitude (codes -127..127 and -7..7) and round to nearest or
 * stochastically; sign sends one bit per element and the block's mean
 * magnitude, the scale that minimises the error of a sign code.
 */
#include <math.h>
#include <string.h>

#include "compress.h"

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

float tt_uniform01(uint64_t seed, uint64_t stream, uint64_t i)
{
    /* splitmix64 of the three, top 24 bits as a fraction */
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1) + 0xD1B54A32D192ED03ull * i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

static int levels(tutti_compress_kind_t kind)
{
    return kind == TUTTI_COMPRESS_INT8 ? 127 : 7;
}

/* The code of v / scale, clamped to the code range. */
static int quantize(float v, float inv_scale, int top, float u, int stochastic)
{
    float t = v * inv_scale;
    float r = stochastic ? floorf(t + u) : nearbyintf(t);
    return r > (float)top ? top : r < (float)-top ? -top : (int)r;
}

static void put_code(const tt_quant_t *q, unsigned char *codes, size_t i, int c)
{
    if (q->kind == TUTTI_COMPRESS_INT8)
        codes[i] = (unsigned char)(int8_t)c;
    else if (q->kind == TUTTI_COMPRESS_INT4)
        codes[i / 2] |= (unsigned char)((c & 0xf) << (4 * (i % 2)));
    else if (c > 0)
        codes[i / 8] |= (unsigned char)(1u << (i % 8));
}

static int get_code(const tt_quant_t *q, const unsigned char *codes, size_t i)
{
    if (q->kind == TUTTI_COMPRESS_INT8)
        return (int8_t)codes[i];
    if (q->kind == TUTTI_COMPRESS_INT4) {
        int nib = codes[i / 2] >> (4 * (i % 2)) & 0xf;
        return nib >= 8 ? nib - 16 : nib;
    }
    return codes[i / 8] >> (i % 8) & 1 ? 1 : -1;
}

void tt_quant_encode(const tt_quant_t *q, const float *x, size_t n, uint64_t stream, unsigned char *out,
                     float *lost)
{
    size_t nb = nblocks(q, n), bsize = q->block ? q->block : n;
    unsigned char *codes = out + nb * sizeof(float);
    memset(codes, 0, code_bytes(q, n));
    int stochastic = q->rounding == TUTTI_ROUND_STOCHASTIC && q->kind != TUTTI_COMPRESS_SIGN;
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * bsize, hi = lo + bsize < n ? lo + bsize : n;
        float scale = 0;
        if (q->kind == TUTTI_COMPRESS_SIGN) {
            double sum = 0;
            for (size_t i = lo; i < hi; i++)
                sum += fabsf(x[i]);
            scale = (float)(sum / (double)(hi - lo));
        } else {
            float max = 0;
            for (size_t i = lo; i < hi; i++)
                max = fabsf(x[i]) > max ? fabsf(x[i]) : max;
            scale = max / (float)levels(q->kind);
        }
        memcpy(out + b * sizeof(float), &scale, sizeof scale); /* the buffer need not be aligned */
        float inv = scale > 0 ? 1.0f / scale : 0.0f;
        for (size_t i = lo; i < hi; i++) {
            int c = q->kind == TUTTI_COMPRESS_SIGN
                        ? (x[i] >= 0 ? 1 : -1)
                        : quantize(x[i], inv, levels(q->kind), stochastic ? tt_uniform01(q->seed, stream, i) : 0,
                                   stochastic);
            put_code(q, codes, i, c);
            if (lost)
                lost[i] = x[i] - (float)c * scale;
        }
    }
}

void tt_quant_decode(const tt_quant_t *q, const unsigned char *in, size_t n, float *out, int add)
{
    size_t nb = nblocks(q, n), bsize = q->block ? q->block : n;
    const unsigned char *codes = in + nb * sizeof(float);
    for (size_t b = 0; b < nb; b++) {
        float scale;
        memcpy(&scale, in + b * sizeof(float), sizeof scale);
        size_t lo = b * bsize, hi = lo + bsize < n ? lo + bsize : n;
        for (size_t i = lo; i < hi; i++) {
            float v = (float)get_code(q, codes, i) * scale;
            out[i] = add ? out[i] + v : v;
        }
    }
}
