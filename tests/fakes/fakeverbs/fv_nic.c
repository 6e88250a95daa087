/* SPDX-License-Identifier: MIT */
/*
 * The stand-in's NIC: moves packets of send WQEs into the responder's ring,
 * executes arriving packets against this process's memory regions, answers
 * with acknowledgements or NAKs, and completes, retries and flushes work
 * requests. Runs under the context lock, from the posting or polling thread
 * or from the context's own thread, so a process that is busy elsewhere
 * still acknowledges (a NIC does not need its host to answer).
 */
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fv.h"

/* Receiver-not-ready delays of the 5-bit timer code, in units of 10 us. */
static const uint32_t rnr_delay_10us[32] = {
    65536, 1,   2,   3,   4,    6,    8,    12,   16,   24,   32,   48,    64,    96,    128,   192,
    256,   384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

typedef struct {
    fv_seg_t *seg;      /* the remote queue pair's context */
    fv_qp_shared_t *sh; /* the remote queue pair */
    int reachable;      /* connected to us and routable (alive or not) */
} peer_t;

static void cq_dead(fv_ctx_t *ctx, struct ibv_cq *cq)
{
    /* An overrun CQ takes its queue pairs down; no flush can be reported. */
    for (int i = 0; i < FV_MAX_QPS; i++) {
        fv_qp_t *q = ctx->qps[i];
        if (q && (q->qp.send_cq == cq || q->qp.recv_cq == cq)) {
            q->qp.state = IBV_QPS_ERR;
            atomic_store(&q->sh->state, IBV_QPS_ERR);
            q->sq_done = q->sq_tx = q->sq_head;
            q->rq_used = q->rq_head;
        }
    }
}

static void push_cqe(fv_qp_t *q, int send, uint64_t index, uint64_t wr_id, enum ibv_wc_status st,
                     enum ibv_wc_opcode op, uint32_t len, uint32_t imm, int with_imm)
{
    fv_cqe_t e = {.qp = q, .send = send, .index = index};
    e.wc.wr_id = wr_id;
    e.wc.status = st;
    e.wc.opcode = op;
    e.wc.byte_len = len;
    e.wc.imm_data = imm;
    e.wc.wc_flags = with_imm ? IBV_WC_WITH_IMM : 0;
    e.wc.qp_num = q->qp.qp_num;
    e.wc.src_qp = q->dest_qpn;
    struct ibv_cq *cq = send ? q->qp.send_cq : q->qp.recv_cq;
    if (fv_cq_push((fv_cq_t *)cq, &e))
        cq_dead(q->ctx, cq);
}

static enum ibv_wc_opcode send_opcode(int op)
{
    return op == FV_OP_SEND || op == FV_OP_SEND_IMM ? IBV_WC_SEND : IBV_WC_RDMA_WRITE;
}

void fv_qp_to_error(fv_qp_t *q)
{
    q->qp.state = IBV_QPS_ERR;
    atomic_store(&q->sh->state, IBV_QPS_ERR);
    /* Every outstanding WQE completes, signalled or not, with a flush. */
    for (; q->sq_done < q->sq_head; q->sq_done++) {
        fv_wqe_t *w = &q->sq[q->sq_done % q->cap.max_send_wr];
        push_cqe(q, 1, q->sq_done, w->wr_id, IBV_WC_WR_FLUSH_ERR, send_opcode(w->opcode), 0, 0, 0);
    }
    q->sq_tx = q->sq_head;
    q->tx_off = 0;
    for (; q->rq_used < q->rq_head; q->rq_used++)
        push_cqe(q, 0, q->rq_used, q->rq[q->rq_used % q->cap.max_recv_wr].wr_id, IBV_WC_WR_FLUSH_ERR,
                 IBV_WC_RECV, 0, 0, 0);
}

/* The oldest outstanding WQE fails with st; the rest are flushed. */
static void fail_head(fv_qp_t *q, enum ibv_wc_status st)
{
    fv_wqe_t *w = &q->sq[q->sq_done % q->cap.max_send_wr];
    push_cqe(q, 1, q->sq_done, w->wr_id, st, send_opcode(w->opcode), 0, 0, 0);
    q->sq_done++;
    fv_qp_to_error(q);
}

static int route_ok(fv_ctx_t *ctx, const fv_qp_t *q, int pidx, int pport, uint32_t ptype)
{
    const fv_dir_ctx_t *pd = &fv_dir()->ctx[pidx];
    union ibv_gid g;
    int mine, theirs;
    if (pd->roce != ctx->dev->roce || pd->net != fv_dir()->ctx[ctx->index].net)
        return 0;
    if (!pd->roce)
        return q->ah.dlid == fv_lid(pidx, pport);
    /* RoCE routes by GID; both ends of a connection must speak the same
     * version (v1 frames or v2 UDP datagrams). */
    if (fv_gid(ctx->index, 1, q->port, q->ah.grh.sgid_index, &g, &mine) || (uint32_t)mine != ptype)
        return 0;
    for (int i = 0; i < FV_ROCE_GIDS; i++)
        if (!fv_gid(pidx, 1, pport, i, &g, &theirs) && !memcmp(&g, &q->ah.grh.dgid, sizeof g) &&
            theirs == mine)
            return 1;
    return 0;
}

static void resolve(fv_ctx_t *ctx, fv_qp_t *q, peer_t *p)
{
    int idx, slot;
    uint32_t gen;
    fv_qpn_split(q->dest_qpn, &idx, &gen, &slot);
    p->seg = fv_peer_seg(ctx, idx, gen, NULL);
    p->sh = p->seg ? &p->seg->qp[slot] : NULL;
    uint32_t st = p->sh ? atomic_load(&p->sh->state) : 0;
    p->reachable =
        p->sh && atomic_load(&p->sh->qpn) == q->dest_qpn && atomic_load(&p->sh->remote_qpn) == q->qp.qp_num &&
        (st == IBV_QPS_RTR || st == IBV_QPS_RTS) && route_ok(ctx, q, idx, (int)p->sh->port, p->sh->gid_type);
}

/* Copies n bytes at offset off of w's data to dst; -1 on a bad local key. */
static int gather(fv_ctx_t *ctx, fv_qp_t *q, const fv_wqe_t *w, uint64_t off, char *dst, uint64_t n)
{
    if (w->is_inline) {
        memcpy(dst, w->inl + off, n);
        return 0;
    }
    for (int i = 0; i < w->num_sge && n > 0; i++) {
        const struct ibv_sge *s = &w->sge[i];
        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        uint64_t take = s->length - off < n ? s->length - off : n;
        fv_mr_t *mr = fv_mr_find(ctx, s->lkey, 0);
        char *src = mr && mr->mr.pd == q->qp.pd ? fv_mr_ptr(mr, s->addr + off, take) : NULL;
        if (!src)
            return -1;
        memcpy(dst, src, take);
        dst += take;
        n -= take;
        off = 0;
    }
    return 0;
}

/* Pushes packets of queued WQEs while the ring has room; 1 if any went. */
static int tx(fv_ctx_t *ctx, fv_qp_t *q, const peer_t *p)
{
    int pushed = 0;
    while (q->sq_tx < q->sq_head && p->reachable) {
        fv_wqe_t *w = &q->sq[q->sq_tx % q->cap.max_send_wr];
        if (w->len > FV_MAX_MSG) {
            fail_head(q, IBV_WC_LOC_LEN_ERR);
            return pushed;
        }
        uint64_t payload = w->len - q->tx_off < (uint64_t)q->path_mtu_bytes ? w->len - q->tx_off
                                                                            : (uint64_t)q->path_mtu_bytes;
        size_t need = (sizeof(fv_pkt_t) + payload + 7) & ~(size_t)7;
        uint64_t head = atomic_load(&p->sh->head), tail = atomic_load(&p->sh->tail);
        size_t at = head % FV_RING_BYTES, to_end = FV_RING_BYTES - at, waste = to_end < need ? to_end : 0;
        if (FV_RING_BYTES - (head - tail) < need + waste)
            break; /* the responder has not drained its ring yet */
        if (waste) {
            *(uint32_t *)(p->sh->ring + at) = 0; /* wrap marker */
            head += waste;
            at = 0;
        }
        fv_pkt_t *k = (fv_pkt_t *)(p->sh->ring + at);
        *k = (fv_pkt_t){.bytes = (uint32_t)need,
                        .opcode = (uint8_t)w->opcode,
                        .first = q->tx_off == 0,
                        .last = q->tx_off + payload == w->len,
                        .psn = q->next_psn,
                        .imm = w->imm,
                        .rkey = w->rkey,
                        .payload = (uint32_t)payload,
                        .msn = w->msn,
                        .raddr = w->raddr,
                        .msg_len = w->len,
                        .offset = q->tx_off};
        if (gather(ctx, q, w, q->tx_off, (char *)(k + 1), payload)) {
            /* Nothing is published (the ring head did not move). The QP
             * goes down: earlier WQEs still unacknowledged are flushed. */
            for (; q->sq_done < q->sq_tx; q->sq_done++)
                push_cqe(q, 1, q->sq_done, q->sq[q->sq_done % q->cap.max_send_wr].wr_id, IBV_WC_WR_FLUSH_ERR,
                         send_opcode(q->sq[q->sq_done % q->cap.max_send_wr].opcode), 0, 0, 0);
            fail_head(q, IBV_WC_LOC_PROT_ERR);
            return pushed;
        }
        atomic_store_explicit(&p->sh->head, head + need, memory_order_release);
        pushed = 1;
        q->next_psn = (q->next_psn + 1) & 0xffffff;
        q->tx_off += payload;
        if (q->tx_off >= w->len) {
            q->sq_tx++;
            q->tx_off = 0;
        }
    }
    return pushed;
}

/* A responder-side error: the requester is told why, and this QP goes down. */
static int refuse(fv_qp_t *q, const fv_pkt_t *k, int code)
{
    atomic_store(&q->sh->nak_code, (uint32_t)code);
    atomic_store(&q->sh->nak_msn, k->msn + 1);
    fv_qp_to_error(q);
    return -1;
}

static int rx_write(fv_ctx_t *ctx, fv_qp_t *q, const fv_pkt_t *k, const char *data)
{
    if (k->first && k->msg_len > 0) {
        /* The R_Key must name a region of this PD that allows remote writes
         * and holds the whole message; zero-length writes check nothing. */
        fv_mr_t *mr = fv_mr_find(ctx, k->rkey, 1);
        if (!mr || mr->mr.pd != q->qp.pd || !(mr->access & IBV_ACCESS_REMOTE_WRITE) ||
            !(q->access & IBV_ACCESS_REMOTE_WRITE) || !fv_mr_ptr(mr, k->raddr, k->msg_len))
            return refuse(q, k, FV_NAK_ACCESS);
        q->rx_mr = mr;
    }
    if (k->payload > 0) {
        char *dst = q->rx_mr ? fv_mr_ptr(q->rx_mr, k->raddr + k->offset, k->payload) : NULL;
        if (!dst) /* deregistered while the message streamed in */
            return refuse(q, k, FV_NAK_ACCESS);
        memcpy(dst, data, k->payload);
    }
    if (k->last && k->opcode == FV_OP_WRITE_IMM) {
        if (q->rq_used == q->rq_head) {
            /* No receive WQE: RNR NAK; the packet is kept and retried. */
            atomic_store(&q->sh->rnr_timer, (uint32_t)q->min_rnr_timer);
            atomic_store(&q->sh->rnr_msn, k->msn + 1);
            return 0;
        }
        uint64_t i = q->rq_used++;
        push_cqe(q, 0, i, q->rq[i % q->cap.max_recv_wr].wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
                 (uint32_t)k->msg_len, k->imm, 1);
    }
    return 1;
}

static int rx_send(fv_ctx_t *ctx, fv_qp_t *q, const fv_pkt_t *k, const char *data)
{
    if (q->rq_used == q->rq_head) {
        atomic_store(&q->sh->rnr_timer, (uint32_t)q->min_rnr_timer);
        atomic_store(&q->sh->rnr_msn, k->msn + 1);
        return 0;
    }
    fv_rwqe_t *r = &q->rq[q->rq_used % q->cap.max_recv_wr];
    uint64_t room = 0, off = k->offset, n = k->payload;
    for (int i = 0; i < r->num_sge; i++)
        room += r->sge[i].length;
    if (k->msg_len > room) { /* too long for the posted buffer */
        push_cqe(q, 0, q->rq_used++, r->wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0);
        return refuse(q, k, FV_NAK_INVALID);
    }
    for (int i = 0; i < r->num_sge && n > 0; i++) {
        const struct ibv_sge *s = &r->sge[i];
        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        uint64_t take = s->length - off < n ? s->length - off : n;
        fv_mr_t *mr = fv_mr_find(ctx, s->lkey, 0);
        char *dst = mr && mr->mr.pd == q->qp.pd && (mr->access & IBV_ACCESS_LOCAL_WRITE)
                        ? fv_mr_ptr(mr, s->addr + off, take)
                        : NULL;
        if (!dst) {
            push_cqe(q, 0, q->rq_used++, r->wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0);
            return refuse(q, k, FV_NAK_OPERATIONAL);
        }
        memcpy(dst, data, take);
        data += take;
        n -= take;
        off = 0;
    }
    if (k->last) {
        uint64_t i = q->rq_used++;
        push_cqe(q, 0, i, r->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)k->msg_len, k->imm,
                 k->opcode == FV_OP_SEND_IMM);
    }
    return 1;
}

/* Executes the packets waiting in q's ring; 1 if any was consumed. */
static int rx(fv_ctx_t *ctx, fv_qp_t *q)
{
    fv_qp_shared_t *sh = q->sh;
    uint64_t tail = atomic_load(&sh->tail);
    int moved = 0;
    for (;;) {
        uint64_t head = atomic_load_explicit(&sh->head, memory_order_acquire);
        if (tail == head)
            break;
        size_t at = tail % FV_RING_BYTES;
        const fv_pkt_t *k = (const fv_pkt_t *)(sh->ring + at);
        if (k->bytes == 0) {
            tail += FV_RING_BYTES - at;
            continue;
        }
        int rc = 1;
        if (q->qp.state != IBV_QPS_RTR && q->qp.state != IBV_QPS_RTS) {
            rc = 1; /* dropped: a QP in error answers nothing */
        } else if (k->psn != q->epsn || k->payload > (uint32_t)q->path_mtu_bytes) {
            atomic_store(&sh->nak_code, FV_NAK_SEQ); /* dropped, never acknowledged */
            atomic_store(&sh->nak_msn, k->msn + 1);
        } else {
            rc = k->opcode == FV_OP_SEND || k->opcode == FV_OP_SEND_IMM
                     ? rx_send(ctx, q, k, (const char *)(k + 1))
                     : rx_write(ctx, q, k, (const char *)(k + 1));
            if (rc > 0) {
                atomic_store(&sh->rnr_msn, 0);
                q->epsn = (q->epsn + 1) & 0xffffff;
                if (k->last)
                    atomic_store_explicit(&sh->acked, ++q->rx_msgs, memory_order_release);
            }
        }
        if (rc == 0)
            break;
        tail += k->bytes;
        moved = 1;
    }
    atomic_store_explicit(&sh->tail, tail, memory_order_release);
    return moved;
}

/* Acknowledgements, NAKs, RNR waits and transport retries of q's requests. */
static void complete(fv_qp_t *q, const peer_t *p, long long now)
{
    if (p->sh) {
        uint64_t acked = atomic_load_explicit(&p->sh->acked, memory_order_acquire);
        while (q->sq_done < q->sq_tx && q->sq[q->sq_done % q->cap.max_send_wr].msn < acked) {
            fv_wqe_t *w = &q->sq[q->sq_done % q->cap.max_send_wr];
            if (w->signaled)
                push_cqe(q, 1, q->sq_done, w->wr_id, IBV_WC_SUCCESS, send_opcode(w->opcode), (uint32_t)w->len,
                         0, 0);
            q->sq_done++;
            q->last_ack_ns = now;
            q->retries = q->rnr_retries = 0;
        }
    }
    if (q->qp.state != IBV_QPS_RTS || q->sq_done == q->sq_head)
        return;
    uint64_t msn1 = q->sq[q->sq_done % q->cap.max_send_wr].msn + 1;
    uint32_t code = p->sh ? atomic_load(&p->sh->nak_code) : 0;
    int nakked = p->sh && atomic_load(&p->sh->nak_msn) == msn1;
    if (nakked && code != FV_NAK_SEQ) {
        fail_head(q, code == FV_NAK_ACCESS    ? IBV_WC_REM_ACCESS_ERR
                     : code == FV_NAK_INVALID ? IBV_WC_REM_INV_REQ_ERR
                                              : IBV_WC_REM_OP_ERR);
        return;
    }
    if (p->reachable && atomic_load(&p->sh->rnr_msn) == msn1) {
        long long delay = (long long)rnr_delay_10us[atomic_load(&p->sh->rnr_timer) & 31] * 10000;
        q->last_ack_ns = now;
        if (q->rnr_retry == 7) /* 7 means retry for ever */
            return;
        if (!q->rnr_since_ns)
            q->rnr_since_ns = now;
        if (now - q->rnr_since_ns >= delay) {
            q->rnr_since_ns = now;
            if (++q->rnr_retries > q->rnr_retry)
                fail_head(q, IBV_WC_RNR_RETRY_EXC_ERR);
        }
        return;
    }
    q->rnr_since_ns = 0;
    if (q->timeout == 0 || now - q->last_ack_ns < 4096ll << q->timeout)
        return;
    q->last_ack_ns = now;
    /* A live, connected responder acknowledges (its NIC would, however busy
     * its host); a dead or disconnected one never does. */
    int idx, slot, alive = 0;
    uint32_t gen;
    fv_qpn_split(q->dest_qpn, &idx, &gen, &slot);
    if (p->reachable && !nakked)
        fv_peer_seg(q->ctx, idx, gen, &alive);
    if (alive || ++q->retries <= q->retry_cnt)
        return;
    fail_head(q, IBV_WC_RETRY_EXC_ERR);
}

void fv_nic_progress(fv_ctx_t *ctx)
{
    long long now = fv_now_ns();
    int inject = atomic_exchange(&fv_inject_qp_error, 0);
    for (int i = 0; i < FV_MAX_QPS; i++) {
        fv_qp_t *q = ctx->qps[i];
        if (!q)
            continue;
        if (inject && q->qp.state == IBV_QPS_RTS) {
            fv_qp_to_error(q); /* a fatal error of this QP */
            inject = 0;
        }
        if (q->qp.state == IBV_QPS_ERR) {
            rx(ctx, q); /* drains and drops */
            if (q->sq_done < q->sq_head || q->rq_used < q->rq_head)
                fv_qp_to_error(q); /* work posted after the error is flushed */
            continue;
        }
        if (q->qp.state != IBV_QPS_RTR && q->qp.state != IBV_QPS_RTS)
            continue;
        peer_t p;
        resolve(ctx, q, &p);
        int wake = rx(ctx, q);
        if (q->qp.state == IBV_QPS_RTS) {
            wake |= tx(ctx, q, &p);
            complete(q, &p, now);
        }
        if (wake && p.seg)
            fv_ring_doorbell(p.seg);
    }
    if (inject)
        atomic_store(&fv_inject_qp_error, 1); /* no QP was up yet: keep it for later */
}

int fv_nic_busy(fv_ctx_t *ctx)
{
    for (int i = 0; i < FV_MAX_QPS; i++) {
        fv_qp_t *q = ctx->qps[i];
        if (q && (q->sq_done < q->sq_head || atomic_load(&q->sh->head) != atomic_load(&q->sh->tail)))
            return 1;
    }
    return 0;
}

void *fv_nic_thread(void *arg)
{
    fv_ctx_t *ctx = arg;
    while (!atomic_load(&ctx->stop)) {
        uint32_t bell = atomic_load(&ctx->seg->doorbell);
        pthread_mutex_lock(&ctx->lock);
        fv_nic_progress(ctx);
        int busy = fv_nic_busy(ctx);
        pthread_mutex_unlock(&ctx->lock);
        /* Sleep until poked; while requests are outstanding wake often
         * enough to run their retry timers. */
        struct timespec ts = {0, busy ? 2000000 : 50000000};
        atomic_store(&ctx->seg->sleeping, 1);
        if (atomic_load(&ctx->seg->doorbell) == bell && !atomic_load(&ctx->stop))
            syscall(SYS_futex, &ctx->seg->doorbell, FUTEX_WAIT, bell, &ts, NULL, 0);
        atomic_store(&ctx->seg->sleeping, 0);
    }
    return NULL;
}
