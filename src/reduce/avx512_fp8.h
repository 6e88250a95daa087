/* SPDX-License-Identifier: MIT */
/*
 * fp8 loops for AVX-512, shared by avx512.c and avx512bf16.c (after
 * avx512_half.h, whose avx512_op they use): 16 bytes widened to 16 fp32
 * lanes, reduced, narrowed with the rounding and saturation of core/fp8.h.
 */

/* e4m3 to fp32 as tt_e4m3_to_f32: normals by moving the fields, the 7
 * subnormals converted from integers (exact; no fp32 subnormal involved). */
static inline __m512 avx512_e4m3_widen(__m128i bytes)
{
    __m512i b = _mm512_cvtepu8_epi32(bytes);
    __m512i sign = _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x80)), 24);
    __m512i em = _mm512_and_si512(b, _mm512_set1_epi32(0x7f));
    __m512i r = _mm512_add_epi32(_mm512_slli_epi32(em, 20), _mm512_set1_epi32(120 << 23));
    __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(em), _mm512_set1_ps(0.001953125f)); /* 2^-9 */
    r = _mm512_mask_mov_epi32(r, _mm512_cmplt_epi32_mask(em, _mm512_set1_epi32(8)), _mm512_castps_si512(sub));
    r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(em, _mm512_set1_epi32(0x7f)),
                              _mm512_set1_epi32(0x7fc00000));
    return _mm512_castsi512_ps(_mm512_or_si512(r, sign));
}

/* e5m2 is the top byte of an fp16: the F16C conversion widens it exactly. */
static inline __m512 avx512_e5m2_widen(__m128i bytes)
{
    return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8));
}

/*
 * fp32 to fp8 as tt_f32_to_fp8: normals rounded with integer arithmetic,
 * subnormals by scaling to units of the smallest subnormal and converting
 * to an integer with round-to-nearest-even (the scaling is exact).
 */
static inline __m128i avx512_fp8_narrow(__m512 v, int mbits, int bias, int max_code, int max_f32, float scale)
{
    const int drop = 23 - mbits;
    __m512i u = _mm512_castps_si512(v);
    __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
    __m512i r = _mm512_sub_epi32(abs, _mm512_set1_epi32((127 - bias) << 23));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(r, drop), _mm512_set1_epi32(1));
    r = _mm512_add_epi32(r, _mm512_add_epi32(lsb, _mm512_set1_epi32((1 << (drop - 1)) - 1)));
    r = _mm512_srli_epi32(r, drop);
    __m512 scaled = _mm512_mul_ps(_mm512_castsi512_ps(abs), _mm512_set1_ps(scale));
    __m512i sub = _mm512_cvt_roundps_epi32(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_mask_mov_epi32(r, _mm512_cmplt_epi32_mask(abs, _mm512_set1_epi32((128 - bias) << 23)), sub);
    r = _mm512_mask_mov_epi32(r, _mm512_cmpge_epi32_mask(abs, _mm512_set1_epi32(max_f32)),
                              _mm512_set1_epi32(max_code));
    r = _mm512_or_si512(r, sign);
    r = _mm512_mask_mov_epi32(r, _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000)),
                              _mm512_set1_epi32(TT_FP8_NAN));
    return _mm512_cvtepi32_epi8(r);
}

/* Constants as in tt_f32_to_e4m3 / tt_f32_to_e5m2; the scale is 2^(bias + mbits - 1). */
#define AVX512_E4M3_NARROW(v) avx512_fp8_narrow(v, 3, 7, TT_E4M3_MAX_BITS, 0x43e00000, 512.0f)
#define AVX512_E5M2_NARROW(v) avx512_fp8_narrow(v, 2, 15, TT_E5M2_MAX_BITS, 0x47600000, 65536.0f)

#define AVX512_FP8_BODY(name, WIDEN, NARROW)                                                                 \
    static inline void name(int op, void *dst, const void *a, const void *b, size_t n)                       \
    {                                                                                                        \
        uint8_t *d = dst;                                                                                    \
        const uint8_t *pa = a, *pb = b;                                                                      \
        for (size_t i = 0; i < n; i += 16) {                                                                 \
            __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);               \
            __m512 x = WIDEN(_mm_maskz_loadu_epi8(m, pa + i));                                               \
            __m512 y = WIDEN(_mm_maskz_loadu_epi8(m, pb + i));                                               \
            _mm_mask_storeu_epi8(d + i, m, NARROW(avx512_op(op, x, y)));                                     \
        }                                                                                                    \
    }

AVX512_FP8_BODY(avx512_e4m3_body, avx512_e4m3_widen, AVX512_E4M3_NARROW)
AVX512_FP8_BODY(avx512_e5m2_body, avx512_e5m2_widen, AVX512_E5M2_NARROW)
