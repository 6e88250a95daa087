/* SPDX-License-Identifier: MIT */
/*
 * libnccl.so.2 as an NCCL program sees it: built with nccl.h (the CUDA
 * toolkit's where configure found it) and linked with tutti's libnccl.so.2
 * alone. Every datatype and operator against its NCCL value, every
 * collective on host buffers on 1-8 forked ranks, in place and not,
 * groups of sends and receives (all-to-all, gather, scatter, to itself),
 * several ranks in one process (ncclCommInitAll), pre-multiplied sums.
 */
#include <check.h>
#include <sys/mman.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/nccl/nccl_ranks.h"

/* 2, 3, 4, 6 and 8 as each datatype encodes them: every datatype holds
 * them exactly, fp8 e5m2 included. */
enum { V2 = 0, V3, V4, V6, V8 };
static const struct {
    ncclDataType_t t;
    size_t size;
    uint64_t v[5];
} types[] = {
    {ncclInt8, 1, {2, 3, 4, 6, 8}},
    {ncclUint8, 1, {2, 3, 4, 6, 8}},
    {ncclInt32, 4, {2, 3, 4, 6, 8}},
    {ncclUint32, 4, {2, 3, 4, 6, 8}},
    {ncclInt64, 8, {2, 3, 4, 6, 8}},
    {ncclUint64, 8, {2, 3, 4, 6, 8}},
    {ncclFloat16, 2, {0x4000, 0x4200, 0x4400, 0x4600, 0x4800}},
    {ncclFloat32, 4, {0x40000000, 0x40400000, 0x40800000, 0x40c00000, 0x41000000}},
    {ncclFloat64,
     8,
     {0x4000000000000000, 0x4008000000000000, 0x4010000000000000, 0x4018000000000000, 0x4020000000000000}},
    {ncclBfloat16, 2, {0x4000, 0x4040, 0x4080, 0x40c0, 0x4100}},
    {ncclFloat8e4m3, 1, {0x40, 0x44, 0x48, 0x4c, 0x50}},
    {ncclFloat8e5m2, 1, {0x40, 0x42, 0x44, 0x46, 0x48}},
};
#define NTYPES (int)(sizeof types / sizeof types[0])

/* Rank 0 holds 2, rank 1 holds 4: each operator gives another value. */
static const struct {
    ncclRedOp_t op;
    int want;
} ops[] = {{ncclSum, V6}, {ncclProd, V8}, {ncclMax, V4}, {ncclMin, V2}, {ncclAvg, V3}};

static void put(void *buf, size_t i, size_t size, uint64_t v)
{
    memcpy((char *)buf + i * size, &v, size); /* little-endian: the low bytes */
}

static int same(const void *buf, size_t i, size_t size, uint64_t v)
{
    return memcmp((const char *)buf + i * size, &v, size) == 0;
}

/* Every datatype with every operator, and the bytes after the count left
 * alone: a datatype or operator mapped to the wrong tutti value fails. */
static int every_type_and_op(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    enum { N = 5, GUARD = 8 };
    unsigned char in[(N + GUARD) * 8], out[(N + GUARD) * 8 * 2];
    for (int t = 0; t < NTYPES; t++) {
        size_t sz = types[t].size;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            for (size_t i = 0; i < N; i++)
                put(in, i, sz, types[t].v[rank == 0 ? V2 : V4]);
            memset(out, 0xab, sizeof out);
            NCCL_OK(ncclAllReduce(in, out, N, types[t].t, ops[o].op, comm, NULL));
            for (size_t i = 0; i < N; i++)
                NCCL_FAIL_IF(!same(out, i, sz, types[t].v[ops[o].want]),
                             "datatype %d op %d: element %zu wrong", (int)types[t].t, (int)ops[o].op, i);
            for (size_t b = N * sz; b < (N + GUARD) * sz; b++)
                NCCL_FAIL_IF(out[b] != 0xab, "datatype %d op %d: byte %zu past the count written",
                             (int)types[t].t, (int)ops[o].op, b);
        }
        /* No operator: the element size alone. */
        memset(out, 0xab, sizeof out);
        NCCL_OK(ncclAllGather(in, out, N, types[t].t, comm, NULL));
        for (size_t b = 2 * N * sz; b < sizeof out; b++)
            NCCL_FAIL_IF(out[b] != 0xab, "datatype %d: all-gather wrote byte %zu", (int)types[t].t, b);
    }
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(every_datatype_and_operator_maps_to_its_tutti_value)
{
    nccl_run(2, every_type_and_op, NULL, 120);
}
END_TEST

static int32_t val(int rank, size_t i)
{
    return (int32_t)(((size_t)rank * 31 + i * 7) % 101);
}

static int32_t sum_of(int nranks, size_t i)
{
    int32_t s = 0;
    for (int r = 0; r < nranks; r++)
        s += val(r, i);
    return s;
}

static int check_reductions(ncclComm_t comm, int r, int p, size_t n, int32_t *a, int32_t *b, int ip)
{
    int32_t *out = ip ? a : b;
    for (size_t i = 0; i < n; i++)
        a[i] = val(r, i);
    NCCL_OK(ncclAllReduce(a, out, n, ncclInt32, ncclSum, comm, NULL));
    for (size_t i = 0; i < n; i++)
        NCCL_FAIL_IF(out[i] != sum_of(p, i), "all-reduce n=%zu in_place=%d: element %zu", n, ip, i);
    int root = p / 2;
    for (size_t i = 0; i < n; i++)
        a[i] = val(r, i);
    NCCL_OK(ncclReduce(a, r == root ? out : NULL, n, ncclInt32, ncclSum, root, comm, NULL));
    for (size_t i = 0; r == root && i < n; i++)
        NCCL_FAIL_IF(out[i] != sum_of(p, i), "reduce n=%zu in_place=%d: element %zu", n, ip, i);
    /* reduce-scatter: in place when recvbuff is block r of sendbuff */
    for (size_t i = 0; i < n * (size_t)p; i++)
        a[i] = val(r, i);
    int32_t *rs = ip ? a + (size_t)r * n : b;
    NCCL_OK(ncclReduceScatter(a, rs, n, ncclInt32, ncclSum, comm, NULL));
    for (size_t i = 0; i < n; i++)
        NCCL_FAIL_IF(rs[i] != sum_of(p, (size_t)r * n + i), "reduce-scatter n=%zu in_place=%d: element %zu",
                     n, ip, i);
    return 0;
}

static int check_movers(ncclComm_t comm, int r, int p, size_t n, int32_t *a, int32_t *b, int ip)
{
    int root = p - 1;
    for (size_t i = 0; i < n; i++)
        a[i] = val(r, i);
    NCCL_OK(ncclBroadcast(a, ip ? a : b, n, ncclInt32, root, comm, NULL));
    for (size_t i = 0; i < n; i++)
        NCCL_FAIL_IF((ip ? a : b)[i] != val(root, i), "broadcast n=%zu in_place=%d: element %zu", n, ip, i);
    for (size_t i = 0; i < n; i++)
        a[i] = val(r, i);
    NCCL_OK(ncclBcast(a, n, ncclInt32, 0, comm, NULL));
    for (size_t i = 0; i < n; i++)
        NCCL_FAIL_IF(a[i] != val(0, i), "bcast n=%zu: element %zu", n, i);
    /* all-gather: in place when sendbuff is block r of recvbuff */
    int32_t *ag = ip ? b + (size_t)r * n : a;
    for (size_t i = 0; i < n; i++)
        ag[i] = val(r, i);
    NCCL_OK(ncclAllGather(ag, b, n, ncclInt32, comm, NULL));
    for (size_t i = 0; i < n * (size_t)p; i++)
        NCCL_FAIL_IF(b[i] != val((int)(i / n), i % n), "all-gather n=%zu in_place=%d: element %zu", n, ip, i);
    for (size_t i = 0; i < n * (size_t)p; i++) /* block q goes to rank q */
        a[i] = val(r, i) + (int32_t)(i / n) * 1000;
    NCCL_OK(ncclAlltoAll(a, b, n, ncclInt32, comm, NULL));
    for (size_t i = 0; i < n * (size_t)p; i++)
        NCCL_FAIL_IF(b[i] != val((int)(i / n), (size_t)r * n + i % n) + r * 1000,
                     "all-to-all n=%zu: element %zu", n, i);
    return 0;
}

static int check_gather_scatter(ncclComm_t comm, int r, int p, size_t n, int32_t *a, int32_t *b, int ip)
{
    int root = (p + 1) / 2 % p;
    /* gather: in place when sendbuff is the root's block of recvbuff */
    int32_t *gs = ip && r == root ? b + (size_t)root * n : a;
    for (size_t i = 0; i < n; i++)
        gs[i] = val(r, i);
    NCCL_OK(ncclGather(gs, b, n, ncclInt32, root, comm, NULL));
    for (size_t i = 0; r == root && i < n * (size_t)p; i++)
        NCCL_FAIL_IF(b[i] != val((int)(i / n), i % n), "gather n=%zu in_place=%d: element %zu", n, ip, i);
    /* scatter: in place when recvbuff is the root's block of sendbuff */
    for (size_t i = 0; r == root && i < n * (size_t)p; i++)
        a[i] = val(root, i) - 7;
    int32_t *sr = ip && r == root ? a + (size_t)root * n : b;
    NCCL_OK(ncclScatter(a, sr, n, ncclInt32, root, comm, NULL));
    for (size_t i = 0; i < n; i++)
        NCCL_FAIL_IF(sr[i] != val(root, (size_t)r * n + i) - 7, "scatter n=%zu in_place=%d: element %zu", n,
                     ip, i);
    return 0;
}

/* A ring of single sends and receives outside any group: even ranks send
 * first, odd ranks receive first. */
static int check_ring(ncclComm_t comm, int r, int p, size_t n, int32_t *a, int32_t *b)
{
    if (p == 1)
        return 0;
    for (size_t i = 0; i < n; i++)
        a[i] = val(r, i);
    int to = (r + 1) % p, from = (r + p - 1) % p;
    if (r % 2 == 0) {
        NCCL_OK(ncclSend(a, n, ncclInt32, to, comm, NULL));
        NCCL_OK(ncclRecv(b, n, ncclInt32, from, comm, NULL));
    } else {
        NCCL_OK(ncclRecv(b, n, ncclInt32, from, comm, NULL));
        NCCL_OK(ncclSend(a, n, ncclInt32, to, comm, NULL));
    }
    for (size_t i = 0; i < n; i++)
        NCCL_FAIL_IF(b[i] != val(from, i), "send/recv ring n=%zu: element %zu", n, i);
    return 0;
}

static int every_collective(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    static const size_t counts[] = {0, 1, 7, 5003};
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    int count, me;
    NCCL_OK(ncclCommCount(comm, &count));
    NCCL_OK(ncclCommUserRank(comm, &me));
    NCCL_FAIL_IF(count != nranks || me != rank, "count %d rank %d, want %d %d", count, me, nranks, rank);
    size_t most = 5003 * (size_t)nranks + 16;
    int32_t *a = malloc(most * sizeof *a), *b = malloc(most * sizeof *b);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (int ip = 0; ip < 2; ip++)
            if (check_reductions(comm, rank, nranks, counts[c], a, b, ip) ||
                check_movers(comm, rank, nranks, counts[c], a, b, ip) ||
                check_gather_scatter(comm, rank, nranks, counts[c], a, b, ip) ||
                check_ring(comm, rank, nranks, counts[c], a, b))
                return 1;
    free(a);
    free(b);
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(every_collective_on_host_buffers)
{
    static const int ranks[] = {1, 2, 3, 4, 8};
    nccl_run(ranks[_i], every_collective, NULL, 240);
}
END_TEST

/* Groups of sends and receives: an all-to-all (itself included, receives
 * posted first), a gather and a scatter, two messages to each peer in
 * order, and an all-reduce in the same group. As single blocking calls
 * each would wait forever in its first receive. */
static int grouped(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    enum { N = 3001 };
    size_t p = (size_t)nranks;
    int32_t *in = malloc(2 * p * N * sizeof *in), *out = malloc(2 * p * N * sizeof *out),
            sum[4] = {1, 2, 3, 4};
    for (size_t i = 0; i < 2 * p * N; i++) /* message m of block q goes to rank q */
        in[i] = val(rank, i) + 100000 * rank;
    memset(out, 0, 2 * p * N * sizeof *out);
    NCCL_OK(ncclGroupStart());
    for (int q = 0; q < nranks; q++)
        for (int m = 0; m < 2; m++)
            NCCL_OK(ncclRecv(out + (2 * (size_t)q + m) * N, N, ncclInt32, q, comm, NULL));
    NCCL_OK(ncclAllReduce(sum, sum, 4, ncclInt32, ncclSum, comm, NULL));
    for (int q = 0; q < nranks; q++)
        for (int m = 0; m < 2; m++)
            NCCL_OK(ncclSend(in + (2 * (size_t)q + m) * N, N, ncclInt32, q, comm, NULL));
    NCCL_OK(ncclGroupEnd());
    for (size_t q = 0; q < p; q++)
        for (size_t i = 0; i < 2 * N; i++)
            NCCL_FAIL_IF(out[q * 2 * N + i] != val((int)q, (size_t)rank * 2 * N + i) + 100000 * (int)q,
                         "all-to-all group: from %zu element %zu", q, i);
    for (int k = 0; k < 4; k++)
        NCCL_FAIL_IF(sum[k] != (k + 1) * nranks, "all-reduce in the group: %d", sum[k]);
    /* gather to the last rank, then scatter back from it, as groups */
    int root = nranks - 1;
    memset(out, 0, p * N * sizeof *out);
    NCCL_OK(ncclGroupStart());
    if (rank == root)
        for (int q = 0; q < nranks; q++)
            NCCL_OK(ncclRecv(out + (size_t)q * N, N, ncclInt32, q, comm, NULL));
    NCCL_OK(ncclSend(in, N, ncclInt32, root, comm, NULL));
    NCCL_OK(ncclGroupEnd());
    for (size_t i = 0; rank == root && i < p * N; i++)
        NCCL_FAIL_IF(out[i] != val((int)(i / N), i % N) + 100000 * (int)(i / N), "gather group: element %zu",
                     i);
    memset(in, 0, N * sizeof *in);
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclRecv(in, N, ncclInt32, root, comm, NULL));
    if (rank == root)
        for (int q = 0; q < nranks; q++)
            NCCL_OK(ncclSend(out + (size_t)q * N, N, ncclInt32, q, comm, NULL));
    NCCL_OK(ncclGroupEnd());
    for (size_t i = 0; i < N; i++)
        NCCL_FAIL_IF(in[i] != val(rank, i) + 100000 * rank, "scatter group: element %zu", i);
    free(in);
    free(out);
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(groups_of_sends_and_receives)
{
    static const int ranks[] = {1, 2, 3, 5, 8};
    nccl_run(ranks[_i], grouped, NULL, 240);
}
END_TEST

/* ncclCommInitAll: three ranks in this process, driven from one thread
 * through groups, destroyed one after the other. */
START_TEST(several_ranks_in_one_process)
{
    enum { P = 3, N = 1001 };
    ncclComm_t comms[P];
    ck_assert_int_eq(ncclCommInitAll(comms, P, NULL), ncclSuccess);
    static float data[P][N], ring[P][N];
    for (int r = 0; r < P; r++)
        for (int i = 0; i < N; i++)
            data[r][i] = (float)(r + 1) * (float)(i % 17);
    ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < P; r++)
        ck_assert_int_eq(ncclAllReduce(data[r], data[r], N, ncclFloat32, ncclSum, comms[r], NULL),
                         ncclSuccess);
    ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < P; r++)
        for (int i = 0; i < N; i++)
            ck_assert_msg(data[r][i] == 6.0f * (float)(i % 17), "rank %d element %d: %g", r, i, data[r][i]);
    ck_assert_int_eq(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < P; r++) {
        ck_assert_int_eq(ncclSend(data[r], N, ncclFloat32, (r + 1) % P, comms[r], NULL), ncclSuccess);
        ck_assert_int_eq(ncclRecv(ring[r], N, ncclFloat32, (r + P - 1) % P, comms[r], NULL), ncclSuccess);
    }
    ck_assert_int_eq(ncclGroupEnd(), ncclSuccess);
    ck_assert(memcmp(ring[0], data[P - 1], sizeof ring[0]) == 0);
    for (int r = 0; r < P; r++)
        ck_assert_int_eq(ncclCommDestroy(comms[r]), ncclSuccess);
}
END_TEST

/* Each rank multiplies by the scalar, then the ranks sum. A host-immediate
 * scalar is read at creation; a device-residence one (here in host memory,
 * which tutti allows) when the collective runs. */
static int premul(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    float half = 0.5f, later = 2.0f, x[6], y[6];
    int32_t three = 3, xi[4], yi[4];
    ncclRedOp_t op_half, op_later, op_int;
    NCCL_OK(ncclRedOpCreatePreMulSum(&op_half, &half, ncclFloat32, ncclScalarHostImmediate, comm));
    NCCL_OK(ncclRedOpCreatePreMulSum(&op_later, &later, ncclFloat32, ncclScalarDevice, comm));
    NCCL_OK(ncclRedOpCreatePreMulSum(&op_int, &three, ncclInt32, ncclScalarHostImmediate, comm));
    half = 100.0f; /* read already: no effect */
    later = 3.0f;  /* read when the collective runs: counts */
    float ranks_sum = (float)(nranks * (nranks + 1) / 2);
    for (int i = 0; i < 6; i++)
        x[i] = (float)(2 * (rank + 1) * (i + 1));
    NCCL_OK(ncclAllReduce(x, y, 6, ncclFloat32, op_half, comm, NULL));
    for (int i = 0; i < 6; i++)
        NCCL_FAIL_IF(y[i] != ranks_sum * (float)(i + 1), "premul 0.5: element %d is %g", i, y[i]);
    NCCL_OK(ncclAllReduce(x, y, 6, ncclFloat32, op_later, comm, NULL));
    for (int i = 0; i < 6; i++)
        NCCL_FAIL_IF(y[i] != 6.0f * ranks_sum * (float)(i + 1), "premul read late: element %d is %g", i,
                     y[i]);
    for (int i = 0; i < 4; i++)
        xi[i] = rank + i;
    NCCL_OK(ncclReduce(xi, yi, 4, ncclInt32, op_int, 0, comm, NULL));
    for (int i = 0; rank == 0 && i < 4; i++)
        NCCL_FAIL_IF(yi[i] != 3 * (nranks * (nranks - 1) / 2 + nranks * i), "premul int: element %d is %d", i,
                     yi[i]);
    float rs[12]; /* reduce-scatter: 2 per rank, nranks <= 6 */
    for (int i = 0; i < 2 * nranks; i++)
        rs[i] = (float)(4 * (i + 1));
    NCCL_OK(ncclReduceScatter(rs, y, 2, ncclFloat32, op_half, comm, NULL));
    for (int i = 0; i < 2; i++)
        NCCL_FAIL_IF(y[i] != (float)(2 * nranks * (2 * rank + i + 1)), "premul reduce-scatter: %g", y[i]);
    /* Narrow floats: 4 * 0.5 summed over the ranks, exact; with one rank
     * (1 + 2^-10) * 1.5 lies half-way between two fp16 values and rounds
     * to the even one, 0x3e02. */
    static const struct {
        ncclDataType_t t;
        size_t size;
        uint16_t four, half, two, six;
    } narrow[] = {{ncclFloat16, 2, 0x4400, 0x3800, 0x4000, 0x4600},
                  {ncclBfloat16, 2, 0x4080, 0x3f00, 0x4000, 0x40c0},
                  {ncclFloat8e4m3, 1, 0x48, 0x30, 0x40, 0x4c}};
    for (size_t k = 0; k < sizeof narrow / sizeof narrow[0]; k++) {
        uint16_t in16[3], out16[3];
        uint16_t scalar = narrow[k].half;
        ncclRedOp_t op;
        NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, narrow[k].t, ncclScalarHostImmediate, comm));
        for (int i = 0; i < 3; i++)
            memcpy((char *)in16 + (size_t)i * narrow[k].size, &narrow[k].four, narrow[k].size);
        NCCL_OK(ncclAllReduce(in16, out16, 3, narrow[k].t, op, comm, NULL));
        uint16_t want = nranks == 1 ? narrow[k].two : narrow[k].six;
        for (int i = 0; i < 3; i++) /* ranks: 1 or 3 */
            NCCL_FAIL_IF(memcmp((char *)out16 + (size_t)i * narrow[k].size, &want, narrow[k].size),
                         "premul datatype %d: element %d wrong", (int)narrow[k].t, i);
        NCCL_OK(ncclRedOpDestroy(op, comm));
    }
    if (nranks == 1) {
        uint16_t x16 = 0x3c01, k15 = 0x3e00, y16; /* 1 + 2^-10, 1.5 */
        ncclRedOp_t op;
        NCCL_OK(ncclRedOpCreatePreMulSum(&op, &k15, ncclFloat16, ncclScalarHostImmediate, comm));
        NCCL_OK(ncclAllReduce(&x16, &y16, 1, ncclFloat16, op, comm, NULL));
        NCCL_FAIL_IF(y16 != 0x3e02, "premul fp16 rounding: %#x, not 0x3e02", y16);
        NCCL_OK(ncclRedOpDestroy(op, comm));
    }
    /* An operator made for fp32 refuses other datatypes; a destroyed one is gone. */
    NCCL_FAIL_IF(ncclAllReduce(xi, yi, 4, ncclInt32, op_half, comm, NULL) != ncclInvalidArgument,
                 "fp32 operator on int32 data accepted");
    NCCL_OK(ncclRedOpDestroy(op_half, comm));
    NCCL_FAIL_IF(ncclAllReduce(x, y, 6, ncclFloat32, op_half, comm, NULL) != ncclInvalidArgument,
                 "destroyed operator accepted");
    NCCL_FAIL_IF(!strstr(ncclGetLastError(comm), "ncclRedOpCreatePreMulSum"), "last error: %s",
                 ncclGetLastError(comm));
    NCCL_OK(ncclRedOpDestroy(op_later, comm));
    NCCL_OK(ncclRedOpDestroy(op_int, comm));
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(pre_multiplied_sums)
{
    static const int ranks[] = {1, 3};
    nccl_run(ranks[_i], premul, NULL, 60);
}
END_TEST

/* ncclCommInitRankScalable with two roots: 5 ranks, blocks 0-2 and 3-4;
 * the second id is made in rank 4's process (a rank of its block) and
 * passed on through shared memory, as an application all-gathers them. */
typedef struct {
    volatile int made;
    ncclUniqueId second;
} two_ids_t;

static int scalable(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    two_ids_t *sh = arg;
    if (rank == 4) {
        NCCL_OK(ncclGetUniqueId(&sh->second));
        __atomic_store_n(&sh->made, 1, __ATOMIC_RELEASE);
    }
    for (double until = nccl_now() + 10; !__atomic_load_n(&sh->made, __ATOMIC_ACQUIRE);)
        NCCL_FAIL_IF(nccl_now() > until, "rank %d: the second id never came", rank);
    ncclUniqueId ids[2] = {*id, sh->second};
    ncclComm_t comm;
    /* Rank 0 says at INIT level how many connections it admitted: its two
     * block mates and the other root, not the four other ranks. */
    FILE *log = tmpfile();
    int err = dup(2);
    NCCL_FAIL_IF(!log || err < 0 || dup2(fileno(log), 2) < 0, "rank %d: no log file", rank);
    ncclResult_t res = ncclCommInitRankScalable(&comm, nranks, rank, 2, ids, NULL);
    dup2(err, 2);
    NCCL_OK(res);
    char text[8192] = "";
    rewind(log);
    text[fread(text, 1, sizeof text - 1, log)] = '\0';
    NCCL_FAIL_IF(rank == 0 && !strstr(text, "admitted 3 connections as a root"), "rank 0's log: %s", text);
    int count, me;
    NCCL_OK(ncclCommCount(comm, &count));
    NCCL_OK(ncclCommUserRank(comm, &me));
    NCCL_FAIL_IF(count != nranks || me != rank, "rank %d: %d of %d", rank, me, count);
    float x = (float)(rank + 1);
    NCCL_OK(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL));
    NCCL_FAIL_IF(x != 15.0f, "rank %d: the sum is %g", rank, x);
    NCCL_FAILS(ncclCommInitRankScalable(&comm, nranks, rank, 6, ids, NULL), ncclInvalidArgument, "nId 6");
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(scalable_init_over_two_roots)
{
    two_ids_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    sh->made = 0;
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT", 1);
    nccl_run(5, scalable, sh, 60);
    unsetenv("NCCL_DEBUG");
    unsetenv("NCCL_DEBUG_SUBSYS");
    munmap(sh, sizeof *sh);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nccl");
    TCase *tc = tcase_create("nccl");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_datatype_and_operator_maps_to_its_tutti_value);
    tcase_add_loop_test(tc, every_collective_on_host_buffers, 0, 5);
    tcase_add_loop_test(tc, groups_of_sends_and_receives, 0, 5);
    tcase_add_test(tc, several_ranks_in_one_process);
    tcase_add_loop_test(tc, pre_multiplied_sums, 0, 2);
    tcase_add_test(tc, scalable_init_over_two_roots);
    suite_add_tcase(s, tc);
    return nccl_run_suite(s);
}
