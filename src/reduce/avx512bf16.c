/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 kernels whose bf16 store uses the hardware conversion
 * (VCVTNEPS2BF16). That instruction flushes subnormal results to zero, so
 * lanes holding a subnormal take the exact integer rounding instead.
 */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,f16c,fma")
#pragma GCC optimize("O3")
#include <immintrin.h>

#include "reduce/reduce.h"

#define TT_KERNEL_PREFIX avx512bf16_
#include "reduce/loops.h"

static inline __m256i bf16_narrow_hw(__m512 v);
#define TT_BF16_NARROW(v) bf16_narrow_hw(v)
#include "reduce/avx512_half.h"
#include "reduce/avx512_fp8.h"

static inline __m256i bf16_narrow_hw(__m512 v)
{
    __m256i hw = (__m256i)_mm512_cvtneps_pbh(v);
    __m512i abs = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff));
    __mmask16 subnormal = _mm512_cmp_epu32_mask(_mm512_sub_epi32(abs, _mm512_set1_epi32(1)),
                                                _mm512_set1_epi32(0x007fffff), _MM_CMPINT_LT);
    if (__builtin_expect(subnormal == 0, 1))
        return hw;
    return _mm256_mask_blend_epi16(subnormal, hw, avx512_bf16_round(v));
}

TT_HALF_KERNELS(fp16, avx512_fp16_body)
TT_HALF_KERNELS(bf16, avx512_bf16_body)
TT_HALF_KERNELS(e4m3, avx512_e4m3_body)
TT_HALF_KERNELS(e5m2, avx512_e5m2_body)

void tt_reduce_fill_avx512bf16(tt_reduce_table_t table)
{
    TT_FILL_ROWS(table);
}
