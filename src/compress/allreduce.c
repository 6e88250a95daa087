/* SPDX-License-Identifier: MIT */
/*
 * tutti_allreduce_compressed: its arguments checked, then routed as every
 * collective is: host buffers to the CPU path (allreduce_cpu.c) on the
 * caller's thread, device buffers queued on the stream (allreduce_queue.c).
 */
#include "comm/comm.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "compress/allreduce.h"
#include "core/dtype.h"
#include "device/device_coll.h"

/* The checks of the compression's own arguments; the buffers are checked
 * as the all-reduce's. */
static tutti_status_t check_args(tt_comm_t *comm, const void *send, void *recv, size_t count,
                                 tutti_dtype_t dtype, tutti_op_t op, const tutti_compress_t *how,
                                 tutti_ef_state_t ef, const char *name)
{
    if (!how)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: how is NULL", name);
    if ((unsigned)how->kind > TUTTI_COMPRESS_SIGN)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: how->kind: %d is not a tutti_compress_kind_t",
                             name, (int)how->kind);
    if (dtype != TUTTI_FP32 && dtype != TUTTI_FP16 && dtype != TUTTI_BF16)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: dtype: %s; only fp32, fp16 and bf16 compress",
                             name, tt_dtype_valid(dtype) ? tutti_dtype_name(dtype) : "invalid");
    if (op != TUTTI_SUM && op != TUTTI_AVG)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: op: only sum and avg compress", name);
    if (count && (!send || !recv))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: %s is NULL", name,
                             !send ? "sendbuf" : "recvbuf");
    if (count > UINT32_MAX)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: count: at most 2^32 - 1 elements", name);
    if (how->kind == TUTTI_COMPRESS_TOPK && (how->density < 0 || how->density > 1))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: how->density: %g is outside [0, 1]", name,
                             how->density);
    if (how->rounding != TUTTI_ROUND_NEAREST && how->rounding != TUTTI_ROUND_STOCHASTIC)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: how->rounding: %d", name, (int)how->rounding);
    int feedback = how->kind != TUTTI_COMPRESS_NONE && !how->no_error_feedback;
    if (feedback && !ef)
        return tt_comm_error(
            comm, TUTTI_ERR_INVALID_ARG,
            "%s: state is NULL but error feedback is on (tutti_ef_create, or set no_error_feedback)", name);
    if (feedback && (ef->count != count || ef->nranks != comm->nranks))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                             "%s: state was made for %zu elements on %d ranks, the call has %zu on %d", name,
                             ef->count, ef->nranks, count, comm->nranks);
    return TUTTI_SUCCESS;
}

static tutti_status_t compressed(const void *sendbuf, void *recvbuf, size_t count, tutti_dtype_t dtype,
                                 tutti_op_t op, const tutti_compress_t *how, tutti_ef_state_t state,
                                 tt_comm_t *comm, tutti_stream_t stream);

/* How a call compresses and its error feedback, for its route. */
typedef struct {
    const tutti_compress_t *how;
    tutti_ef_state_t ef;
} compressed_t;

static tutti_status_t enqueue_compressed(tt_comm_t *comm, const tt_call_t *c, void *arg, void *stream)
{
    const compressed_t *x = arg;
    return tt_compress_enqueue(comm, c, x->how, x->ef, stream);
}

static tutti_status_t run_compressed(tt_comm_t *comm, const tt_call_t *c, void *arg)
{
    const compressed_t *x = arg;
    return tt_compress_run(comm, c, x->how, x->ef);
}

/* Device buffers go to the communicator's proxy thread in stream order,
 * as every collective's do: it runs allreduce_gpu.c's GPU path when both
 * buffers are on the GPU, and otherwise the CPU path below on staged copies. */
TUTTI_API tutti_status_t tutti_allreduce_compressed(const void *sendbuf, void *recvbuf, size_t count,
                                                    tutti_dtype_t dtype, tutti_op_t op,
                                                    const tutti_compress_t *how, tutti_ef_state_t state,
                                                    tutti_comm_t handle, tutti_stream_t stream)
{
    tt_comm_t *comm;
    TT_TRY(tt_comm_enter(handle, TT_COMPRESS_CALL, &comm));
    tutti_status_t st = compressed(sendbuf, recvbuf, count, dtype, op, how, state, comm, stream);
    tt_comm_leave(comm);
    return st;
}

/* The public call's body, inside enter/leave. */
static tutti_status_t compressed(const void *sendbuf, void *recvbuf, size_t count, tutti_dtype_t dtype,
                                 tutti_op_t op, const tutti_compress_t *how, tutti_ef_state_t state,
                                 tt_comm_t *comm, tutti_stream_t stream)
{
    const char *name = TT_COMPRESS_CALL;
    TT_TRY(check_args(comm, sendbuf, recvbuf, count, dtype, op, how, state, name));
    tutti_ef_state_t ef = how->no_error_feedback ? NULL : state;
    tt_call_t call = {.coll = TT_COLL_ALLREDUCE,
                      .send = sendbuf,
                      .recv = recvbuf,
                      .count = count,
                      .dtype = dtype,
                      .op = op};
    compressed_t how_ef = {how, ef};
    tt_device_route_t route = {.enqueue = enqueue_compressed, .run = run_compressed, .arg = &how_ef};
    return tt_device_route(comm, &call, name, &route, stream);
}
