/* SPDX-License-Identifier: MIT */
/*
 * The collective entry points: check arguments (naming the bad one), build
 * the schedule, size the slices, run the engine, finish avg.
 */
#include <stdint.h>
#include <string.h>

#include "tune/policy.h"
#include "coll/coll.h"
#include "comm/comm.h"
#include "device/queue.h"
#include "device/direct_run.h"
#include "core/dtype.h"
#include "coll/engine.h"
#include "core/log.h"
#include "device/memkind.h"

static int ranges_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen && blen && x < y + blen && y < x + alen;
}

/* Multiplier of count in the largest buffer of each collective. */
static size_t buffer_blocks(tt_coll_t coll, int nranks)
{
    switch (coll) {
    case TT_COLL_REDUCE_SCATTER:
    case TT_COLL_ALLGATHER:
    case TT_COLL_ALLTOALL: return (size_t)nranks;
    default: return 1;
    }
}

static tutti_status_t validate(tutti_comm_t comm, tt_call_t *c, const char *name)
{
    if (!tt_comm_valid(comm))
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "%s: comm is NULL or destroyed", name);
    if (comm->failed)
        return tt_comm_error(comm, TUTTI_ERR_ABORTED, "%s: this communicator failed earlier (%s); abort it",
                             name, tutti_strerror(comm->failed));
    if (!tt_dtype_valid(c->dtype))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: dtype: %d is not a tutti_dtype_t", name,
                             (int)c->dtype);
    if (!tt_op_valid(c->op))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: op: %d is not a tutti_op_t", name, (int)c->op);
    int p = comm->nranks, me = comm->rank;
    int has_root = c->coll == TT_COLL_BROADCAST || c->coll == TT_COLL_REDUCE;
    int is_p2p = c->coll == TT_COLL_SEND || c->coll == TT_COLL_RECV;
    if ((has_root || is_p2p) && (c->root < 0 || c->root >= p))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: %s: %d is outside 0..%d", name,
                             is_p2p ? "peer" : "root", c->root, p - 1);
    if (is_p2p && c->root == me)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: peer: %d is this rank itself", name, c->root);
    size_t elem = tutti_dtype_size(c->dtype), blocks = buffer_blocks(c->coll, p);
    if (c->count > SIZE_MAX / elem / blocks || c->count * elem * blocks > (size_t)INT64_MAX)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                             "%s: count: %zu elements of %s overflow the address space", name, c->count,
                             tutti_dtype_name(c->dtype));
    size_t bytes = c->count * elem;
    switch (c->coll) {
    case TT_COLL_ALLREDUCE:
        c->in_bytes = c->out_bytes = bytes;
        c->in_place = c->send == c->recv;
        break;
    case TT_COLL_REDUCE_SCATTER:
        c->in_bytes = bytes * (size_t)p;
        c->out_bytes = bytes;
        c->in_place = (const char *)c->send + bytes * (size_t)me == (const char *)c->recv;
        break;
    case TT_COLL_ALLGATHER:
        c->in_bytes = bytes;
        c->out_bytes = bytes * (size_t)p;
        c->in_place = (const char *)c->recv + bytes * (size_t)me == (const char *)c->send;
        break;
    case TT_COLL_BROADCAST:
        c->in_bytes = me == c->root ? bytes : 0;
        c->out_bytes = bytes;
        c->in_place = me == c->root && c->send == c->recv;
        break;
    case TT_COLL_REDUCE:
        c->in_bytes = bytes;
        c->out_bytes = me == c->root ? bytes : 0;
        c->in_place = me == c->root && c->send == c->recv;
        break;
    case TT_COLL_ALLTOALL:
        c->in_bytes = c->out_bytes = bytes * (size_t)p;
        c->in_place = c->send == c->recv;
        break;
    case TT_COLL_SEND: c->in_bytes = bytes; break;
    case TT_COLL_RECV: c->out_bytes = bytes; break;
    default: break;
    }
    if (c->in_bytes && !c->send)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: sendbuf: NULL with count %zu", name, c->count);
    if (c->out_bytes && !c->recv)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: recvbuf: NULL with count %zu", name, c->count);
    if (!c->in_place && ranges_overlap(c->send, c->in_bytes, c->recv, c->out_bytes))
        return tt_comm_error(
            comm, TUTTI_ERR_INVALID_ARG,
            "%s: sendbuf and recvbuf overlap but are not the in-place form (see tutti_collectives(3))", name);
    return TUTTI_SUCCESS;
}

static int moves_nothing(const tt_call_t *c)
{
    return c->count == 0 && c->coll != TT_COLL_BARRIER; /* every rank agrees on that */
}

static int is_p2p(const tt_call_t *c)
{
    return c->coll == TT_COLL_SEND || c->coll == TT_COLL_RECV;
}

tutti_status_t tt_coll_begin(tutti_comm_t comm, const tt_call_t *c, int capable, uint64_t *seq, int *direct)
{
    *seq = 0;
    *direct = 0;
    if (moves_nothing(c))
        return TUTTI_SUCCESS;
    if (is_p2p(c)) {
        *seq = (c->coll == TT_COLL_SEND ? comm->send_seq : comm->recv_seq)[c->root]++;
        return TUTTI_SUCCESS;
    }
    *seq = comm->coll_seq++;
    return tt_direct_agree(comm, *seq, capable, direct);
}

tutti_status_t tt_coll_run_host(tutti_comm_t comm, const tt_call_t *c)
{
    uint64_t seq;
    int direct;
    TT_TRY(tt_coll_begin(comm, c, 0, &seq, &direct));
    return tt_coll_run_at(comm, c, seq, NULL, NULL);
}

tutti_status_t tt_coll_run_at(tutti_comm_t comm, const tt_call_t *c, uint64_t seq, const tt_peer_t *peers,
                              const tt_mem_ops_t *mem)
{
    if (comm->failed) /* a queued device call, or a host call behind one, after a failure */
        return tt_comm_error(comm, TUTTI_ERR_ABORTED, "%s: this communicator failed earlier (%s); abort it",
                             tt_coll_name(c->coll), tutti_strerror(comm->failed));
    if (moves_nothing(c))
        return TUTTI_SUCCESS;
    tt_coll_args_t args = {.coll = c->coll,
                           .nranks = comm->nranks,
                           .rank = comm->rank,
                           .root = c->root,
                           .count = c->count,
                           .in_place = c->in_place,
                           .hosts = &comm->hosts};
    size_t bytes = c->in_bytes > c->out_bytes ? c->in_bytes : c->out_bytes;
    tt_tuned_t choice = tt_algo_choose(&comm->policy, &args, bytes, tutti_dtype_size(c->dtype));
    const tt_algorithm_t *algo = choice.algo;
    tutti_status_t st;
    const tt_sched_t *s = tt_sched_cache_get(&comm->sched_cache, algo, &args, &st);
    if (!s)
        return tt_comm_error(comm, st, "%s: building the schedule failed", tt_coll_name(c->coll));
    tt_exec_t x = {.coll = c->coll,
                   .wire_coll = is_p2p(c) ? TT_COLL_SEND : c->coll,
                   .dtype = c->dtype,
                   .op = c->op,
                   .root = is_p2p(c) ? 0 : c->root,
                   .count = c->count,
                   .seq = seq,
                   .elem = tutti_dtype_size(c->dtype),
                   .reduce = tt_reduce_get(c->dtype, c->op),
                   .stage = c->stage,
                   .peers = peers,
                   .mem = mem};
    x.bufs[TT_BUF_INPUT] = (char *)c->send;
    x.bufs[TT_BUF_OUTPUT] = c->recv;
    if (s->scratch_count) {
        size_t need = s->scratch_count * x.elem;
        void *scratch = NULL;
        st = mem ? (mem->scratch(mem->arg, need, &scratch) ? TUTTI_ERR_NO_MEMORY : TUTTI_SUCCESS)
                 : tt_comm_scratch(comm, need, &scratch);
        if (st)
            return tt_comm_error(comm, st, "%s: no memory for %zu bytes of scratch", tt_coll_name(c->coll),
                                 need);
        x.bufs[TT_BUF_SCRATCH] = scratch;
    }
    x.nslices = tt_tuner_slices(tt_tuner_chunk_bytes(&args, x.elem), choice.slice_bytes);
    if (comm->trace.round_end_ns && s->nrounds <= comm->trace.cap) {
        x.round_end_ns = comm->trace.round_end_ns;
        comm->trace.nrounds = s->nrounds;
        comm->trace.nslices = x.nslices;
        comm->trace.algo = algo;
    }
    TT_DEBUG(TT_SUB_COLL, "%s #%llu: count %zu %s %s, %s (%s %.1f us), %d rounds, %d slices%s",
             tt_coll_name(c->coll), (unsigned long long)seq, c->count, tutti_dtype_name(c->dtype),
             tutti_op_name(c->op), algo->name, choice.predicted < 0 ? "forced" : "tuner predicts",
             choice.predicted < 0 ? 0.0 : choice.predicted * 1e6, s->nrounds, x.nslices,
             mem ? ", direct on device buffers" : "");
    comm->bytes_sent += (uint64_t)s->sent_count * x.elem;
    st = tt_engine_run(comm, s, &x);
    if (!st && c->op == TUTTI_AVG && c->out_bytes && c->coll != TT_COLL_BROADCAST) {
        if (!mem)
            tt_reduce_avg_finish(c->recv, c->count, c->dtype, comm->nranks);
        else if (mem->avg_finish(mem->arg, c->recv, c->count, c->dtype, comm->nranks))
            st = tt_comm_error(comm, TUTTI_ERR_SYSTEM, "%s: dividing the average failed",
                               tt_coll_name(c->coll));
    }
    if (st)
        tt_comm_fail(comm, st);
    return st;
}

tutti_status_t tt_coll_prepare(tutti_comm_t comm, tt_call_t *c, const char *name)
{
    TT_TRY(validate(comm, c, name));
    c->send_on_device = c->in_bytes && tt_mem_kind(c->send) == TT_MEM_DEVICE;
    c->recv_on_device = c->out_bytes && tt_mem_kind(c->recv) == TT_MEM_DEVICE;
    char why[160];
    if ((c->send_on_device || c->recv_on_device) && !tt_device_supported(why, sizeof why))
        return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: %s is CUDA device memory, but %s", name,
                             c->send_on_device ? "sendbuf" : "recvbuf", why);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_coll_wait_turn(tutti_comm_t comm, const char *name, tutti_stream_t stream)
{
    if (stream)
        TT_TRY(tt_device_stream_wait(comm, name, stream));
    return tt_device_drain(comm);
}

tutti_status_t tt_coll_host(tutti_comm_t comm, tt_call_t *c)
{
    TT_TRY(validate(comm, c, tt_coll_name(c->coll)));
    return tt_coll_run_host(comm, c);
}

/* Device buffers go to the communicator's proxy thread in stream order;
 * host buffers run here, after the queued device calls and the stream's
 * earlier work. */
static tutti_status_t run_call(tutti_comm_t comm, tt_call_t *c, tutti_stream_t stream)
{
    const char *name = tt_coll_name(c->coll);
    TT_TRY(tt_coll_prepare(comm, c, name));
    if (c->send_on_device || c->recv_on_device)
        return tt_device_enqueue(comm, c, NULL, NULL, stream);
    TT_TRY(tt_coll_wait_turn(comm, name, stream));
    return tt_coll_run_host(comm, c);
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
