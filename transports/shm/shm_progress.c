/* SPDX-License-Identifier: MIT */
/*
 * shm data path: single-producer single-consumer slot rings. The release
 * store of a slot's seq publishes it to the receiver; the release store
 * of tail hands the slot back to the sender.
 */
#include <string.h>

#include "transports/local.h"
#include "core/log.h"
#include "transports/shm/shm.h"

static tt_local_slot_t *slot_at(const tt_shm_side_t *side, uint64_t i)
{
    size_t stride = sizeof(tt_local_slot_t) + side->slot_bytes;
    return (tt_local_slot_t *)(side->slots + (size_t)(i % (uint64_t)side->nslots) * stride);
}

static void fail_all(tt_shm_conn_t *c, tutti_status_t st)
{
    if (!c->failed)
        c->failed = st;
    for (int i = 0; i < c->nchannels; i++) {
        for (tt_req_t *r = c->out[i].reqs; r; r = r->next)
            tt_req_finish(r, st);
        for (tt_req_t *r = c->in[i].reqs; r; r = r->next)
            tt_req_finish(r, st);
        c->out[i].reqs = c->in[i].reqs = NULL;
    }
}

tutti_status_t tt_shm_isend(void *connp, int channel, tt_req_t *req)
{
    tt_shm_conn_t *c = connp;
    return tt_req_queue_post(&c->out[channel].reqs, req, c->failed);
}

tutti_status_t tt_shm_irecv(void *connp, int channel, tt_req_t *req)
{
    tt_shm_conn_t *c = connp;
    return tt_req_queue_post(&c->in[channel].reqs, req, c->failed);
}

static void push_some(tt_shm_side_t *side, int *progressed)
{
    while (side->reqs) {
        tt_req_t *r = side->reqs;
        if (side->pos - side->tail_seen >= (uint64_t)side->nslots) {
            side->tail_seen = atomic_load_explicit(&side->q->tail, memory_order_acquire);
            if (side->pos - side->tail_seen >= (uint64_t)side->nslots)
                return; /* the receiver has not freed a slot yet */
        }
        tt_local_slot_t *slot = slot_at(side, side->pos);
        size_t n = r->len - r->done < side->slot_bytes ? r->len - r->done : side->slot_bytes;
        slot->hdr = r->hdr;
        slot->offset = r->done;
        slot->nbytes = n;
        if (n) /* an empty message still takes one slot, but copies nothing */
            memcpy(slot + 1, r->buf + r->done, n);
        r->done += n;
        atomic_store_explicit(&slot->seq, ++side->pos, memory_order_release);
        *progressed = 1;
        if (r->done == r->len) {
            side->reqs = r->next;
            tt_req_finish(r, TUTTI_SUCCESS);
        }
    }
}

static int pull_some(tt_shm_side_t *side, int *progressed)
{
    while (side->reqs) {
        tt_req_t *r = side->reqs;
        tt_local_slot_t *slot = slot_at(side, side->pos);
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) != side->pos + 1)
            return 0; /* not filled yet */
        /* The peer wrote the header: read it once, and trust no size in it
         * beyond the slot it sits in. */
        r->got = slot->hdr;
        uint64_t offset = slot->offset, nbytes = slot->nbytes;
        if (!tt_msg_hdr_match(&r->hdr, &r->got) || offset != r->done || nbytes > r->len - r->done ||
            nbytes > side->slot_bytes) {
            side->reqs = r->next;
            tt_req_finish(r, TUTTI_ERR_MISMATCH);
            return -1;
        }
        if (r->combine)
            r->combine(r->combine_ctx, r->done, slot + 1, nbytes);
        else if (nbytes)
            memcpy(r->buf + r->done, slot + 1, nbytes);
        r->done += nbytes;
        atomic_store_explicit(&side->q->tail, ++side->pos, memory_order_release);
        *progressed = 1;
        if (r->done == r->len) {
            side->reqs = r->next;
            tt_req_finish(r, TUTTI_SUCCESS);
        }
    }
    return 0;
}

int tt_shm_peek(void *connp, int channel, tt_msg_hdr_t *hdr)
{
    tt_shm_conn_t *c = connp;
    const tt_shm_side_t *side = &c->in[channel];
    if (c->failed || side->reqs)
        return 0; /* a receive owns the ring's head */
    const tt_local_slot_t *slot = slot_at(side, side->pos);
    if (atomic_load_explicit(&slot->seq, memory_order_acquire) != side->pos + 1)
        return 0;
    *hdr = slot->hdr;
    return 1;
}

tutti_status_t tt_shm_progress(void *connp, int *progressed)
{
    tt_shm_conn_t *c = connp;
    int moved = 0;
    if (c->failed)
        return c->failed;
    for (int i = 0; i < c->nchannels; i++) {
        if (c->in[i].reqs && pull_some(&c->in[i], &moved)) {
            fail_all(c, TUTTI_ERR_MISMATCH);
            return TUTTI_ERR_MISMATCH;
        }
        if (c->out[i].reqs)
            push_some(&c->out[i], &moved);
    }
    /* A slot published or freed is what a sleeping peer waits for. */
    if (moved) {
        *progressed = 1;
        tt_shm_ring(c);
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_shm_alive(void *connp)
{
    tt_shm_conn_t *c = connp;
    if (c->failed == TUTTI_ERR_ABORTED || c->failed == TUTTI_ERR_PEER_FAILED)
        return c->failed;
    /* The abort flag first: a rank that gave up and then exited aborted. */
    if (atomic_load_explicit(&c->peer_seg->aborted, memory_order_acquire)) {
        TT_DEBUG(TT_SUB_NET, "shm: rank %d aborted", c->peer);
        fail_all(c, TUTTI_ERR_ABORTED);
        return TUTTI_ERR_ABORTED;
    }
    if (tt_local_gone(c->pidfd, c->pid)) {
        TT_DEBUG(TT_SUB_NET, "shm: rank %d exited", c->peer);
        fail_all(c, TUTTI_ERR_PEER_FAILED);
        return TUTTI_ERR_PEER_FAILED;
    }
    return TUTTI_SUCCESS;
}
