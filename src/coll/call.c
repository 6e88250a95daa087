/* SPDX-License-Identifier: MIT */
/* Argument checks of every collective, naming the bad argument, and each call's buffer sizes. */
#include <stdint.h>
#include <string.h>

#include "coll/coll.h"
#include "comm/error.h"
#include "comm/news.h"
#include "core/dtype.h"

static int ranges_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen && blen && x < y + blen && y < x + alen;
}

tutti_status_t tt_coll_validate(tt_comm_t *comm, tt_call_t *c, const char *name)
{
    TT_TRY(tt_comm_usable(comm, name));
    if (!tt_dtype_valid(c->dtype))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: dtype: %d is not a tutti_dtype_t", name,
                             (int)c->dtype);
    if (!tt_op_valid(c->op))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: op: %d is not a tutti_op_t", name, (int)c->op);
    int p = comm->nranks, me = comm->rank;
    int has_root = c->coll == TT_COLL_BROADCAST || c->coll == TT_COLL_REDUCE;
    int is_p2p = c->coll == TT_COLL_SEND || c->coll == TT_COLL_RECV;
    if (c->coll == TT_COLL_RECV && c->any_source)
        is_p2p = 0; /* its peer is not known yet */
    if ((has_root || is_p2p) && (c->root < 0 || c->root >= p))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: %s: %d is outside 0..%d", name,
                             is_p2p ? "peer" : "root", c->root, p - 1);
    if (is_p2p && c->root == me)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: peer: %d is this rank itself", name, c->root);
    size_t elem = tutti_dtype_size(c->dtype), blocks = tt_coll_count_per_rank(c->coll) ? (size_t)p : 1;
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
