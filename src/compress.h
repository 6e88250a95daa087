/* SPDX-License-Identifier: MIT */
/*
 * Compression kernels on the CPU: per-block scaled quantizers (int8, int4,
 * scaled sign) and top-k selection. Plain loops over fp32 that the compiler
 * vectorises; the CUDA kernels follow the same arithmetic element by
 * element, and the same counter-based random numbers.
 */
#ifndef TT_COMPRESS_H
#define TT_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

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

/* A uniform number in [0, 1) for (seed, stream, i): the same on CPU and GPU. */
float tt_uniform01(uint64_t seed, uint64_t stream, uint64_t i);

/* The indices, ascending, of the k largest |x[i]| (ties to the lower index).
 * mag is scratch of n floats. Returns k (n if k > n). */
size_t tt_topk_exact(const float *x, size_t n, size_t k, uint32_t *idx, float *mag);
/*
 * DGC-style: a threshold from a random sample of |x| that about k elements
 * pass, then the elements that pass (capped by an exact pass among them at
 * 2k). Returns how many were selected, ascending in idx (room for 2k).
 */
size_t tt_topk_sampled(const float *x, size_t n, size_t k, uint64_t seed, uint64_t stream, uint32_t *idx,
                       float *mag);

#endif
