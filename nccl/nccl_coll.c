/* SPDX-License-Identifier: MIT */
/*
 * The collectives and point-to-point calls of the NCCL API: each checks its
 * communicator, translates its datatype and operator, and is run now or
 * kept for the end of the group open on this thread.
 */
#include "nccl/nccl_int.h"

#define NO_OP ((ncclRedOp_t)-1)

static ncclResult_t submit(int kind, const void *send, void *recv, size_t count, ncclDataType_t dtype,
                           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream, const char *call)
{
    ncclResult_t res = tt_nccl_enter(&comm, call);
    if (res) {
        tt_nccl_group_note(res);
        return res;
    }
    tt_nccl_op_t o = {.kind = kind,
                      .send = send,
                      .recv = recv,
                      .count = count,
                      .op = TUTTI_SUM,
                      .root = root,
                      .comm = comm,
                      .stream = (void *)stream};
    res = tt_nccl_dtype(dtype, &o.dtype, call);
    const tt_nccl_redop_t *premul = NULL;
    if (!res && op != NO_OP)
        res = tt_nccl_op(comm, op, dtype, &o.op, &premul, call);
    if (!res && premul) {
        o.has_premul = 1;
        o.premul = *premul;
    }
    if (!res)
        res = tt_nccl_submit(&o, call);
    else
        tt_nccl_group_note(res);
    tt_nccl_leave(comm);
    return res;
}

TT_NCCL_EXPORT ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream)
{
    return submit(TT_COLL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream,
                  "ncclAllReduce");
}
TT_NCCL_ALIAS(ncclAllReduce)

TT_NCCL_EXPORT ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                        cudaStream_t stream)
{
    return submit(TT_COLL_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream, "ncclReduce");
}
TT_NCCL_ALIAS(ncclReduce)

TT_NCCL_EXPORT ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                           ncclDataType_t datatype, int root, ncclComm_t comm,
                                           cudaStream_t stream)
{
    return submit(TT_COLL_BROADCAST, sendbuff, recvbuff, count, datatype, NO_OP, root, comm, stream,
                  "ncclBroadcast");
}
TT_NCCL_ALIAS(ncclBroadcast)

TT_NCCL_EXPORT ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                       ncclComm_t comm, cudaStream_t stream)
{
    return submit(TT_COLL_BROADCAST, buff, buff, count, datatype, NO_OP, root, comm, stream, "ncclBcast");
}
TT_NCCL_ALIAS(ncclBcast)

TT_NCCL_EXPORT ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return submit(TT_COLL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, NO_OP, 0, comm, stream,
                  "ncclAllGather");
}
TT_NCCL_ALIAS(ncclAllGather)

TT_NCCL_EXPORT ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                               cudaStream_t stream)
{
    return submit(TT_COLL_REDUCE_SCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream,
                  "ncclReduceScatter");
}
TT_NCCL_ALIAS(ncclReduceScatter)

TT_NCCL_EXPORT ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return submit(TT_COLL_ALLTOALL, sendbuff, recvbuff, count, datatype, NO_OP, 0, comm, stream,
                  "ncclAlltoAll");
}
TT_NCCL_ALIAS(ncclAlltoAll)

TT_NCCL_EXPORT ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream)
{
    return submit(TT_NCCL_GATHER, sendbuff, recvbuff, count, datatype, NO_OP, root, comm, stream,
                  "ncclGather");
}
TT_NCCL_ALIAS(ncclGather)

TT_NCCL_EXPORT ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm,
                                         cudaStream_t stream)
{
    return submit(TT_NCCL_SCATTER, sendbuff, recvbuff, count, datatype, NO_OP, root, comm, stream,
                  "ncclScatter");
}
TT_NCCL_ALIAS(ncclScatter)

TT_NCCL_EXPORT ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                      ncclComm_t comm, cudaStream_t stream)
{
    return submit(TT_COLL_SEND, sendbuff, NULL, count, datatype, NO_OP, peer, comm, stream, "ncclSend");
}
TT_NCCL_ALIAS(ncclSend)

TT_NCCL_EXPORT ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                      ncclComm_t comm, cudaStream_t stream)
{
    return submit(TT_COLL_RECV, NULL, recvbuff, count, datatype, NO_OP, peer, comm, stream, "ncclRecv");
}
TT_NCCL_ALIAS(ncclRecv)
