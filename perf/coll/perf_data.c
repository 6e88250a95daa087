/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf's check data: every input element is a small integer, so that
 * every dtype and op has an exact result to compare every output with.
 */
#include <string.h>

#include "core/fp8.h"
#include "core/half.h"
#include "perf.h"

static int is_signed(tutti_dtype_t t)
{
    return t != TUTTI_UINT8 && t != TUTTI_UINT32 && t != TUTTI_UINT64;
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
    if (t == TUTTI_FP8_E4M3 || t == TUTTI_FP8_E5M2) {
        size_t stride = (size_t)p / 8 + 1;
        return ((size_t)r + i) % stride ? 0.0 : (double)(1 + i % 2) * (i % 3 == 2 ? -1 : 1);
    }
    double v = (double)((r * 7 + i * 13) % 9);
    return is_signed(t) ? v - 4 : v;
}

/* Stores v in the dtype; integers wrap modulo 2^bits like the library's. */
static void store(void *buf, size_t i, tutti_dtype_t t, double v)
{
    int64_t iv = (int64_t)v;
    switch (t) {
    case TUTTI_INT8: ((int8_t *)buf)[i] = (int8_t)(uint8_t)iv; break;
    case TUTTI_UINT8: ((uint8_t *)buf)[i] = (uint8_t)iv; break;
    case TUTTI_INT32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)iv; break;
    case TUTTI_UINT32: ((uint32_t *)buf)[i] = (uint32_t)iv; break;
    case TUTTI_INT64: ((int64_t *)buf)[i] = iv; break;
    case TUTTI_UINT64: ((uint64_t *)buf)[i] = (uint64_t)iv; break;
    case TUTTI_FP16: ((uint16_t *)buf)[i] = tt_f32_to_fp16((float)v); break;
    case TUTTI_BF16: ((uint16_t *)buf)[i] = tt_f32_to_bf16((float)v); break;
    case TUTTI_FP32: ((float *)buf)[i] = (float)v; break;
    case TUTTI_FP64: ((double *)buf)[i] = v; break;
    case TUTTI_FP8_E4M3: ((uint8_t *)buf)[i] = tt_f32_to_e4m3((float)v); break;
    case TUTTI_FP8_E5M2: ((uint8_t *)buf)[i] = tt_f32_to_e5m2((float)v); break;
    default: break;
    }
}

/* avg: integers divide the wrapped sum, truncating; floats round once. */
static double average_of(double acc, const perf_data_t *d)
{
    char tmp[8];
    tutti_dtype_t t = d->dtype;
    store(tmp, 0, t, acc);
    switch (t) {
    case TUTTI_INT8: return (double)(((int8_t *)tmp)[0] / d->nranks);
    case TUTTI_UINT8: return (double)(((uint8_t *)tmp)[0] / d->nranks);
    case TUTTI_INT32: return (double)(((int32_t *)tmp)[0] / d->nranks);
    case TUTTI_UINT32: return (double)(((uint32_t *)tmp)[0] / (uint32_t)d->nranks);
    case TUTTI_INT64: return (double)(((int64_t *)tmp)[0] / d->nranks);
    case TUTTI_UINT64: return (double)(((uint64_t *)tmp)[0] / (uint64_t)d->nranks);
    case TUTTI_FP64: return acc / d->nranks;
    default: return (double)((float)acc / (float)d->nranks);
    }
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
    if (op == TUTTI_PROD && t != TUTTI_FP16 && t != TUTTI_BF16 && t != TUTTI_FP32 && t != TUTTI_FP64 &&
        t != TUTTI_FP8_E4M3 && t != TUTTI_FP8_E5M2)
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
