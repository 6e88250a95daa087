/* SPDX-License-Identifier: MIT */
/*
 * fp16/bf16 loops for AVX-512, shared by reduce_avx512.c and
 * reduce_avx512bf16.c; TT_BF16_NARROW (defined by the includer) turns 16
 * fp32 lanes into 16 bf16 values.
 */
/* x op y in 16 lanes with the NaN rule of float_ops.h: min/max_ps would
 * drop a NaN in the first operand, so unordered lanes take the canonical NaN. */
static inline __m512 avx512_op(int op, __m512 x, __m512 y)
{
    __m512 r;
    switch (op) {
    case TUTTI_MIN: r = _mm512_min_ps(x, y); break;
    case TUTTI_MAX: r = _mm512_max_ps(x, y); break;
    case TUTTI_PROD: r = _mm512_mul_ps(x, y); break;
    default: r = _mm512_add_ps(x, y); break;
    }
    /* A sum or product is NaN exactly when its result is. */
    __mmask16 nan = op == TUTTI_MIN || op == TUTTI_MAX ? _mm512_cmp_ps_mask(x, y, _CMP_UNORD_Q)
                                                       : _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(r, nan, _mm512_castsi512_ps(_mm512_set1_epi32((int)TT_NAN_F32_BITS)));
}

/* Round to nearest even with integer arithmetic; exact for subnormals,
 * which the hardware bf16 conversion flushes to zero. v comes from
 * avx512_op, so a NaN lane is the canonical NaN, which this rounding
 * narrows to 0x7fc0, the canonical bf16 NaN: no NaN case of its own. */
static inline __m256i avx512_bf16_round(__m512 v)
{
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    return _mm512_cvtepi32_epi16(r);
}

static inline void avx512_fp16_body(int op, void *dst, const void *a, const void *b, size_t n)
{
    tt_u16u_t *d = dst;
    const tt_u16u_t *pa = a, *pb = b;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
        __m512 x = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, pa + i));
        __m512 y = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, pb + i));
        __m256i r = _mm512_cvtps_ph(avx512_op(op, x, y), _MM_FROUND_TO_NEAREST_INT);
        _mm256_mask_storeu_epi16(d + i, m, r);
    }
}

static inline void avx512_bf16_body(int op, void *dst, const void *a, const void *b, size_t n)
{
    tt_u16u_t *d = dst;
    const tt_u16u_t *pa = a, *pb = b;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
        __m512i wa = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, pa + i));
        __m512i wb = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, pb + i));
        __m512 x = _mm512_castsi512_ps(_mm512_slli_epi32(wa, 16));
        __m512 y = _mm512_castsi512_ps(_mm512_slli_epi32(wb, 16));
        _mm256_mask_storeu_epi16(d + i, m, TT_BF16_NARROW(avx512_op(op, x, y)));
    }
}
