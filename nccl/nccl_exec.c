/* SPDX-License-Identifier: MIT */
/*
 * Running NCCL calls on tutti: collectives through the public API (host or
 * device buffers, queued on the stream for device buffers); gather,
 * scatter and the sends and receives of a group as batches of
 * point-to-point calls (tt_coll_run_batch on host buffers, the device
 * queue's batch on device buffers), so that they cannot deadlock. A rank's
 * sends to itself are copies, paired with its receives from itself in
 * order, as NCCL pairs them.
 */
#include <stdlib.h>
#include <string.h>

#include "api/collectives.h"
#include "coll/coll.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "device/device_coll.h"
#include "device/memkind.h"
#include "device/queue.h"
#include "nccl/nccl_int.h"

/* A copy within this rank: the root's own block of a gather or scatter, a
 * send to itself. */
typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} local_t;

static tt_call_t p2p(tt_coll_t coll, const void *send, void *recv, size_t count, tutti_dtype_t dtype,
                     int peer)
{
    return (tt_call_t){
        .coll = coll, .send = send, .recv = recv, .count = count, .dtype = dtype, .root = peer};
}

/* On the stream when some buffer is device memory, else here (the caller
 * waited for the stream's earlier work). */
static tutti_status_t local_copies(tt_comm_t *inner, const local_t *copies, int n, void *stream,
                                   int on_device, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (!copies[i].bytes || copies[i].dst == copies[i].src)
            continue;
        if (!on_device) {
            memcpy(copies[i].dst, copies[i].src, copies[i].bytes);
            continue;
        }
        TT_TRY(tt_device_copy(inner, name, copies[i].dst, copies[i].src, copies[i].bytes, stream));
    }
    return TUTTI_SUCCESS;
}

static int device_copies(const local_t *copies, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= copies[i].bytes &&
               (tt_mem_kind(copies[i].dst) == TT_MEM_DEVICE || tt_mem_kind(copies[i].src) == TT_MEM_DEVICE);
    return any;
}

/* Validates calls, then runs the copies and the calls as one batch: queued
 * on stream when a buffer is device memory, else here. */
static tutti_status_t run_batch(tutti_comm_t tc, tt_call_t *calls, int n, const local_t *copies, int ncopies,
                                void *stream, const char *name)
{
    tt_comm_t *inner;
    TT_TRY(tt_comm_enter(tc, name, &inner));
    tutti_status_t st = TUTTI_SUCCESS;
    int on_device = device_copies(copies, ncopies);
    for (int i = 0; !st && i < n; i++) {
        st = tt_coll_validate(inner, &calls[i], name);
        if (!st)
            st = tt_device_classify(inner, &calls[i], name);
        on_device |= calls[i].send_on_device || calls[i].recv_on_device;
    }
    if (!st && !on_device)
        st = tt_device_wait_turn(inner, name, stream);
    if (!st)
        st = local_copies(inner, copies, ncopies, stream, on_device, name);
    if (!st && n > 0)
        st = on_device ? tt_device_batch_enqueue(inner, calls, n, stream, name)
                       : tt_coll_run_batch(inner, calls, n);
    tt_comm_leave(inner);
    return st;
}

/* Gather and scatter: the root receives (sends) a block from (to) every
 * other rank, which sends (receives) one. */
static tutti_status_t gather_scatter(tutti_comm_t tc, ncclComm_t comm, const tt_nccl_op_t *op,
                                     const char *name)
{
    int gather = op->kind == TT_NCCL_GATHER, p = comm->nranks, me = comm->rank, root = op->root;
    if (root < 0 || root >= p)
        return tt_comm_error(tt_nccl_inner(tc), TUTTI_ERR_INVALID_ARG, "%s: root: %d is outside 0..%d", name,
                             root, p - 1);
    size_t block = op->count * tutti_dtype_size(op->dtype);
    local_t own = {0};
    if (me == root && block) {
        if (!op->send || !op->recv)
            return tt_comm_error(tt_nccl_inner(tc), TUTTI_ERR_INVALID_ARG, "%s: %s: NULL on the root", name,
                                 op->send ? "recvbuff" : "sendbuff");
        own.dst = gather ? (char *)op->recv + (size_t)root * block : op->recv;
        own.src = gather ? op->send : (const char *)op->send + (size_t)root * block;
        own.bytes = block;
    }
    tt_call_t *calls = calloc((size_t)p, sizeof *calls);
    if (!calls)
        return tt_comm_error(tt_nccl_inner(tc), TUTTI_ERR_NO_MEMORY, "%s: no memory for %d calls", name, p);
    int n = 0;
    if (me != root)
        calls[n++] = gather ? p2p(TT_COLL_SEND, op->send, NULL, op->count, op->dtype, root)
                            : p2p(TT_COLL_RECV, NULL, op->recv, op->count, op->dtype, root);
    for (int q = 0; me == root && q < p; q++)
        if (q != root)
            calls[n++] = gather ? p2p(TT_COLL_RECV, NULL, (char *)op->recv + (size_t)q * block, op->count,
                                      op->dtype, q)
                                : p2p(TT_COLL_SEND, (const char *)op->send + (size_t)q * block, NULL,
                                      op->count, op->dtype, q);
    tutti_status_t st = run_batch(tc, calls, n, &own, 1, op->stream, name);
    free(calls);
    return st;
}

/* Sends and receives run together as one batch (tt_nccl_run), not here. */
static tutti_status_t run_coll(tutti_comm_t tc, ncclComm_t comm, const tt_nccl_op_t *op)
{
    if (op->kind == TT_NCCL_GATHER || op->kind == TT_NCCL_SCATTER)
        return gather_scatter(tc, comm, op, op->kind == TT_NCCL_GATHER ? "ncclGather" : "ncclScatter");
    if (op->kind == TT_COLL_SEND || op->kind == TT_COLL_RECV || op->kind < 0 || op->kind >= TT_COLL_COUNT)
        return TUTTI_ERR_INTERNAL;
    return tt_coll_call((tt_coll_t)op->kind, op->send, op->recv, op->count, op->dtype, op->op, op->root, tc,
                        op->stream);
}

static int is_p2p(const tt_nccl_op_t *op)
{
    return op->kind == TT_COLL_SEND || op->kind == TT_COLL_RECV;
}

/* The k-th send of this rank to itself meets its k-th receive from itself;
 * count and type must agree. */
static tutti_status_t pair_self(tutti_comm_t tc, const tt_nccl_op_t *ops, int n, int me, local_t *copies,
                                int *ncopies)
{
    int r = 0, nsend = 0, nrecv = 0;
    for (int i = 0; i < n; i++) {
        nsend += ops[i].kind == TT_COLL_SEND && ops[i].root == me;
        nrecv += ops[i].kind == TT_COLL_RECV && ops[i].root == me;
    }
    if (nsend != nrecv)
        return tt_comm_error(tt_nccl_inner(tc), TUTTI_ERR_MISMATCH,
                             "ncclGroupEnd: rank %d sends to itself %d times but receives %d", me, nsend,
                             nrecv);
    *ncopies = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i].kind != TT_COLL_SEND || ops[i].root != me)
            continue;
        while (ops[r].kind != TT_COLL_RECV || ops[r].root != me)
            r++;
        const tt_nccl_op_t *s = &ops[i], *d = &ops[r++];
        if (s->count != d->count || s->dtype != d->dtype)
            return tt_comm_error(tt_nccl_inner(tc), TUTTI_ERR_MISMATCH,
                                 "ncclGroupEnd: rank %d sends %zu %s to itself but receives %zu %s", me,
                                 s->count, tutti_dtype_name(s->dtype), d->count, tutti_dtype_name(d->dtype));
        copies[(*ncopies)++] = (local_t){d->recv, s->send, s->count * tutti_dtype_size(s->dtype)};
    }
    return TUTTI_SUCCESS;
}

/* Every send and receive of ops as one batch, on the first one's stream (a
 * group's point-to-point calls on one communicator share a stream). */
static tutti_status_t run_p2p(tutti_comm_t tc, int me, const tt_nccl_op_t *ops, int n)
{
    tt_call_t *calls = calloc((size_t)n, sizeof *calls);
    local_t *copies = calloc((size_t)n, sizeof *copies);
    int k = 0, first = -1, ncopies = 0;
    tutti_status_t st =
        calls && copies ? pair_self(tc, ops, n, me, copies, &ncopies)
                        : tt_comm_error(tt_nccl_inner(tc), TUTTI_ERR_NO_MEMORY, "no memory for %d calls", n);
    for (int i = 0; !st && i < n; i++) {
        if (!is_p2p(&ops[i]))
            continue;
        if (first < 0)
            first = i;
        else if (ops[i].stream != ops[first].stream)
            st = tt_comm_error(
                tt_nccl_inner(tc), TUTTI_ERR_UNSUPPORTED,
                "ncclGroupEnd: the sends and receives of one communicator in a group use several "
                "streams; tutti runs them as one batch on one stream");
        if (ops[i].root != me)
            calls[k++] = ops[i].kind == TT_COLL_SEND
                             ? p2p(TT_COLL_SEND, ops[i].send, NULL, ops[i].count, ops[i].dtype, ops[i].root)
                             : p2p(TT_COLL_RECV, NULL, ops[i].recv, ops[i].count, ops[i].dtype, ops[i].root);
    }
    const char *name = k == 1 && !ncopies ? tt_coll_name(calls[0].coll) : "ncclGroupEnd";
    if (!st && first >= 0)
        st = run_batch(tc, calls, k, copies, ncopies, ops[first].stream, name);
    free(calls);
    free(copies);
    return st;
}

ncclResult_t tt_nccl_run(ncclComm_t comm, const tt_nccl_op_t *ops, int n)
{
    tutti_comm_t tc = tt_nccl_tc(comm);
    int any_p2p = 0;
    for (int i = 0; i < n; i++) {
        if (is_p2p(&ops[i])) {
            any_p2p = 1;
            continue;
        }
        if (ops[i].has_premul) {
            ncclResult_t res = tt_nccl_run_premul(tc, &ops[i]);
            if (res)
                return res;
            continue;
        }
        tutti_status_t st = run_coll(tc, comm, &ops[i]);
        if (st)
            return tt_nccl_failed(comm, st);
    }
    tutti_status_t st = any_p2p ? run_p2p(tc, comm->rank, ops, n) : TUTTI_SUCCESS;
    return st ? tt_nccl_failed(comm, st) : ncclSuccess;
}
