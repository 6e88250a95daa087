/* SPDX-License-Identifier: MIT */
/*
 * The verbs data path as the engine drives it: isend and irecv queue work
 * per channel; progress polls the connection's completion queue (no thread
 * of tutti's own on the hot path; an idle engine sleeps on the queue's
 * completion channel instead), hands each completion to its channel,
 * sends credits back and reposts receives. A failed completion (retries
 * exhausted, flushed, access error) fails the connection and every request
 * on it. alive keeps a zero-length write outstanding while the engine
 * waits, so a peer that died while nothing was in flight is still noticed
 * (its NIC stops acknowledging) within the ACK timeout times the retries.
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/try.h"
#include "transports/verbs/verbs.h"

#define PROBE_EVERY_MS 20
#define ABORT_WAIT_MS 100 /* for the abort notices to leave before the queue pairs go */

static int qp_index(const tt_verbs_conn_t *c, uint32_t qpn)
{
    for (int qi = 0; qi < c->nqps; qi++)
        if (c->qp[qi].qp->qp_num == qpn)
            return qi;
    return -1;
}

static void on_failure(tt_verbs_conn_t *c, const struct ibv_wc *wc)
{
    const tt_ibv_t *ibv = c->ctx->ibv;
    char why[TT_VERBS_WHY];
    snprintf(why, sizeof why, "%s (status %d) on queue pair %u",
             ibv->wc_status_str ? ibv->wc_status_str(wc->status) : "work request failed", (int)wc->status,
             wc->qp_num);
    /* Retries exhausted or flushed: the peer (or the path to it) is gone;
     * other statuses are errors of a queue pair, which is then gone too. */
    tt_verbs_conn_fail(c, c->peer_aborted ? TUTTI_ERR_ABORTED : TUTTI_ERR_PEER_FAILED, why);
}

static void on_receive(tt_verbs_conn_t *c, const struct ibv_wc *wc)
{
    uint32_t imm = be32toh(wc->imm_data);
    int kind = (int)(imm >> 28), ch = (int)(imm >> 24 & 15);
    uint32_t val = imm & 0xffffff;
    if (ch >= c->nch && kind != TT_IMM_ABORT) {
        tt_verbs_conn_fail(c, TUTTI_ERR_INTERNAL, "a write arrived for a channel that does not exist");
        return;
    }
    switch (kind) {
    case TT_IMM_DATA:
        /* No size the peer gives is trusted beyond its slot, nor more
         * slots filled than it had credits for. */
        if (wc->byte_len > c->slot_bytes || c->rx[ch].arrived - c->rx[ch].used >= (uint64_t)c->nslots) {
            tt_verbs_conn_fail(c, TUTTI_ERR_MISMATCH, "the peer wrote past its slot or its credits");
            return;
        }
        c->rx[ch].piece[c->rx[ch].arrived % (uint64_t)c->nslots] = wc->byte_len;
        c->rx[ch].arrived++;
        break;
    case TT_IMM_ZDONE: c->rx[ch].zdone++; break;
    case TT_IMM_CREDIT: c->tx[ch].credits += val; break;
    case TT_IMM_RTR: c->tx[ch].rtr_seen++; break;
    case TT_IMM_ABORT:
        c->peer_aborted = 1;
        tt_verbs_conn_fail(c, TUTTI_ERR_ABORTED, "the peer aborted");
        break;
    default: tt_verbs_conn_fail(c, TUTTI_ERR_INTERNAL, "a write arrived with an unknown immediate");
    }
}

/* Handles one completion; 1 when it moved a message along (arrivals,
 * credits, RTRs, direct writes done). Probes and queue bookkeeping do not
 * count: a silent peer must still reach TUTTI_TIMEOUT. */
static int on_completion(tt_verbs_conn_t *c, const struct ibv_wc *wc)
{
    int qi = qp_index(c, wc->qp_num);
    if (qi < 0)
        return 0;
    if (wc->status != IBV_WC_SUCCESS) {
        on_failure(c, wc);
        return 1;
    }
    int kind = (int)(wc->wr_id >> 56), ch = (int)(wc->wr_id >> 48 & 0xff);
    if (kind == TT_WR_RECV) {
        c->qp[qi].recv_owed++;
        on_receive(c, wc);
        return 1;
    }
    c->qp[qi].freed = wc->wr_id & 0xffffffffffffull; /* this WR and every earlier one */
    if (kind == TT_WR_ZCOPY) {
        tt_verbs_tx_zcopy_done(c, ch);
        return 1;
    }
    if (kind == TT_WR_PROBE)
        c->probe_at_ms = tt_now_ms() + PROBE_EVERY_MS;
    return 0;
}

/* Polls once; returns the number of completions, *moved when any counted. */
static int poll_once(tt_verbs_conn_t *c, int *moved)
{
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(c->cq, 16, wc);
    if (n < 0) {
        tt_verbs_conn_fail(c, TUTTI_ERR_PEER_FAILED, "polling the completion queue failed");
        return 0;
    }
    for (int i = 0; i < n; i++)
        *moved |= on_completion(c, &wc[i]);
    return n;
}

tutti_status_t tt_verbs_progress(void *connp, int *progressed)
{
    tt_verbs_conn_t *c = connp;
    if (c->failed)
        return c->failed;
    while (poll_once(c, progressed) > 0)
        ;
    for (int ch = 0; ch < c->nch && !c->failed; ch++) {
        tt_verbs_rx_drive(c, ch, progressed);
        tt_verbs_rx_offer(c, ch);
        tt_verbs_rx_t *rx = &c->rx[ch];
        if (rx->credits_owed &&
            !tt_verbs_post_write(c, ch % c->nqps, NULL, 0, 0, c->peer_region, c->peer_rkey,
                                 TT_IMM(TT_IMM_CREDIT, ch, rx->credits_owed), TT_WR_SIGNAL, ch))
            rx->credits_owed = 0;
        tt_verbs_tx_drive(c, ch, progressed);
    }
    for (int qi = 0; qi < c->nqps && !c->failed; qi++)
        if (c->qp[qi].recv_owed && !tt_verbs_post_recvs(c, qi, c->qp[qi].recv_owed))
            c->qp[qi].recv_owed = 0;
    return c->failed;
}

int tt_verbs_arm(void *connp, tt_wait_set_t *ws)
{
    tt_verbs_conn_t *c = connp;
    if (c->failed)
        return 1; /* progress reports it */
    if (!c->chan)
        return -1;
    /* Ask for an event at the next completion, then poll once more: what
     * completed before the request raises no event and is found here. */
    if (!c->notify_armed) {
        if (ibv_req_notify_cq(c->cq, 0))
            return -1;
        c->notify_armed = 1;
    }
    int progressed = 0;
    tt_verbs_progress(c, &progressed);
    if (progressed || c->failed)
        return 1;
    return tt_wait_add(ws, c->chan->fd, POLLIN) ? -1 : 0;
}

void tt_verbs_disarm(void *connp)
{
    tt_verbs_conn_t *c = connp;
    struct ibv_cq *cq;
    void *cq_ctx;
    if (!c->chan)
        return;
    /* Each event is taken and acknowledged at once: destroying the cq
     * waits for every event to be acknowledged. */
    while (c->ctx->ibv->get_cq_event(c->chan, &cq, &cq_ctx) == 0) {
        c->ctx->ibv->ack_cq_events(cq, 1);
        c->notify_armed = 0;
    }
}

tutti_status_t tt_verbs_isend(void *connp, int channel, tt_req_t *req)
{
    tt_verbs_conn_t *c = connp;
    TT_TRY(tt_req_queue_post(&c->tx[channel].q, req, c->failed));
    int progressed = 0;
    tt_verbs_tx_drive(c, channel, &progressed);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_verbs_irecv(void *connp, int channel, tt_req_t *req)
{
    tt_verbs_conn_t *c = connp;
    tt_verbs_rx_t *rx = &c->rx[channel];
    TT_TRY(tt_req_queue_post(&rx->q, req, c->failed));
    if (!rx->rtr_next)
        rx->rtr_next = req;
    tt_verbs_rx_offer(c, channel); /* the sender may be waiting for it already */
    return TUTTI_SUCCESS;
}

tutti_status_t tt_verbs_alive(void *connp)
{
    tt_verbs_conn_t *c = connp;
    if (!c->failed) {
        int progressed = 0;
        tt_verbs_progress(c, &progressed);
    }
    if (!c->failed && c->probe_at_ms && tt_now_ms() >= c->probe_at_ms &&
        !tt_verbs_post_write(c, 0, NULL, 0, 0, c->peer_region, c->peer_rkey, 0, TT_WR_PROBE, 0))
        c->probe_at_ms = 0; /* one at a time; its completion schedules the next */
    return c->failed == TUTTI_ERR_ABORTED || c->failed == TUTTI_ERR_PEER_FAILED ? c->failed : TUTTI_SUCCESS;
}

void tt_verbs_abort(void *connp)
{
    tt_verbs_conn_t *c = connp;
    int sent = 0;
    if (c->failed == TUTTI_ERR_PEER_FAILED || c->peer_aborted)
        return;
    for (int qi = 0; qi < c->nqps; qi++)
        sent += !tt_verbs_post_write(c, qi, NULL, 0, 0, c->peer_region, c->peer_rkey,
                                     TT_IMM(TT_IMM_ABORT, 0, 0), TT_WR_ABORT, 0);
    /* Give the notices time to leave: the queue pairs are destroyed next. */
    int64_t until = tt_now_ms() + ABORT_WAIT_MS;
    struct ibv_wc wc[16];
    while (sent > 0 && tt_now_ms() < until) {
        int n = ibv_poll_cq(c->cq, 16, wc);
        if (n < 0)
            break;
        for (int i = 0; i < n; i++)
            sent -= (int)(wc[i].wr_id >> 56) == TT_WR_ABORT;
        if (n == 0) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
}
