/* SPDX-License-Identifier: MIT */
/* AVX-512 kernels: 16 fp32 lanes, masked tails, no scalar remainder loop; fp16,
 * bf16 and fp8 widened to fp32 in registers. */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,f16c,fma")
#pragma GCC optimize("O3")
#include <immintrin.h>

#include "reduce/reduce.h"

#define TT_KERNEL_PREFIX avx512_
#include "reduce/loops.h"
#define TT_BF16_NARROW(v) avx512_bf16_round(v)
#include "reduce/avx512_half.h"
#include "reduce/avx512_fp8.h"

TT_HALF_KERNELS(fp16, avx512_fp16_body)
TT_HALF_KERNELS(bf16, avx512_bf16_body)
TT_HALF_KERNELS(e4m3, avx512_e4m3_body)
TT_HALF_KERNELS(e5m2, avx512_e5m2_body)

void tt_reduce_fill_avx512(tt_reduce_table_t table)
{
    TT_FILL_ROWS(table);
}
