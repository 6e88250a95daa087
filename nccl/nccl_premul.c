/* SPDX-License-Identifier: MIT */
/*
 * ncclRedOpCreatePreMulSum: each rank multiplies its input by a scalar,
 * then the ranks sum. tutti does exactly that: the input is scaled into a
 * temporary (tt_reduce_scale on the CPU, tt_cuda_scale on the stream for
 * device buffers), and the collective sums from it. The product is rounded
 * to the datatype before the sum (fp16, bf16, fp8 through fp32).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/collectives.h"
#include "comm/error.h"
#include "device/memkind.h"
#include "device/queue.h"
#include "nccl/nccl_int.h"
#include "reduce/reduce.h"

TT_NCCL_EXPORT ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                      ncclScalarResidence_t residence, ncclComm_t comm)
{
    const char *call = "ncclRedOpCreatePreMulSum";
    ncclResult_t res = tt_nccl_enter(&comm, call);
    if (res)
        return res;
    tt_nccl_redop_t r = {.used = 1, .ndtype = datatype};
    if (!op || !scalar)
        res = tt_nccl_error(comm, ncclInvalidArgument, "%s: %s: NULL pointer", call, op ? "scalar" : "op");
    else if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
        res = tt_nccl_error(comm, ncclInvalidArgument, "%s: residence: %d is not an ncclScalarResidence_t",
                            call, (int)residence);
    if (!res)
        res = tt_nccl_dtype(datatype, &r.dtype, call);
    if (!res && residence == ncclScalarHostImmediate)
        memcpy(r.value, scalar, tutti_dtype_size(r.dtype));
    r.on_pointer = residence == ncclScalarDevice;
    r.scalar_ptr = scalar;
    int slot = -1;
    pthread_mutex_lock(&comm->lock);
    for (int i = 0; !res && i < TT_NCCL_MAX_REDOPS && slot < 0; i++)
        if (!comm->redops[i].used) {
            comm->redops[i] = r;
            slot = i;
        }
    pthread_mutex_unlock(&comm->lock);
    if (!res && slot < 0)
        res = tt_nccl_error(comm, ncclInvalidUsage,
                            "%s: %d operators are live on this communicator; destroy some", call,
                            TT_NCCL_MAX_REDOPS);
    if (!res)
        *op = (ncclRedOp_t)(ncclNumOps + slot);
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclRedOpCreatePreMulSum)

TT_NCCL_EXPORT ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    ncclResult_t res = tt_nccl_enter(&comm, "ncclRedOpDestroy");
    if (res)
        return res;
    unsigned slot = (unsigned)op - ncclNumOps;
    pthread_mutex_lock(&comm->lock);
    int ok = (unsigned)op >= ncclNumOps && slot < TT_NCCL_MAX_REDOPS && comm->redops[slot].used;
    if (ok)
        comm->redops[slot].used = 0;
    pthread_mutex_unlock(&comm->lock);
    if (!ok)
        res =
            tt_nccl_error(comm, ncclInvalidArgument,
                          "ncclRedOpDestroy: op: %d is not an operator ncclRedOpCreatePreMulSum made on this "
                          "communicator",
                          (int)op);
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclRedOpDestroy)

/* The sum itself, from the scaled input. */
static tutti_status_t sum_from(tutti_comm_t tc, const tt_nccl_op_t *op, const void *scaled)
{
    if (op->kind < 0 || op->kind >= TT_COLL_COUNT || !tt_coll_reduces((tt_coll_t)op->kind))
        return TUTTI_ERR_INTERNAL;
    return tt_coll_call((tt_coll_t)op->kind, scaled, op->recv, op->count, op->dtype, TUTTI_SUM, op->root, tc,
                        op->stream);
}

/* The scalar's bytes as the collective runs: a device residence reads the
 * pointer now (host memory, tutti's extension, or device memory). */
static tutti_status_t scalar_now(tutti_comm_t tc, const tt_nccl_redop_t *r, unsigned char *out,
                                 const char *name)
{
    size_t elem = tutti_dtype_size(r->dtype);
    if (!r->on_pointer) {
        memcpy(out, r->value, elem);
        return TUTTI_SUCCESS;
    }
    if (tt_mem_kind(r->scalar_ptr) != TT_MEM_DEVICE) {
        memcpy(out, r->scalar_ptr, elem);
        return TUTTI_SUCCESS;
    }
    /* The host path waited for the stream: the scalar is there, once the
     * default stream has copied it. */
    TT_TRY(tt_device_copy(tt_nccl_inner(tc), name, out, r->scalar_ptr, elem, NULL));
    return tt_device_stream_wait(tt_nccl_inner(tc), name, NULL);
}

/* Host buffers: the stream's earlier work, then the scaling here. */
static tutti_status_t premul_host(tutti_comm_t tc, const tt_nccl_op_t *op, size_t n, const char *name)
{
    unsigned char k[8];
    if (op->stream)
        TT_TRY(tt_device_stream_wait(tt_nccl_inner(tc), name, op->stream));
    TT_TRY(scalar_now(tc, &op->premul, k, name));
    void *scaled = malloc(n * tutti_dtype_size(op->dtype));
    if (!scaled)
        return tt_comm_error(tt_nccl_inner(tc), TUTTI_ERR_NO_MEMORY, "%s: no memory to scale %zu elements",
                             name, n);
    tt_reduce_scale(scaled, op->send, n, op->dtype, k);
    tutti_status_t st = sum_from(tc, op, scaled);
    free(scaled);
    return st;
}

/* Device buffers: a temporary from the stream's pool, the scaling kernel
 * and the sum queued on the stream, the temporary freed after them. */
static tutti_status_t premul_device(tutti_comm_t tc, const tt_nccl_op_t *op, size_t n, const char *name)
{
    unsigned char k[8] = {0};
    const tt_nccl_redop_t *r = &op->premul;
    tt_comm_t *inner = tt_nccl_inner(tc);
    const void *k_dev = r->on_pointer && tt_mem_kind(r->scalar_ptr) == TT_MEM_DEVICE ? r->scalar_ptr : NULL;
    if (!k_dev)
        TT_TRY(scalar_now(tc, r, k, name));
    void *scaled = NULL;
    TT_TRY(tt_device_alloc(inner, name, n * tutti_dtype_size(op->dtype), op->stream, &scaled));
    tutti_status_t st = tt_device_scale(inner, name, scaled, op->send, n, op->dtype, k_dev, k, op->stream);
    if (!st)
        st = sum_from(tc, op, scaled);
    tt_device_free(scaled, op->stream);
    return st;
}

ncclResult_t tt_nccl_run_premul(tutti_comm_t tc, const tt_nccl_op_t *op)
{
    const char *name = op->kind == TT_COLL_ALLREDUCE ? "ncclAllReduce"
                       : op->kind == TT_COLL_REDUCE  ? "ncclReduce"
                                                     : "ncclReduceScatter";
    size_t blocks = tt_coll_count_per_rank((tt_coll_t)op->kind) ? (size_t)op->comm->nranks : 1;
    size_t n = op->count * blocks;
    int send_dev = op->send && tt_mem_kind(op->send) == TT_MEM_DEVICE;
    int recv_dev = op->recv && tt_mem_kind(op->recv) == TT_MEM_DEVICE;
    tutti_status_t st;
    if (n == 0 || !op->send || op->count > SIZE_MAX / 16 / blocks)
        st = sum_from(tc, op, op->send); /* nothing to scale: tutti checks the arguments */
    else if (!send_dev && recv_dev)      /* the host temporary would go before the queued call read it */
        st = tt_comm_error(
            tt_nccl_inner(tc), TUTTI_ERR_UNSUPPORTED,
            "%s: a pre-multiplied sum from host memory into device memory; use buffers of one kind", name);
    else if (send_dev)
        st = premul_device(tc, op, n, name);
    else
        st = premul_host(tc, op, n, name);
    return st ? tt_nccl_failed(op->comm, st) : ncclSuccess;
}
