/* SPDX-License-Identifier: MIT */
/*
 * NCCL's enums against tutti's, one explicit table each (the values differ:
 * NCCL has fp32 at 7 and max before min), results and their texts, and
 * the last error of each thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "core/log.h"
#include "nccl/nccl_int.h"

static _Thread_local char last_error[512];

/* ncclDataType_t -> tutti_dtype_t. */
static const struct {
    tutti_dtype_t tutti;
    const char *name;
} dtypes[ncclNumTypes] = {
    [ncclInt8] = {TUTTI_INT8, "ncclInt8"},
    [ncclUint8] = {TUTTI_UINT8, "ncclUint8"},
    [ncclInt32] = {TUTTI_INT32, "ncclInt32"},
    [ncclUint32] = {TUTTI_UINT32, "ncclUint32"},
    [ncclInt64] = {TUTTI_INT64, "ncclInt64"},
    [ncclUint64] = {TUTTI_UINT64, "ncclUint64"},
    [ncclFloat16] = {TUTTI_FP16, "ncclFloat16"},
    [ncclFloat32] = {TUTTI_FP32, "ncclFloat32"},
    [ncclFloat64] = {TUTTI_FP64, "ncclFloat64"},
    [ncclBfloat16] = {TUTTI_BF16, "ncclBfloat16"},
    [ncclFloat8e4m3] = {TUTTI_FP8_E4M3, "ncclFloat8e4m3"},
    [ncclFloat8e5m2] = {TUTTI_FP8_E5M2, "ncclFloat8e5m2"},
};

/* The built-in ncclRedOp_t -> tutti_op_t. */
static const tutti_op_t ops[ncclNumOps] = {
    [ncclSum] = TUTTI_SUM, [ncclProd] = TUTTI_PROD, [ncclMax] = TUTTI_MAX,
    [ncclMin] = TUTTI_MIN, [ncclAvg] = TUTTI_AVG,
};

ncclResult_t tt_nccl_dtype(ncclDataType_t in, tutti_dtype_t *out, const char *call)
{
    if ((unsigned)in >= ncclNumTypes)
        return tt_nccl_error(NULL, ncclInvalidArgument, "%s: datatype: %d is not an ncclDataType_t", call,
                             (int)in);
    *out = dtypes[in].tutti;
    return ncclSuccess;
}

ncclResult_t tt_nccl_op(ncclComm_t comm, ncclRedOp_t in, ncclDataType_t dtype, tutti_op_t *out,
                        const tt_nccl_redop_t **premul, const char *call)
{
    *premul = NULL;
    if ((unsigned)in < ncclNumOps) {
        *out = ops[in];
        return ncclSuccess;
    }
    unsigned slot = (unsigned)in - ncclNumOps;
    pthread_mutex_lock(&comm->lock);
    const tt_nccl_redop_t *r =
        slot < TT_NCCL_MAX_REDOPS && comm->redops[slot].used ? &comm->redops[slot] : NULL;
    ncclDataType_t made_for = r ? r->ndtype : dtype;
    pthread_mutex_unlock(&comm->lock);
    if (!r)
        return tt_nccl_error(
            comm, ncclInvalidArgument,
            "%s: op: %d is neither a built-in operator nor one ncclRedOpCreatePreMulSum made "
            "on this communicator",
            call, (int)in);
    if (made_for != dtype)
        return tt_nccl_error(
            comm, ncclInvalidArgument, "%s: op %d was made for %s, but the call's datatype is %s", call,
            (int)in, dtypes[made_for].name, (unsigned)dtype < ncclNumTypes ? dtypes[dtype].name : "?");
    *out = TUTTI_SUM;
    *premul = r;
    return ncclSuccess;
}

ncclResult_t tt_nccl_result(tutti_status_t st)
{
    switch (st) {
    case TUTTI_SUCCESS: return ncclSuccess;
    case TUTTI_ERR_INVALID_ARG: return ncclInvalidArgument;
    case TUTTI_ERR_NO_MEMORY: return ncclSystemError;
    case TUTTI_ERR_SYSTEM: return ncclSystemError;
    case TUTTI_ERR_TIMEOUT: return ncclRemoteError; /* a peer stopped answering */
    case TUTTI_ERR_PEER_FAILED: return ncclRemoteError;
    case TUTTI_ERR_MISMATCH: return ncclInvalidUsage; /* ranks called different collectives */
    case TUTTI_ERR_UNSUPPORTED: return ncclInvalidUsage;
    case TUTTI_ERR_AUTH: return ncclSystemError;
    case TUTTI_ERR_ABORTED: return ncclInvalidUsage; /* a call on a failed or aborted communicator */
    case TUTTI_ERR_CONFIG: return ncclInvalidUsage;
    case TUTTI_ERR_INTERNAL: return ncclInternalError;
    case TUTTI_ERR_REVOKED: return ncclInvalidUsage; /* as NCCL: "communicator was revoked" */
    }
    return ncclInternalError;
}

static void record(ncclComm_t comm, const char *text)
{
    snprintf(last_error, sizeof last_error, "%s", text);
    (void)comm;
}

ncclResult_t tt_nccl_error(ncclComm_t comm, ncclResult_t res, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    record(comm, text);
    TT_WARN(TT_SUB_COLL, "%s", text);
    return res;
}

ncclResult_t tt_nccl_context(ncclResult_t res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return res;
}

ncclResult_t tt_nccl_failed(ncclComm_t comm, tutti_status_t st)
{
    record(comm, tutti_comm_last_error(NULL));
    /* A call after a failure says ABORTED; NCCL returns the failure itself. */
    tt_comm_t *inner = comm ? tt_nccl_inner(comm->tc) : NULL;
    if (st == TUTTI_ERR_ABORTED && inner && inner->failed && inner->failed != TUTTI_ERR_ABORTED)
        st = inner->failed;
    return tt_nccl_result(st);
}

static const char *result_text(ncclResult_t res)
{
    switch (res) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled CUDA error";
    case ncclSystemError: return "system error: out of memory, or a system call failed";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage, or a call tutti does not offer";
    case ncclRemoteError: return "a remote rank failed, exited or stopped answering";
    case ncclInProgress: return "operation in progress";
    case ncclNumResults: break;
    }
    return "unknown result code";
}

TT_NCCL_EXPORT const char *pncclGetErrorString(ncclResult_t result)
{
    return result_text(result);
}
TT_NCCL_ALIAS(ncclGetErrorString)

TT_NCCL_EXPORT const char *pncclGetLastError(ncclComm_t comm)
{
    /* This thread's last error, whichever communicator it came from (as
     * NCCL does); without one, what comm's background work failed with. */
    if (!last_error[0] && comm)
        tt_nccl_copy_error(comm, last_error, sizeof last_error);
    return last_error;
}
TT_NCCL_ALIAS(ncclGetLastError)
