/* SPDX-License-Identifier: MIT */
/* Run-time choice of reduction kernels, and the avg division. */
#include <pthread.h>
#include <string.h>

#include "core/dtype.h"
#include "core/env_config.h"
#include "core/fp8.h"
#include "core/half.h"
#include "core/log.h"
#include "reduce/float_ops.h"
#include "reduce/reduce.h"

static const char *const isa_names[TT_ISA_COUNT] = {"portable", "avx2", "avx512", "avx512bf16"};
static tt_reduce_table_t tables[TT_ISA_COUNT];
static int usable[TT_ISA_COUNT];
static tt_isa_t chosen = TT_ISA_PORTABLE;
static pthread_once_t reduce_once = PTHREAD_ONCE_INIT;

const char *tt_isa_name(tt_isa_t isa)
{
    return isa < TT_ISA_COUNT ? isa_names[isa] : "unknown";
}

static void reduce_setup(void)
{
    tt_reduce_fill_portable(tables[TT_ISA_PORTABLE]);
    usable[TT_ISA_PORTABLE] = 1;
#ifdef TT_HAVE_X86_SIMD
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma")) {
        tt_reduce_fill_avx2(tables[TT_ISA_AVX2]);
        usable[TT_ISA_AVX2] = 1;
    }
    if (usable[TT_ISA_AVX2] && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
        tt_reduce_fill_avx512(tables[TT_ISA_AVX512]);
        usable[TT_ISA_AVX512] = 1;
        if (__builtin_cpu_supports("avx512bf16")) {
            tt_reduce_fill_avx512bf16(tables[TT_ISA_AVX512BF16]);
            usable[TT_ISA_AVX512BF16] = 1;
        }
    }
#endif
    for (int isa = TT_ISA_COUNT - 1; isa >= 0; isa--)
        if (usable[isa]) {
            chosen = (tt_isa_t)isa;
            break;
        }
    const char *want = tt_config_str(TT_CFG_REDUCE_ISA);
    if (strcmp(want, "auto") == 0)
        return;
    for (int isa = 0; isa < TT_ISA_COUNT; isa++)
        if (strcmp(want, isa_names[isa]) == 0) {
            if (usable[isa])
                chosen = (tt_isa_t)isa;
            else
                TT_WARN(TT_SUB_CONFIG, "TUTTI_REDUCE_ISA=%s: this CPU or build lacks it; using %s", want,
                        isa_names[chosen]);
            return;
        }
    TT_WARN(TT_SUB_CONFIG, "TUTTI_REDUCE_ISA=%s is unknown; using %s", want, isa_names[chosen]);
}

int tt_isa_usable(tt_isa_t isa)
{
    pthread_once(&reduce_once, reduce_setup);
    return isa < TT_ISA_COUNT && usable[isa];
}

tt_isa_t tt_reduce_isa(void)
{
    pthread_once(&reduce_once, reduce_setup);
    return chosen;
}

tt_reduce_fn tt_reduce_get_isa(tt_isa_t isa, tutti_dtype_t dtype, tutti_op_t op)
{
    if (!tt_isa_usable(isa) || (unsigned)dtype >= TUTTI_NUM_DTYPES || (unsigned)op >= TUTTI_NUM_OPS)
        return NULL;
    return tables[isa][dtype][op];
}

tt_reduce_fn tt_reduce_get(tutti_dtype_t dtype, tutti_op_t op)
{
    return tt_reduce_get_isa(tt_reduce_isa(), dtype, op);
}

/* recvbuf need not be aligned to its element size: every element is
 * loaded and stored through memcpy, which compiles to plain unaligned moves.
 * QUOTIENT is the stored v / nranks. */
#define AVG_LOOP(T, QUOTIENT)                                                                                \
    do {                                                                                                     \
        char *p = buf;                                                                                       \
        for (size_t i = 0; i < n; i++, p += sizeof(T)) {                                                     \
            T v;                                                                                             \
            memcpy(&v, p, sizeof v);                                                                         \
            v = QUOTIENT;                                                                                    \
            memcpy(p, &v, sizeof v);                                                                         \
        }                                                                                                    \
    } while (0)

/* The dtype's own arithmetic; floats keep the NaN rule of float_ops.h
 * through the division too. */
#define AVG_INT(T, U, TAG) AVG_LOOP(T, (T)(v / nranks))
#define AVG_FLOAT(T, U, TAG) AVG_LOOP(T, tt_canon_##TAG(v / nranks))
#define AVG_NARROW(T, U, TAG) AVG_LOOP(T, tt_f32_to_##TAG(tt_canon_f32(tt_##TAG##_to_f32(v) / nranks)))
#define AVG_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                               \
    case ENUM: AVG_##KIND(T, U, TAG); break;

void tt_reduce_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks)
{
    switch (dtype) {
        TT_DTYPE_LIST(AVG_CASE)
    default: break;
    }
}
