/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf's calls and their check: inputs are small integers, so every
 * dtype and op has an exact expected result, computed here rank by rank.
 */
#include <math.h>
#include <string.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/half.h"
#include "devmem.h"
#include "perf.h"

const char *const coll_names[C_COUNT] = {"allreduce", "reducescatter", "allgather", "broadcast",
                                         "reduce",    "alltoall",      "sendrecv"};

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
    int sg = is_signed(t);
    if (op == TUTTI_PROD) {
        int k = (int)((r + i) % 5);
        return k == 0 ? 2 : (k == 1 && sg) ? -1 : 1;
    }
    if (t == TUTTI_FP8_E4M3 || t == TUTTI_FP8_E5M2) {
        size_t stride = (size_t)p / 8 + 1;
        return ((size_t)r + i) % stride ? 0.0 : (double)(1 + i % 2) * (i % 3 == 2 ? -1 : 1);
    }
    double v = (double)((r * 7 + i * 13) % 9);
    return sg ? v - 4 : v;
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

/* The exact reduction of element i over all ranks, stored in the dtype. */
static void expected_reduced(void *out, size_t i, size_t elem_index, const ctx_t *c)
{
    tutti_dtype_t t = c->o->dtype;
    tutti_op_t op = c->o->op;
    double acc = input_value(0, elem_index, op, t, c->nranks);
    int64_t iacc = (int64_t)acc;
    for (int r = 1; r < c->nranks; r++) {
        double v = input_value(r, elem_index, op, t, c->nranks);
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
    if (op == TUTTI_AVG) {
        /* Integers: the wrapped sum divided, truncating; floats: one rounding. */
        char tmp[8];
        store(tmp, 0, t, acc);
        switch (t) {
        case TUTTI_INT8: acc = (double)(((int8_t *)tmp)[0] / c->nranks); break;
        case TUTTI_UINT8: acc = (double)(((uint8_t *)tmp)[0] / c->nranks); break;
        case TUTTI_INT32: acc = (double)(((int32_t *)tmp)[0] / c->nranks); break;
        case TUTTI_UINT32: acc = (double)(((uint32_t *)tmp)[0] / (uint32_t)c->nranks); break;
        case TUTTI_INT64: acc = (double)(((int64_t *)tmp)[0] / c->nranks); break;
        case TUTTI_UINT64: acc = (double)(((uint64_t *)tmp)[0] / (uint64_t)c->nranks); break;
        case TUTTI_FP64: acc = acc / c->nranks; break;
        default: acc = (double)((float)acc / (float)c->nranks); break;
        }
    }
    store(out, i, t, acc);
}

static void fill_input(const ctx_t *c, void *buf, size_t count, size_t first_index)
{
    for (size_t i = 0; i < count; i++)
        store(buf, i, c->o->dtype, input_value(c->rank, first_index + i, c->o->op, c->o->dtype, c->nranks));
}

static long long count_wrong(const ctx_t *c, const void *got, size_t count, int source_rank,
                             size_t first_index, int reduced)
{
    char want[8];
    long long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        if (reduced)
            expected_reduced(want, 0, first_index + i, c);
        else
            store(want, 0, c->o->dtype,
                  input_value(source_rank, first_index + i, c->o->op, c->o->dtype, c->nranks));
        wrong += memcmp(want, (const char *)got + i * c->elem, c->elem) != 0;
    }
    return wrong;
}

/* Elements per rank block for a size: the count argument of the call. */
size_t call_count(coll_t coll, size_t total, int p)
{
    return coll == C_REDUCESCATTER || coll == C_ALLGATHER || coll == C_ALLTOALL ? total / (size_t)p : total;
}

tutti_status_t run_once(ctx_t *c, coll_t coll, size_t n, int in_place)
{
    int p = c->nranks, r = c->rank;
    tutti_dtype_t t = c->o->dtype;
    char *recv = c->recv, *send = in_place ? c->recv : c->send;
    size_t bytes = n * c->elem;
    switch (coll) {
    case C_ALLREDUCE:
        if (c->o->compress)
            return tutti_allreduce_compressed(send, recv, n, t, c->o->op, &c->o->how, c->ef, c->comm,
                                              c->stream);
        return tutti_allreduce(send, recv, n, t, c->o->op, c->comm, c->stream);
    case C_REDUCESCATTER:
        return tutti_reduce_scatter(send, in_place ? recv + (size_t)r * bytes : recv, n, t, c->o->op, c->comm,
                                    c->stream);
    case C_ALLGATHER:
        return tutti_allgather(in_place ? recv + (size_t)r * bytes : send, recv, n, t, c->comm, c->stream);
    case C_BROADCAST: return tutti_broadcast(send, recv, n, t, c->o->root, c->comm, c->stream);
    case C_REDUCE: return tutti_reduce(send, recv, n, t, c->o->op, c->o->root, c->comm, c->stream);
    case C_ALLTOALL: return tutti_alltoall(send, recv, n, t, c->comm, c->stream);
    case C_SENDRECV: {
        if (p == 1)
            return TUTTI_SUCCESS;
        int right = (r + 1) % p, left = (r + p - 1) % p;
        tutti_status_t st;
        /* Blocking calls: even ranks send first, odd ranks receive first. */
        if (r % 2 == 0) {
            st = tutti_send(send, n, t, right, c->comm, c->stream);
            return st ? st : tutti_recv(recv, n, t, left, c->comm, c->stream);
        }
        st = tutti_recv(recv, n, t, left, c->comm, c->stream);
        return st ? st : tutti_send(send, n, t, right, c->comm, c->stream);
    }
    default: return TUTTI_ERR_INVALID_ARG;
    }
}

/* Fills inputs, runs once, counts wrong elements on this rank. */
long long check_once(ctx_t *c, coll_t coll, size_t n, int in_place, tutti_status_t *st)
{
    int p = c->nranks, r = c->rank;
    char *recv = c->img_recv, *in = in_place ? recv : c->img_send;
    size_t bytes = n * c->elem;
    memset(recv, 0xa5,
           coll == C_ALLGATHER || coll == C_ALLTOALL || coll == C_REDUCESCATTER ? bytes * (size_t)p : bytes);
    switch (coll) {
    case C_REDUCESCATTER:
    case C_ALLTOALL: fill_input(c, in, n * (size_t)p, 0); break;
    case C_ALLGATHER: fill_input(c, in_place ? recv + (size_t)r * bytes : in, n, (size_t)r * n); break;
    default: fill_input(c, in, n, 0); break;
    }
    if (c->stream && (devmem_to_device(c->send, c->img_send, c->buf_bytes, c->stream) ||
                      devmem_to_device(c->recv, recv, c->buf_bytes, c->stream))) {
        *st = TUTTI_ERR_SYSTEM;
        return 0;
    }
    *st = run_once(c, coll, n, in_place);
    if (!*st && c->stream &&
        (devmem_to_host(recv, c->recv, c->buf_bytes, c->stream) || devmem_sync(c->stream)))
        *st = TUTTI_ERR_SYSTEM;
    if (*st)
        return 0;
    switch (coll) {
    case C_ALLREDUCE: return count_wrong(c, recv, n, 0, 0, 1);
    case C_REDUCESCATTER:
        return count_wrong(c, in_place ? recv + (size_t)r * bytes : recv, n, 0, (size_t)r * n, 1);
    case C_ALLGATHER: {
        long long w = 0;
        for (int q = 0; q < p; q++)
            w += count_wrong(c, recv + (size_t)q * bytes, n, q, (size_t)q * n, 0);
        return w;
    }
    case C_BROADCAST: return count_wrong(c, recv, n, c->o->root, 0, 0);
    case C_REDUCE: return r == c->o->root ? count_wrong(c, recv, n, 0, 0, 1) : 0;
    case C_ALLTOALL: {
        long long w = 0; /* block q came from rank q, which filled index r*n.. of its input */
        for (int q = 0; q < p; q++)
            w += count_wrong(c, recv + (size_t)q * bytes, n, q, (size_t)r * n, 0);
        return w;
    }
    case C_SENDRECV: return p == 1 ? 0 : count_wrong(c, recv, n, (r + p - 1) % p, 0, 0);
    default: return 0;
    }
}
