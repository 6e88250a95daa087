/* SPDX-License-Identifier: MIT */
/* Portable kernels: plain C for any CPU; the fallback of the dispatch. */
#pragma GCC optimize("O3") /* vectorised for the baseline target (SSE2, or NEON on Arm) */
#include "reduce/reduce.h"

#define TT_KERNEL_PREFIX portable_
#include "reduce/loops.h"

#define PORTABLE_FP16(op, d, a, b, n) portable_fp16_tail(op, d, a, b, n)
#define PORTABLE_BF16(op, d, a, b, n) portable_bf16_tail(op, d, a, b, n)
TT_HALF_KERNELS(fp16, PORTABLE_FP16)
TT_HALF_KERNELS(bf16, PORTABLE_BF16)
#define PORTABLE_E4M3(op, d, a, b, n) portable_e4m3_tail(op, d, a, b, n)
#define PORTABLE_E5M2(op, d, a, b, n) portable_e5m2_tail(op, d, a, b, n)
TT_HALF_KERNELS(e4m3, PORTABLE_E4M3)
TT_HALF_KERNELS(e5m2, PORTABLE_E5M2)

void tt_reduce_fill_portable(tt_reduce_table_t table)
{
    TT_FILL_ROWS(table);
}
