/* SPDX-License-Identifier: MIT */
/*
 * The sending side of a channel, one message at a time in posting order.
 * A message's first piece carries its header (the call's signature) into the
 * receiver's next slot; a small message fits there with its payload, or
 * follows in more slots, each taking a credit. A large message (from
 * TUTTI_IB_ZCOPY_BYTES) sends its header alone, then waits for the
 * receiver's RTR: if the receiver offers its registered buffer, the payload
 * is written there in one write with immediate straight from the sender's
 * registered buffer (no copy on either side); otherwise (the receiver
 * reduces it, or a buffer could not be registered) it goes through slots.
 */
#include <string.h>

#include "transports/verbs/verbs.h"

enum { PHASE_SLOTS = 0, PHASE_WAIT_RTR, PHASE_DIRECT, PHASE_DIRECT_POSTED };

#define MAX_WRITE (1ull << 30) /* bytes in one RDMA write: ports take up to 1 or 2 GiB */

/* Copies [hdr] + n payload bytes into the next slot and writes it to the
 * peer's matching slot. 0 when posted, 1 when out of credits or queue room. */
static int post_piece(tt_verbs_conn_t *c, int ch, const tt_msg_hdr_t *hdr, const char *payload, size_t n)
{
    tt_verbs_tx_t *tx = &c->tx[ch];
    int qi = ch % c->nqps;
    if (tx->slots_used - tx->credits >= (uint64_t)c->nslots || !tt_verbs_sq_room(&c->qp[qi]))
        return 1;
    char *stage = c->region + tt_verbs_stage_off(c, ch, tx->slots_used);
    size_t h = hdr ? sizeof *hdr : 0;
    if (hdr)
        memcpy(stage, hdr, h);
    memcpy(stage + h, payload, n);
    /* The staging slot is reused only after the receiver has returned the
     * credit for it, which it can do only once this write has landed. */
    int rc = tt_verbs_post_write(c, qi, stage, c->mr->lkey, h + n,
                                 c->peer_region + tt_verbs_ring_off(c, ch, tx->slots_used), c->peer_rkey,
                                 TT_IMM(TT_IMM_DATA, ch, 0), TT_WR_SIGNAL, ch);
    if (rc == 0)
        tx->slots_used++;
    return rc;
}

static void finish_head(tt_verbs_tx_t *tx, int *progressed)
{
    tt_req_t *r = tx->q;
    tx->q = r->next;
    tx->hdr_sent = 0;
    tx->phase = PHASE_SLOTS;
    tx->off = 0;
    tt_req_finish(r, TUTTI_SUCCESS);
    *progressed = 1;
}

/* Takes the RTR of the head message and chooses how its payload goes. */
static void take_rtr(tt_verbs_conn_t *c, int ch, tt_req_t *r, int *progressed)
{
    tt_verbs_tx_t *tx = &c->tx[ch];
    const tt_verbs_rtr_t *d = (const tt_verbs_rtr_t *)(c->region + tt_verbs_rtr_in_off(c, ch, tx->rtr_used));
    tx->rtr_used++;
    tx->dst = *d;
    tx->phase = PHASE_SLOTS;
    if (d->direct && d->bytes == r->len) {
        tx->reg = tt_verbs_cache_get(c->dev->cache, r->buf, r->len, 0);
        if (tx->reg)
            tx->phase = PHASE_DIRECT;
    }
    *progressed = 1;
}

/* Writes the payload into the receiver's buffer; the last write carries
 * the immediate that completes the receive, and is signalled. */
static int post_direct(tt_verbs_conn_t *c, int ch, tt_req_t *r)
{
    tt_verbs_tx_t *tx = &c->tx[ch];
    int qi = ch % c->nqps;
    uint32_t lkey = tt_verbs_reg_mr(tx->reg)->lkey;
    while (tx->off < r->len) {
        size_t n = r->len - tx->off < MAX_WRITE ? r->len - tx->off : MAX_WRITE;
        int last = tx->off + n == r->len;
        int rc = tt_verbs_post_write(c, qi, r->buf + tx->off, lkey, n, tx->dst.addr + tx->off, tx->dst.rkey,
                                     last ? TT_IMM(TT_IMM_ZDONE, ch, 0) : 0,
                                     last ? TT_WR_ZCOPY : TT_WR_SIGNAL, ch);
        if (rc)
            return rc;
        tx->off += n;
    }
    tx->phase = PHASE_DIRECT_POSTED;
    return 0;
}

void tt_verbs_tx_drive(tt_verbs_conn_t *c, int ch, int *progressed)
{
    tt_verbs_tx_t *tx = &c->tx[ch];
    while (tx->q && !c->failed) {
        tt_req_t *r = tx->q;
        int large = c->zcopy_bytes && r->len >= c->zcopy_bytes;
        if (!tx->hdr_sent) {
            size_t room = c->slot_bytes - sizeof r->hdr;
            size_t n = large ? 0 : r->len < room ? r->len : room;
            if (post_piece(c, ch, &r->hdr, r->buf, n))
                return;
            tx->hdr_sent = 1;
            tx->off = n;
            tx->phase = large ? PHASE_WAIT_RTR : PHASE_SLOTS;
            *progressed = 1;
        }
        if (tx->phase == PHASE_WAIT_RTR) {
            if (tx->rtr_seen == tx->rtr_used)
                return;
            take_rtr(c, ch, r, progressed);
        }
        if (tx->phase == PHASE_DIRECT && post_direct(c, ch, r))
            return;
        if (tx->phase == PHASE_DIRECT_POSTED)
            return; /* its completion finishes it */
        while (tx->off < r->len) {
            size_t n = r->len - tx->off < c->slot_bytes ? r->len - tx->off : c->slot_bytes;
            if (post_piece(c, ch, NULL, r->buf + tx->off, n))
                return;
            tx->off += n;
            *progressed = 1;
        }
        finish_head(tx, progressed);
    }
}

void tt_verbs_tx_zcopy_done(tt_verbs_conn_t *c, int ch)
{
    tt_verbs_tx_t *tx = &c->tx[ch];
    int progressed;
    if (!tx->q || tx->phase != PHASE_DIRECT_POSTED)
        return;
    tt_verbs_cache_put(c->dev->cache, tx->reg);
    tx->reg = NULL;
    finish_head(tx, &progressed);
}
