/* SPDX-License-Identifier: MIT */
/* Exact values, their reductions, and one checked round of every collective. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "core/fp8.h"
#include "core/half.h"
#include "tests/lib/exact.h"
#include "reduce/reduce.h"

void tt_test_value(tutti_dtype_t t, tutti_op_t op, void *buf, size_t i, int rank, size_t index)
{
    int v = op == TUTTI_PROD ? ((rank + (int)index) % 5 == 0 ? 2 : 1)
                             : (int)(((size_t)rank * 7 + index * 13) % 9);
    /* fp8 holds every integer only up to 8 (e5m2) or 16 (e4m3): a quarter
     * of the ranks hold the same +-1 or +-2 at an index, the rest 0, so any
     * partial sum of up to 32 ranks is exact and the order does not matter. */
    int v8 = op == TUTTI_PROD          ? v
             : (rank + (int)index) % 4 ? 0
                                       : (int)(1 + index % 2) * (index % 3 == 2 ? -1 : 1);
    switch (t) {
    case TUTTI_FP8_E4M3: ((uint8_t *)buf)[i] = tt_f32_to_e4m3((float)v8); break;
    case TUTTI_FP8_E5M2: ((uint8_t *)buf)[i] = tt_f32_to_e5m2((float)v8); break;
    case TUTTI_FP16: ((uint16_t *)buf)[i] = tt_f32_to_fp16((float)v); break;
    case TUTTI_BF16: ((uint16_t *)buf)[i] = tt_f32_to_bf16((float)v); break;
    case TUTTI_FP32: ((float *)buf)[i] = (float)v; break;
    case TUTTI_FP64: ((double *)buf)[i] = v; break;
    case TUTTI_INT8:
    case TUTTI_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case TUTTI_INT32:
    case TUTTI_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    default: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    }
}

void tt_expect_reduced(char *want, char *term, size_t n, size_t base, int p, tutti_dtype_t t, tutti_op_t op)
{
    tt_reduce_fn fn = tt_reduce_get(t, op);
    for (size_t i = 0; i < n; i++)
        tt_test_value(t, op, want, i, 0, base + i);
    for (int q = 1; q < p; q++) {
        for (size_t i = 0; i < n; i++)
            tt_test_value(t, op, term, i, q, base + i);
        fn(want, want, term, n);
    }
    if (op == TUTTI_AVG)
        tt_reduce_avg_finish(want, n, t, p);
}

int tt_check_round(tutti_comm_t comm, int r, int p, size_t n, tutti_dtype_t t, tutti_op_t op, int ip,
                   const tt_round_bufs_t *b)
{
    char *in = b->in, *out = b->out, *want = b->want, *term = b->term;
    size_t e = tutti_dtype_size(t);
    int root = (int)(n % (size_t)p);
    tutti_status_t st;
    for (size_t i = 0; i < n; i++)
        tt_test_value(t, op, ip ? out : in, i, r, i);
    st = tutti_allreduce(ip ? out : in, out, n, t, op, comm, NULL);
    TT_FAIL_IF(st, "allreduce n=%zu: %s", n, tutti_comm_last_error(comm));
    tt_expect_reduced(want, term, n, 0, p, t, op);
    TT_FAIL_IF(memcmp(want, out, n * e), "allreduce n=%zu %s %s wrong", n, tutti_dtype_name(t),
               tutti_op_name(op));

    for (size_t i = 0; i < n * (size_t)p; i++)
        tt_test_value(t, op, in, i, r, i);
    st = tutti_reduce_scatter(in, out, n, t, op, comm, NULL);
    TT_FAIL_IF(st, "reduce_scatter n=%zu: %s", n, tutti_comm_last_error(comm));
    tt_expect_reduced(want, term, n, (size_t)r * n, p, t, op);
    TT_FAIL_IF(memcmp(want, out, n * e), "reduce_scatter n=%zu %s wrong", n, tutti_dtype_name(t));

    for (size_t i = 0; i < n; i++)
        tt_test_value(t, op, in, i, r, (size_t)r * n + i);
    st = tutti_allgather(in, out, n, t, comm, NULL);
    TT_FAIL_IF(st, "allgather n=%zu: %s", n, tutti_comm_last_error(comm));
    for (size_t i = 0; i < n * (size_t)p; i++)
        tt_test_value(t, op, want, i, (int)(i / n), i);
    TT_FAIL_IF(memcmp(want, out, n * (size_t)p * e), "allgather n=%zu wrong", n);

    for (size_t i = 0; i < n; i++)
        tt_test_value(t, op, ip ? out : in, i, r, i);
    st = tutti_broadcast(ip ? out : in, out, n, t, root, comm, NULL);
    TT_FAIL_IF(st, "broadcast n=%zu: %s", n, tutti_comm_last_error(comm));
    for (size_t i = 0; i < n; i++)
        tt_test_value(t, op, want, i, root, i);
    TT_FAIL_IF(memcmp(want, out, n * e), "broadcast n=%zu wrong", n);

    for (size_t i = 0; i < n; i++)
        tt_test_value(t, op, in, i, r, i);
    st = tutti_reduce(in, r == root ? out : NULL, n, t, op, root, comm, NULL);
    TT_FAIL_IF(st, "reduce n=%zu: %s", n, tutti_comm_last_error(comm));
    tt_expect_reduced(want, term, n, 0, p, t, op);
    TT_FAIL_IF(r == root && memcmp(want, out, n * e), "reduce n=%zu wrong", n);

    for (size_t i = 0; i < n * (size_t)p; i++)
        tt_test_value(t, op, in, i, r, i);
    st = tutti_alltoall(in, out, n, t, comm, NULL);
    TT_FAIL_IF(st, "alltoall n=%zu: %s", n, tutti_comm_last_error(comm));
    for (size_t i = 0; i < n * (size_t)p; i++)
        tt_test_value(t, op, want, i, (int)(i / n), (size_t)r * n + i % n);
    TT_FAIL_IF(memcmp(want, out, n * (size_t)p * e), "alltoall n=%zu wrong", n);

    if (p > 1) {
        int right = (r + 1) % p, left = (r + p - 1) % p;
        for (size_t i = 0; i < n; i++)
            tt_test_value(t, op, in, i, r, i);
        st = r % 2 == 0 ? tutti_send(in, n, t, right, comm, NULL) : tutti_recv(out, n, t, left, comm, NULL);
        if (!st)
            st = r % 2 == 0 ? tutti_recv(out, n, t, left, comm, NULL)
                            : tutti_send(in, n, t, right, comm, NULL);
        TT_FAIL_IF(st, "send/recv n=%zu: %s", n, tutti_comm_last_error(comm));
        for (size_t i = 0; i < n; i++)
            tt_test_value(t, op, want, i, left, i);
        TT_FAIL_IF(memcmp(want, out, n * e), "send/recv n=%zu wrong", n);
    }
    st = tutti_barrier(comm, NULL);
    TT_FAIL_IF(st, "barrier: %s", tutti_comm_last_error(comm));
    return 0;
}

int tt_test_on_transport(tutti_comm_t handle, const tt_transport_ops_t *ops)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    int on = 0;
    for (int i = 0; i < comm->nconnected; i++) {
        int q = comm->connected[i];
        if (comm->endpoints[q].host_id == comm->endpoints[comm->rank].host_id)
            continue;
        if (comm->peers[q].ops != ops)
            return 0;
        on++;
    }
    return on > 0;
}

int tt_round_ok(tutti_comm_t comm)
{
    enum { N = 257 };
    int p = -1, r = -1;
    tutti_comm_size(comm, &p);
    tutti_comm_rank(comm, &r);
    tt_round_bufs_t b;
    char *mem = p > 0 ? calloc(4, (size_t)N * (size_t)p * 8) : NULL;
    if (!mem)
        return 1;
    b.in = mem;
    b.out = b.in + (size_t)N * (size_t)p * 8;
    b.want = b.out + (size_t)N * (size_t)p * 8;
    b.term = b.want + (size_t)N * (size_t)p * 8;
    int bad = tt_check_round(comm, r, p, N, TUTTI_FP32, TUTTI_SUM, 0, &b);
    free(mem);
    return bad;
}
