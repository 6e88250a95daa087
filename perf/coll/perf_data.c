/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf's check data: every input element is a small integer, so that
 * every dtype and op has an exact result to compare every output with.
 */
#include <string.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/half.h"
#include "perf.h"

/* (T)-1 < 0 reads better, but -Wtype-limits refuses it for unsigned T. */
#define SIGNED_TYPE(T) ((T)-1 < (T)1)
#define IS_INT_INT 1
#define IS_INT_FLOAT 0
#define IS_INT_NARROW 0

static int is_integer(tutti_dtype_t t)
{
#define INTEGER_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                           \
    case ENUM: return IS_INT_##KIND;
    switch (t) {
        TT_DTYPE_LIST(INTEGER_CASE)
    default: return 0;
    }
#undef INTEGER_CASE
}

/* Every float holds negative numbers; an unsigned integer none. */
static int is_signed(tutti_dtype_t t)
{
#define SIGNED_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                            \
    case ENUM: return !IS_INT_##KIND || SIGNED_TYPE(T);
    switch (t) {
        TT_DTYPE_LIST(SIGNED_CASE)
    default: return 0;
    }
#undef SIGNED_CASE
}

/* Input element i of rank r of p as an exact small number. prod uses 1, 2
 * and -1 so products stay exact; unsigned types never see negatives. fp8
 * holds every integer only up to 8 (e5m2): at most 8 ranks hold the same
 * +-1 or +-2 at an index, the others 0, so every partial sum is exact. */
static double input_value(int r, size_t i, tutti_op_t op, tutti_dtype_t t, int p)
{
    if (op == TUTTI_PROD) {
        int k = (int)((r + i) % 5);
        return k == 0 ? 2 : (k == 1 && is_signed(t)) ? -1 : 1;
    }
    if (!is_integer(t) && tutti_dtype_size(t) == 1) {
        size_t stride = (size_t)p / 8 + 1;
        return ((size_t)r + i) % stride ? 0.0 : (double)(1 + i % 2) * (i % 3 == 2 ? -1 : 1);
    }
    double v = (double)((r * 7 + i * 13) % 9);
    return is_signed(t) ? v - 4 : v;
}

#define STORE_INT(T, U, TAG) ((T *)buf)[i] = (T)(U)iv
#define STORE_FLOAT(T, U, TAG) ((T *)buf)[i] = (T)v
#define STORE_NARROW(T, U, TAG) ((T *)buf)[i] = tt_f32_to_##TAG((float)v)

/* Stores v in the dtype; integers wrap modulo 2^bits like the library's. */
static void store(void *buf, size_t i, tutti_dtype_t t, double v)
{
    int64_t iv = (int64_t)v;
#define STORE_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                             \
    case ENUM: STORE_##KIND(T, U, TAG); break;
    switch (t) {
        TT_DTYPE_LIST(STORE_CASE)
    default: break;
    }
#undef STORE_CASE
}

/* Integers divide the wrapped sum, truncating (as C divides: through
 * int64_t or uint64_t the quotient is the same); floats round once, the
 * narrow ones in fp32. */
#define AVERAGE_INT(T, U, TAG)                                                                               \
    SIGNED_TYPE(T) ? (double)((int64_t)((T *)tmp)[0] / d->nranks)                                            \
                   : (double)((uint64_t)((T *)tmp)[0] / (uint64_t)d->nranks)
#define AVERAGE_FLOAT(T, U, TAG) (double)((U)acc / (U)d->nranks)
#define AVERAGE_NARROW(T, U, TAG) (double)((U)acc / (U)d->nranks)

/* avg: the sum acc divided as the dtype divides. */
static double average_of(double acc, const perf_data_t *d)
{
    char tmp[8];
    store(tmp, 0, d->dtype, acc);
#define AVERAGE_CASE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                           \
    case ENUM: return AVERAGE_##KIND(T, U, TAG);
    switch (d->dtype) {
        TT_DTYPE_LIST(AVERAGE_CASE)
    default: return acc;
    }
#undef AVERAGE_CASE
}

/* The exact reduction of element i over all ranks, stored in the dtype. */
static void expected_reduced(void *out, size_t elem_index, const perf_data_t *d)
{
    tutti_dtype_t t = d->dtype;
    tutti_op_t op = d->op;
    double acc = input_value(0, elem_index, op, t, d->nranks);
    int64_t iacc = (int64_t)acc;
    for (int r = 1; r < d->nranks; r++) {
        double v = input_value(r, elem_index, op, t, d->nranks);
        switch (op) {
        case TUTTI_PROD:
            acc *= v;
            iacc = (int64_t)((uint64_t)iacc * (uint64_t)(int64_t)v);
            break;
        case TUTTI_MIN: acc = v < acc ? v : acc; break;
        case TUTTI_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (op == TUTTI_PROD && is_integer(t))
        acc = (double)iacc;
    if (op == TUTTI_AVG)
        acc = average_of(acc, d);
    store(out, 0, t, acc);
}

void perf_fill_input(const perf_data_t *d, void *buf, size_t count, size_t first_index)
{
    for (size_t i = 0; i < count; i++)
        store(buf, i, d->dtype, input_value(d->rank, first_index + i, d->op, d->dtype, d->nranks));
}

long long perf_count_wrong(const perf_data_t *d, const void *got, size_t count, int source_rank,
                           size_t first_index, int reduced)
{
    char want[8];
    long long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        if (reduced)
            expected_reduced(want, first_index + i, d);
        else
            store(want, 0, d->dtype, input_value(source_rank, first_index + i, d->op, d->dtype, d->nranks));
        wrong += memcmp(want, (const char *)got + i * d->elem, d->elem) != 0;
    }
    return wrong;
}
