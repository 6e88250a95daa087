/* SPDX-License-Identifier: MIT */
/*
 * Posting work requests, and failing a connection. Send queues are signalled
 * selectively: one WR in sig_every asks for a completion, and polling it
 * frees its queue slot and those of the unsignalled WRs before it, which is
 * how a NIC retires them. A WR is posted only when its queue has room, so a
 * post never overflows; what cannot go now waits for the next progress.
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "transports/verbs/verbs.h"

int tt_verbs_sq_room(const tt_verbs_qp_t *q)
{
    return q->posted - q->freed < q->sq_depth;
}

void tt_verbs_conn_fail(tt_verbs_conn_t *c, tutti_status_t st, const char *why)
{
    if (c->failed)
        return;
    c->failed = st;
    snprintf(c->why, sizeof c->why, "%s", why);
    if (st != TUTTI_ERR_ABORTED)
        TT_WARN(TT_SUB_NET, "verbs: connection to rank %d failed: %s", c->peer, why);
    for (int ch = 0; ch < c->nch; ch++) {
        for (tt_req_t *r = c->tx[ch].q; r; r = r->next)
            tt_req_finish(r, st);
        for (tt_req_t *r = c->rx[ch].q; r; r = r->next)
            if (r->state == TT_REQ_PENDING)
                tt_req_finish(r, st);
        c->tx[ch].q = c->rx[ch].q = c->rx[ch].rtr_next = NULL;
    }
}

int tt_verbs_post_write(tt_verbs_conn_t *c, int qi, const void *local, uint32_t lkey, size_t len,
                        uint64_t remote, uint32_t rkey, uint32_t imm, uint64_t wr_kind, int ch)
{
    tt_verbs_qp_t *q = &c->qp[qi];
    if (!tt_verbs_sq_room(q))
        return 1;
    struct ibv_sge sge = {.addr = (uintptr_t)local, .length = (uint32_t)len, .lkey = lkey};
    int always = wr_kind == TT_WR_ZCOPY || wr_kind == TT_WR_PROBE || wr_kind == TT_WR_ABORT;
    int signal = always || q->posted + 1 - q->last_signal >= q->sig_every;
    struct ibv_send_wr wr = {.wr_id = TT_WR(always ? wr_kind : TT_WR_SIGNAL, ch, q->posted + 1),
                             .sg_list = len ? &sge : NULL,
                             .num_sge = len ? 1 : 0,
                             .opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
                             .send_flags = (signal ? IBV_SEND_SIGNALED : 0u) |
                                           (len && len <= q->max_inline ? IBV_SEND_INLINE : 0u),
                             .imm_data = htobe32(imm),
                             .wr = {.rdma = {.remote_addr = remote, .rkey = rkey}}},
                       *bad;
    int rc = ibv_post_send(q->qp, &wr, &bad);
    if (rc) {
        char why[160];
        snprintf(why, sizeof why, "posting to queue pair %u failed: %s", q->qp->qp_num, strerror(rc));
        tt_verbs_conn_fail(c, TUTTI_ERR_PEER_FAILED, why);
        return -1;
    }
    q->posted++;
    if (signal)
        q->last_signal = q->posted;
    return 0;
}

int tt_verbs_post_recvs(tt_verbs_conn_t *c, int qi, uint32_t n)
{
    /* Writes with immediate consume a receive WQE but put nothing in it. */
    struct ibv_recv_wr wr[32];
    while (n > 0) {
        uint32_t k = n < 32 ? n : 32;
        for (uint32_t i = 0; i < k; i++)
            wr[i] =
                (struct ibv_recv_wr){.wr_id = TT_WR(TT_WR_RECV, 0, 0), .next = i + 1 < k ? &wr[i + 1] : NULL};
        struct ibv_recv_wr *bad;
        int rc = ibv_post_recv(c->qp[qi].qp, wr, &bad);
        if (rc) {
            char why[160];
            snprintf(why, sizeof why, "posting receives to queue pair %u failed: %s", c->qp[qi].qp->qp_num,
                     strerror(rc));
            tt_verbs_conn_fail(c, TUTTI_ERR_PEER_FAILED, why);
            return -1;
        }
        n -= k;
    }
    return 0;
}
