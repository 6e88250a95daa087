/* SPDX-License-Identifier: MIT */
/*
 * CPU reduction kernels: dst[i] = a[i] op b[i] for one dtype and op. dst may
 * alias a or b; pointers need no alignment. Kernels exist per instruction set
 * and tt_reduce_get() picks the best one the CPU runs (TUTTI_REDUCE_ISA
 * overrides). avg reduces as sum; tt_reduce_avg_finish() divides at the end.
 */
#ifndef TT_REDUCE_H
#define TT_REDUCE_H

#include <stddef.h>

#include "tutti.h"

typedef void (*tt_reduce_fn)(void *dst, const void *a, const void *b, size_t n);

typedef enum {
    TT_ISA_PORTABLE = 0, /* plain C, compiled for the baseline target */
    TT_ISA_AVX2,         /* AVX2 + F16C + FMA */
    TT_ISA_AVX512,       /* AVX-512 F/BW/VL */
    TT_ISA_AVX512BF16,   /* AVX-512 plus the BF16 conversion instruction */
    TT_ISA_COUNT
} tt_isa_t;

/* Kernel table of one instruction set: [dtype][op], avg absent (it is sum). */
typedef tt_reduce_fn tt_reduce_table_t[TUTTI_NUM_DTYPES][TUTTI_NUM_OPS];

const char *tt_isa_name(tt_isa_t isa);
/* Whether the kernels were compiled in and this CPU can run them. */
int tt_isa_usable(tt_isa_t isa);
/* The instruction set tt_reduce_get uses (after TUTTI_REDUCE_ISA). */
tt_isa_t tt_reduce_isa(void);
/* Kernel of one instruction set, or NULL if that set is not usable. */
tt_reduce_fn tt_reduce_get_isa(tt_isa_t isa, tutti_dtype_t dtype, tutti_op_t op);
tt_reduce_fn tt_reduce_get(tutti_dtype_t dtype, tutti_op_t op);
/* buf[i] /= nranks, in the dtype's arithmetic (truncating for integers). */
void tt_reduce_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks);

/* dst[i] = src[i] * *scalar (one element of dtype), i < n: fp16, bf16 and
 * fp8 multiplied in fp32 and rounded to nearest even on store (fp8
 * saturating as tutti_collectives(3) says), integers wrapping around.
 * dst may be src. */
void tt_reduce_scale(void *dst, const void *src, size_t n, tutti_dtype_t dtype, const void *scalar);

/* Per instruction set tables, filled by the reduce_<isa>.c files. */
void tt_reduce_fill_portable(tt_reduce_table_t table);
void tt_reduce_fill_avx2(tt_reduce_table_t table);
void tt_reduce_fill_avx512(tt_reduce_table_t table);
void tt_reduce_fill_avx512bf16(tt_reduce_table_t table);

#endif
