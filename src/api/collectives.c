/* SPDX-License-Identifier: MIT */
/*
 * The public collectives: each builds its call and sends it where its
 * buffers say, to the device layer's queue or the host runner; and the one
 * switch from a tt_coll_t to its public call.
 */
#include "api/collectives.h"
#include "coll/coll.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "device/device_coll.h"

/* A plain collective's two ways (tt_device_route): to the device queue in
 * stream order, or the host runner after the queued device calls. */
static tutti_status_t enqueue_plain(tt_comm_t *comm, const tt_call_t *c, void *arg, void *stream)
{
    (void)arg;
    return tt_device_coll_enqueue(comm, c, stream);
}

static tutti_status_t run_plain(tt_comm_t *comm, const tt_call_t *c, void *arg)
{
    (void)arg;
    return tt_coll_run(comm, c);
}

/* Inside enter/leave: the caller's handle gives the communicator (live, of
 * this process), and tutti_comm_abort from another thread interrupts the
 * call and frees the communicator only after it returned. */
static tutti_status_t run_call(tutti_comm_t handle, tt_call_t *c, tutti_stream_t stream)
{
    tt_comm_t *comm;
    static const tt_device_route_t plain = {.enqueue = enqueue_plain, .run = run_plain};
    TT_TRY(tt_comm_enter(handle, tt_coll_name(c->coll), &comm));
    tutti_status_t st = tt_device_route(comm, c, tt_coll_name(c->coll), &plain, stream);
    tt_comm_leave(comm);
    return st;
}

TUTTI_API tutti_status_t tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm,
                                         tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE,
                   .send = sendbuf,
                   .recv = recvbuf,
                   .count = count,
                   .dtype = dtype,
                   .op = op};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                              tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm,
                                              tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_REDUCE_SCATTER,
                   .send = sendbuf,
                   .recv = recvbuf,
                   .count = recvcount,
                   .dtype = dtype,
                   .op = op};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                         tutti_dtype_t dtype, tutti_comm_t comm, tutti_stream_t stream)
{
    tt_call_t c = {
        .coll = TT_COLL_ALLGATHER, .send = sendbuf, .recv = recvbuf, .count = sendcount, .dtype = dtype};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                         tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_BROADCAST,
                   .send = sendbuf,
                   .recv = recvbuf,
                   .count = count,
                   .dtype = dtype,
                   .root = root};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_reduce(const void *sendbuf, void *recvbuf, size_t count, tutti_dtype_t dtype,
                                      tutti_op_t op, int root, tutti_comm_t comm, tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_REDUCE,
                   .send = sendbuf,
                   .recv = recvbuf,
                   .count = count,
                   .dtype = dtype,
                   .op = op,
                   .root = root};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_alltoall(const void *sendbuf, void *recvbuf, size_t count, tutti_dtype_t dtype,
                                        tutti_comm_t comm, tutti_stream_t stream)
{
    tt_call_t c = {
        .coll = TT_COLL_ALLTOALL, .send = sendbuf, .recv = recvbuf, .count = count, .dtype = dtype};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_barrier(tutti_comm_t comm, tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_BARRIER, .dtype = TUTTI_UINT8};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_send(const void *sendbuf, size_t count, tutti_dtype_t dtype, int peer,
                                    tutti_comm_t comm, tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_SEND, .send = sendbuf, .count = count, .dtype = dtype, .root = peer};
    return run_call(comm, &c, stream);
}

TUTTI_API tutti_status_t tutti_recv(void *recvbuf, size_t count, tutti_dtype_t dtype, int peer,
                                    tutti_comm_t comm, tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_RECV, .recv = recvbuf, .count = count, .dtype = dtype, .root = peer};
    return run_call(comm, &c, stream);
}

static tutti_status_t route_recv_any(tt_comm_t *comm, tt_call_t *c, int *source, tutti_stream_t stream)
{
    const char *name = "tutti_recv_any";
    if (!source)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: source: NULL", name);
    TT_TRY(tt_coll_validate(comm, c, name));
    TT_TRY(tt_device_classify(comm, c, name));
    if (c->recv_on_device || stream)
        return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED,
                             "%s: takes host memory and no stream; receive into a host buffer, then copy",
                             name);
    TT_TRY(tt_device_wait_turn(comm, name, NULL)); /* after the device calls queued before it */
    return tt_coll_recv_any(comm, c, source);
}

TUTTI_API tutti_status_t tutti_recv_any(void *recvbuf, size_t count, tutti_dtype_t dtype, int *source,
                                        tutti_comm_t handle, tutti_stream_t stream)
{
    tt_call_t c = {.coll = TT_COLL_RECV, .recv = recvbuf, .count = count, .dtype = dtype, .any_source = 1};
    tt_comm_t *comm;
    if (source)
        *source = -1;
    TT_TRY(tt_comm_enter(handle, "tutti_recv_any", &comm));
    tutti_status_t st = route_recv_any(comm, &c, source, stream);
    tt_comm_leave(comm);
    return st;
}

tutti_status_t tt_coll_call(tt_coll_t coll, const void *send, void *recv, size_t count, tutti_dtype_t dtype,
                            tutti_op_t op, int root, tutti_comm_t comm, tutti_stream_t stream)
{
    switch (coll) {
    case TT_COLL_ALLREDUCE: return tutti_allreduce(send, recv, count, dtype, op, comm, stream);
    case TT_COLL_REDUCE_SCATTER: return tutti_reduce_scatter(send, recv, count, dtype, op, comm, stream);
    case TT_COLL_ALLGATHER: return tutti_allgather(send, recv, count, dtype, comm, stream);
    case TT_COLL_BROADCAST: return tutti_broadcast(send, recv, count, dtype, root, comm, stream);
    case TT_COLL_REDUCE: return tutti_reduce(send, recv, count, dtype, op, root, comm, stream);
    case TT_COLL_ALLTOALL: return tutti_alltoall(send, recv, count, dtype, comm, stream);
    case TT_COLL_BARRIER: return tutti_barrier(comm, stream);
    case TT_COLL_SEND: return tutti_send(send, count, dtype, root, comm, stream);
    case TT_COLL_RECV: return tutti_recv(recv, count, dtype, root, comm, stream);
    case TT_COLL_COUNT: break;
    }
    return TUTTI_ERR_INVALID_ARG;
}
