/* SPDX-License-Identifier: MIT */
/* AVX2 + F16C kernels: 8 fp32 lanes; fp16/bf16/fp8 widened to fp32 in registers. */
#pragma GCC target("avx2,f16c,fma")
#pragma GCC optimize("O3")
#include <immintrin.h>

#include "reduce/reduce.h"

#define TT_KERNEL_PREFIX avx2_
#include "reduce/loops.h"

/* x op y in 8 lanes with the NaN rule of float_ops.h: min/max_ps would drop a
 * NaN in the first operand, so unordered lanes take the canonical NaN. */
static inline __m256 avx2_op(int op, __m256 x, __m256 y)
{
    __m256 r, nan;
    switch (op) {
    case TUTTI_MIN: r = _mm256_min_ps(x, y); break;
    case TUTTI_MAX: r = _mm256_max_ps(x, y); break;
    case TUTTI_PROD: r = _mm256_mul_ps(x, y); break;
    default: r = _mm256_add_ps(x, y); break;
    }
    /* A sum or product is NaN exactly when its result is. */
    nan = op == TUTTI_MIN || op == TUTTI_MAX ? _mm256_cmp_ps(x, y, _CMP_UNORD_Q)
                                             : _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
    return _mm256_blendv_ps(r, _mm256_castsi256_ps(_mm256_set1_epi32((int)TT_NAN_F32_BITS)), nan);
}

static inline __m256 avx2_load_bf16(const tt_u16u_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* Round to nearest even as tt_f32_to_bf16 does. v comes from avx2_op, so
 * a NaN lane is the canonical NaN, which this rounding narrows to 0x7fc0,
 * the canonical bf16 NaN, as tt_f32_to_bf16 does: no NaN case of its own. */
static inline void avx2_store_bf16(tt_u16u_t *p, __m256 v)
{
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(packed));
}

static inline void avx2_fp16_body(int op, void *dst, const void *a, const void *b, size_t n)
{
    tt_u16u_t *d = dst;
    const tt_u16u_t *pa = a, *pb = b;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(pa + i)));
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(pb + i)));
        __m128i r = _mm256_cvtps_ph(avx2_op(op, x, y), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(d + i), r);
    }
    avx2_fp16_tail(op, d + i, pa + i, pb + i, n - i);
}

static inline void avx2_bf16_body(int op, void *dst, const void *a, const void *b, size_t n)
{
    tt_u16u_t *d = dst;
    const tt_u16u_t *pa = a, *pb = b;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        avx2_store_bf16(d + i, avx2_op(op, avx2_load_bf16(pa + i), avx2_load_bf16(pb + i)));
    avx2_bf16_tail(op, d + i, pa + i, pb + i, n - i);
}

#include "reduce/avx2_fp8.h"

TT_HALF_KERNELS(fp16, avx2_fp16_body)
TT_HALF_KERNELS(bf16, avx2_bf16_body)
TT_HALF_KERNELS(e4m3, avx2_e4m3_body)
TT_HALF_KERNELS(e5m2, avx2_e5m2_body)

void tt_reduce_fill_avx2(tt_reduce_table_t table)
{
    TT_FILL_ROWS(table);
}
