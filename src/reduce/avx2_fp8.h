/* SPDX-License-Identifier: MIT */
/*
 * fp8 loops for AVX2 (included by avx2.c after avx2_op): 8 bytes widened
 * to 8 fp32 lanes, reduced, narrowed as core/fp8.h does; the last n % 8
 * elements go through the scalar tails. The same arithmetic as
 * avx512_fp8.h, with blends for masks.
 */

static inline __m256 avx2_e4m3_widen(const uint8_t *p)
{
    __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
    __m256i em = _mm256_and_si256(b, _mm256_set1_epi32(0x7f));
    __m256i r = _mm256_add_epi32(_mm256_slli_epi32(em, 20), _mm256_set1_epi32(120 << 23));
    __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(em), _mm256_set1_ps(0.001953125f)); /* 2^-9 */
    r = _mm256_blendv_epi8(r, _mm256_castps_si256(sub), _mm256_cmpgt_epi32(_mm256_set1_epi32(8), em));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc00000), _mm256_cmpeq_epi32(em, _mm256_set1_epi32(0x7f)));
    return _mm256_castsi256_ps(_mm256_or_si256(r, sign));
}

static inline __m256 avx2_e5m2_widen(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p)), 8));
}

static inline void avx2_fp8_narrow(uint8_t *p, __m256 v, int mbits, int bias, int max_code, int max_f32,
                                   float scale)
{
    const int drop = 23 - mbits;
    __m256i u = _mm256_castps_si256(v);
    __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
    __m256i r = _mm256_sub_epi32(abs, _mm256_set1_epi32((127 - bias) << 23));
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(r, drop), _mm256_set1_epi32(1));
    r = _mm256_add_epi32(r, _mm256_add_epi32(lsb, _mm256_set1_epi32((1 << (drop - 1)) - 1)));
    r = _mm256_srli_epi32(r, drop);
    /* round, then truncate the now integral value: independent of MXCSR */
    __m256 scaled = _mm256_round_ps(_mm256_mul_ps(_mm256_castsi256_ps(abs), _mm256_set1_ps(scale)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i sub = _mm256_cvttps_epi32(scaled);
    r = _mm256_blendv_epi8(r, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32((128 - bias) << 23), abs));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(max_code),
                           _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(max_f32 - 1)));
    r = _mm256_or_si256(r, sign);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(TT_FP8_NAN),
                           _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000)));
    /* 8 codes of 0..255 in 32-bit lanes to 8 bytes; saturating packs keep them */
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_castsi256_si128(w));
    _mm_storel_epi64((__m128i *)p, bytes);
}

#define AVX2_FP8_BODY(name, WIDEN, mbits, bias, max_code, max_f32, scale, TAIL)                              \
    static inline void name(int op, void *dst, const void *a, const void *b, size_t n)                       \
    {                                                                                                        \
        uint8_t *d = dst;                                                                                    \
        const uint8_t *pa = a, *pb = b;                                                                      \
        size_t i = 0;                                                                                        \
        for (; i + 8 <= n; i += 8)                                                                           \
            avx2_fp8_narrow(d + i, avx2_op(op, WIDEN(pa + i), WIDEN(pb + i)), mbits, bias, max_code,         \
                            max_f32, scale);                                                                 \
        TAIL(op, d + i, pa + i, pb + i, n - i);                                                              \
    }

/* Constants as in tt_f32_to_e4m3 / tt_f32_to_e5m2; the scale is 2^(bias + mbits - 1). */
AVX2_FP8_BODY(avx2_e4m3_body, avx2_e4m3_widen, 3, 7, TT_E4M3_MAX_BITS, 0x43e00000, 512.0f, avx2_e4m3_tail)
AVX2_FP8_BODY(avx2_e5m2_body, avx2_e5m2_widen, 2, 15, TT_E5M2_MAX_BITS, 0x47600000, 65536.0f, avx2_e5m2_tail)
