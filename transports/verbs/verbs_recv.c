/* SPDX-License-Identifier: MIT */
/*
 * The receiving side of a channel. Slots fill in order (the sender's writes
 * on one queue pair land in order, and each announces itself with a
 * completion); the head receive takes the header from its first slot,
 * compares it with the call it expects, then copies or reduces payload
 * straight out of the slots, and every slot consumed becomes a credit sent
 * back. A large receive first offers the sender an RTR: its buffer and key
 * when it is a plain receive (the sender then writes there directly), or
 * "use the slots" when the payload is to be reduced rather than stored.
 */
#include <stdio.h>
#include <string.h>

#include "transports/verbs/verbs.h"

static int is_large(const tt_verbs_conn_t *c, const tt_req_t *r)
{
    return c->zcopy_bytes && r->len >= c->zcopy_bytes;
}

void tt_verbs_rx_offer(tt_verbs_conn_t *c, int ch)
{
    tt_verbs_rx_t *rx = &c->rx[ch];
    int qi = ch % c->nqps;
    while (rx->rtr_next && !c->failed) {
        tt_req_t *r = rx->rtr_next;
        if (!is_large(c, r)) {
            rx->rtr_next = r->next;
            continue;
        }
        /* The sender's RTR slot for this position must have been used:
         * it has been once the receive it was for is complete. */
        if (rx->rtr_sent - rx->large_done >= TT_VERBS_RTR_DEPTH || !tt_verbs_sq_room(&c->qp[qi]))
            return;
        tt_verbs_reg_t *reg = r->combine ? NULL : tt_verbs_cache_get(c->dev->cache, r->buf, r->len, 1);
        tt_verbs_rtr_t *d = (tt_verbs_rtr_t *)(c->region + tt_verbs_rtr_out_off(c, ch, rx->rtr_sent));
        *d = (tt_verbs_rtr_t){.addr = (uintptr_t)r->buf,
                              .rkey = reg ? tt_verbs_reg_mr(reg)->rkey : 0,
                              .direct = reg != NULL,
                              .bytes = r->len};
        if (tt_verbs_post_write(c, qi, d, c->mr->lkey, sizeof *d,
                                c->peer_region + tt_verbs_rtr_in_off(c, ch, rx->rtr_sent), c->peer_rkey,
                                TT_IMM(TT_IMM_RTR, ch, rx->rtr_sent), TT_WR_SIGNAL, ch)) {
            tt_verbs_cache_put(c->dev->cache, reg);
            return;
        }
        rx->regs[rx->rtr_sent % TT_VERBS_RTR_DEPTH] = reg;
        rx->rtr_sent++;
        rx->rtr_next = r->next;
    }
}

/* Copies or reduces n payload bytes into the head receive. */
static int take(tt_verbs_conn_t *c, tt_req_t *r, const char *src, size_t n)
{
    if (n > r->len - r->done) {
        tt_verbs_conn_fail(c, TUTTI_ERR_INTERNAL, "more payload arrived than the message holds");
        return -1;
    }
    if (r->combine)
        r->combine(r->combine_ctx, r->done, src, n);
    else
        memcpy(r->buf + r->done, src, n);
    r->done += n;
    return 0;
}

/* The next filled slot: its bytes, which then count as a credit owed. */
static const char *next_slot(tt_verbs_conn_t *c, int ch, size_t *n)
{
    tt_verbs_rx_t *rx = &c->rx[ch];
    if (rx->used == rx->arrived)
        return NULL;
    *n = rx->piece[rx->used % (uint64_t)c->nslots];
    const char *p = c->region + tt_verbs_ring_off(c, ch, rx->used);
    rx->used++;
    rx->credits_owed++;
    return p;
}

/* Reads the head's header from its first slot; 1 when matched. */
static int take_header(tt_verbs_conn_t *c, int ch, tt_req_t *r)
{
    size_t n;
    const char *p = next_slot(c, ch, &n);
    if (!p)
        return 0;
    if (n < sizeof r->got) {
        tt_verbs_conn_fail(c, TUTTI_ERR_INTERNAL, "a message arrived without its header");
        return -1;
    }
    memcpy(&r->got, p, sizeof r->got);
    if (!tt_msg_hdr_match(&r->hdr, &r->got)) {
        /* The rest of this channel can no longer be parsed. */
        tt_req_finish(r, TUTTI_ERR_MISMATCH);
        c->rx[ch].q = r->next;
        tt_verbs_conn_fail(c, TUTTI_ERR_MISMATCH, "the peer sent a message of another call");
        return -1;
    }
    c->rx[ch].hdr_ok = 1;
    return take(c, r, p + sizeof r->got, n - sizeof r->got) ? -1 : 1;
}

void tt_verbs_rx_drive(tt_verbs_conn_t *c, int ch, int *progressed)
{
    tt_verbs_rx_t *rx = &c->rx[ch];
    while (rx->q && !c->failed) {
        tt_req_t *r = rx->q;
        if (!rx->hdr_ok) {
            int got = take_header(c, ch, r);
            if (got <= 0)
                return;
            *progressed = 1;
        }
        int large = is_large(c, r);
        if (large && rx->zdone > 0 && rx->regs[rx->large_done % TT_VERBS_RTR_DEPTH]) {
            rx->zdone--; /* the sender wrote it all into the buffer we offered */
            r->done = r->len;
        }
        size_t n;
        const char *p;
        while (r->done < r->len && (p = next_slot(c, ch, &n))) {
            if (take(c, r, p, n))
                return;
            *progressed = 1;
        }
        if (r->done < r->len)
            return;
        rx->q = r->next;
        rx->hdr_ok = 0;
        if (large) {
            tt_verbs_reg_t **reg = &rx->regs[rx->large_done % TT_VERBS_RTR_DEPTH];
            tt_verbs_cache_put(c->dev->cache, *reg);
            *reg = NULL;
            rx->large_done++;
        }
        tt_req_finish(r, TUTTI_SUCCESS);
        *progressed = 1;
    }
}

/* A message's first slot starts with its header, even for a large message,
 * whose sender waits for an RTR only after it. */
int tt_verbs_peek(void *connp, int ch, tt_msg_hdr_t *hdr)
{
    tt_verbs_conn_t *c = connp;
    const tt_verbs_rx_t *rx = &c->rx[ch];
    if (c->failed || rx->q || rx->used == rx->arrived)
        return 0; /* a receive owns the ring's head, or nothing arrived */
    if (rx->piece[rx->used % (uint64_t)c->nslots] < sizeof *hdr)
        return 0;
    memcpy(hdr, c->region + tt_verbs_ring_off(c, ch, rx->used), sizeof *hdr);
    return 1;
}
