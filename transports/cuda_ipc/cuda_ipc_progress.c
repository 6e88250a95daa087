/* SPDX-License-Identifier: MIT */
/*
 * cuda_ipc data path: single-producer single-consumer rings, as in shm,
 * with the headers in the receiver's host segment and the payload in the
 * sender's FIFO on its GPU. A slot is published (release store of its
 * seq) only once the copy into it has finished, and handed back (release
 * store of tail) only once the receiver's copy or reduction out of it has.
 */

#include "transports/cuda_ipc/cuda_ipc.h"
#include "transports/local.h"
#include "core/log.h"

static void fail_all(tt_ipc_conn_t *c, tutti_status_t st)
{
    if (!c->failed)
        c->failed = st;
    for (int i = 0; i < c->ctx->nchannels; i++) {
        for (tt_req_t *r = c->out[i].reqs; r; r = r->next)
            tt_req_finish(r, st);
        for (tt_req_t *r = c->in[i].reqs; r; r = r->next)
            tt_req_finish(r, st);
        c->out[i].reqs = c->in[i].reqs = NULL;
    }
}

static tutti_status_t fail_device(tt_ipc_conn_t *c, const char *what, int e)
{
    TT_ERROR(TT_SUB_NET, "cuda_ipc: %s (rank %d): %s", what, c->peer, c->ctx->be->error(e));
    fail_all(c, TUTTI_ERR_SYSTEM);
    return TUTTI_ERR_SYSTEM;
}

/* Slot i of the ring (receiver, channel) in the FIFO that starts at fifo. */
static char *payload(const tt_ipc_ctx_t *ctx, char *fifo, int receiver, int channel, uint64_t i)
{
    return fifo + tt_ipc_fifo_offset(ctx->nchannels, ctx->nslots, ctx->slot_bytes, receiver, channel) +
           (size_t)(i % (uint64_t)ctx->nslots) * ctx->slot_bytes;
}

static tutti_status_t queue(tt_ipc_conn_t *c, tt_req_t **head, tt_req_t *req)
{
    if (c->failed)
        return c->failed;
    req->state = TT_REQ_PENDING;
    req->done = 0;
    tt_req_queue_push(head, req);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_ipc_isend(void *connp, int channel, tt_req_t *req)
{
    tt_ipc_conn_t *c = connp;
    return queue(c, &c->out[channel].reqs, req);
}

tutti_status_t tt_ipc_irecv(void *connp, int channel, tt_req_t *req)
{
    tt_ipc_conn_t *c = connp;
    return queue(c, &c->in[channel].reqs, req);
}

static tutti_status_t push_some(tt_ipc_conn_t *c, int ch, int *progressed)
{
    tt_ipc_ctx_t *ctx = c->ctx;
    tt_ipc_side_t *side = &c->out[ch];
    while (side->reqs) {
        tt_req_t *r = side->reqs;
        if (side->pos - side->tail_seen >= (uint64_t)ctx->nslots) {
            side->tail_seen = atomic_load_explicit(&side->q->tail, memory_order_acquire);
            if (side->pos - side->tail_seen >= (uint64_t)ctx->nslots)
                return TUTTI_SUCCESS; /* the receiver has not freed a slot yet */
        }
        tt_local_slot_t *slot = &side->hdrs[side->pos % (uint64_t)ctx->nslots];
        size_t n = r->len - r->done < ctx->slot_bytes ? r->len - r->done : ctx->slot_bytes;
        int e =
            n ? ctx->be->copy(ctx->dev, payload(ctx, ctx->fifo, c->peer, ch, side->pos), r->buf + r->done, n)
              : 0; /* an empty message still takes one slot, but copies nothing */
        if (e)
            return fail_device(c, "copying into this rank's FIFO", e);
        slot->hdr = r->hdr;
        slot->offset = r->done;
        slot->nbytes = n;
        r->done += n;
        atomic_store_explicit(&slot->seq, ++side->pos, memory_order_release);
        *progressed = 1;
        if (r->done == r->len) {
            side->reqs = r->next;
            tt_req_finish(r, TUTTI_SUCCESS);
        }
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t pull_some(tt_ipc_conn_t *c, int ch, int *progressed)
{
    tt_ipc_ctx_t *ctx = c->ctx;
    tt_ipc_side_t *side = &c->in[ch];
    while (side->reqs) {
        tt_req_t *r = side->reqs;
        tt_local_slot_t *slot = &side->hdrs[side->pos % (uint64_t)ctx->nslots];
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) != side->pos + 1)
            return TUTTI_SUCCESS; /* not published yet */
        /* The peer wrote the header: read it once, and trust no size in it
         * beyond the slot of its FIFO. */
        r->got = slot->hdr;
        uint64_t offset = slot->offset, nbytes = slot->nbytes;
        if (!tt_msg_hdr_match(&r->hdr, &r->got) || offset != r->done || nbytes > r->len - r->done ||
            nbytes > ctx->slot_bytes) {
            fail_all(c, TUTTI_ERR_MISMATCH);
            return TUTTI_ERR_MISMATCH;
        }
        int e = 0;
        if (nbytes && !c->peer_fifo) { /* a direct run needs every FIFO open (tt_ipc_open_peers) */
            TT_ERROR(TT_SUB_NET, "cuda_ipc: rank %d's FIFO is not open on this rank", c->peer);
            fail_all(c, TUTTI_ERR_SYSTEM);
            return TUTTI_ERR_SYSTEM;
        }
        if (nbytes) {
            const char *src = payload(ctx, c->peer_fifo, ctx->env->rank, ch, side->pos);
            if (r->combine)
                r->combine(r->combine_ctx, r->done, src, nbytes);
            else
                e = ctx->be->copy(ctx->dev, r->buf + r->done, src, nbytes);
        }
        if (e)
            return fail_device(c, "copying out of the peer's FIFO", e);
        r->done += nbytes;
        atomic_store_explicit(&side->q->tail, ++side->pos, memory_order_release);
        *progressed = 1;
        if (r->done == r->len) {
            side->reqs = r->next;
            tt_req_finish(r, TUTTI_SUCCESS);
        }
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_ipc_progress(void *connp, int *progressed)
{
    tt_ipc_conn_t *c = connp;
    if (c->failed)
        return c->failed;
    tutti_status_t st = TUTTI_SUCCESS;
    for (int ch = 0; ch < c->ctx->nchannels && !st; ch++) {
        if (c->in[ch].reqs)
            st = pull_some(c, ch, progressed);
        if (!st && c->out[ch].reqs)
            st = push_some(c, ch, progressed);
    }
    return st;
}

tutti_status_t tt_ipc_alive(void *connp)
{
    tt_ipc_conn_t *c = connp;
    if (c->failed == TUTTI_ERR_ABORTED || c->failed == TUTTI_ERR_PEER_FAILED)
        return c->failed;
    if (atomic_load_explicit(&c->peer_seg->aborted, memory_order_acquire)) {
        fail_all(c, TUTTI_ERR_ABORTED);
        return TUTTI_ERR_ABORTED;
    }
    if (tt_local_gone(c->pidfd, c->pid)) {
        fail_all(c, TUTTI_ERR_PEER_FAILED);
        return TUTTI_ERR_PEER_FAILED;
    }
    return TUTTI_SUCCESS;
}
