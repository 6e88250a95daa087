/* SPDX-License-Identifier: MIT */
/*
 * Reliable-connected queue pairs of the stand-in: creation with capacity
 * checks, the state machine of ibv_modify_qp(3) with the attributes each
 * transition requires and allows (anything else is EINVAL, as the kernel
 * answers), and posting to the send and receive queues with their depths
 * enforced (a full queue is ENOMEM with *bad_wr set).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fv.h"

uint32_t fv_qpn_make(int ctx_index, uint32_t gen, int slot)
{
    return 0x800000u | (gen & 0xffu) << 13 | (uint32_t)ctx_index << 6 | (uint32_t)slot;
}

void fv_qpn_split(uint32_t qpn, int *ctx_index, uint32_t *gen, int *slot)
{
    *slot = (int)(qpn & 63);
    *ctx_index = (int)(qpn >> 6 & 127);
    *gen = qpn >> 13 & 0xff;
}

int fv_mtu_bytes(enum ibv_mtu mtu)
{
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
    fv_ctx_t *c = fv_ctx_of(pd->context);
    struct ibv_qp_cap *cap = &a->cap;
    if (a->qp_type != IBV_QPT_RC || a->srq || !a->send_cq || !a->recv_cq || cap->max_send_wr < 1 ||
        cap->max_send_wr > 32768 || cap->max_recv_wr > 32768 || cap->max_send_sge > FV_MAX_SGE ||
        cap->max_recv_sge > FV_MAX_SGE || cap->max_inline_data > FV_MAX_INLINE) {
        errno = EINVAL; /* only RC, without SRQ, within the device's limits */
        return NULL;
    }
    fv_qp_t *q = calloc(1, sizeof *q);
    if (q) {
        q->sq = calloc(cap->max_send_wr, sizeof *q->sq);
        q->rq = calloc(cap->max_recv_wr ? cap->max_recv_wr : 1, sizeof *q->rq);
    }
    if (!q || !q->sq || !q->rq) {
        if (q) {
            free(q->sq);
            free(q->rq);
        }
        free(q);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&c->lock);
    int slot = 0;
    while (slot < FV_MAX_QPS && c->qps[slot])
        slot++;
    if (slot == FV_MAX_QPS) {
        pthread_mutex_unlock(&c->lock);
        free(q->sq);
        free(q->rq);
        free(q);
        errno = ENOSPC;
        return NULL;
    }
    q->ctx = c;
    q->slot = slot;
    q->cap = *cap;
    q->sig_all = a->sq_sig_all;
    q->qp = (struct ibv_qp){.context = pd->context,
                            .qp_context = a->qp_context,
                            .pd = pd,
                            .send_cq = a->send_cq,
                            .recv_cq = a->recv_cq,
                            .handle = (uint32_t)slot,
                            .qp_num = fv_qpn_make(c->index, c->gen, slot),
                            .state = IBV_QPS_RESET,
                            .qp_type = IBV_QPT_RC};
    q->sh = &c->seg->qp[slot];
    atomic_store(&q->sh->state, IBV_QPS_RESET);
    atomic_store(&q->sh->remote_qpn, 0);
    atomic_store(&q->sh->tail, atomic_load(&q->sh->head));
    atomic_store(&q->sh->acked, 0);
    atomic_store(&q->sh->nak_msn, 0);
    atomic_store(&q->sh->rnr_msn, 0);
    atomic_store(&q->sh->qpn, q->qp.qp_num);
    c->qps[slot] = q;
    pthread_mutex_unlock(&c->lock);
    return &q->qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
    fv_qp_t *q = (fv_qp_t *)qp;
    fv_ctx_t *c = q->ctx;
    pthread_mutex_lock(&c->lock);
    /* Peers now find no queue pair behind this number: their requests go
     * unanswered until their retries run out, as with a destroyed QP. */
    atomic_store(&q->sh->qpn, 0);
    atomic_store(&q->sh->state, IBV_QPS_RESET);
    atomic_store(&q->sh->remote_qpn, 0);
    c->qps[q->slot] = NULL;
    pthread_mutex_unlock(&c->lock);
    fv_cq_forget((fv_cq_t *)qp->send_cq, q);
    fv_cq_forget((fv_cq_t *)qp->recv_cq, q);
    free(q->sq);
    free(q->rq);
    free(q);
    return 0;
}

#define ALWAYS (IBV_QP_STATE | IBV_QP_CUR_STATE)

/* Attributes each transition needs and may carry (ibv_modify_qp(3)). */
static const struct {
    enum ibv_qp_state from, to;
    int req, opt;
} transitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
         IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0,
     IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER},
};

static int mask_ok(enum ibv_qp_state from, enum ibv_qp_state to, int mask)
{
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
        return (mask & ~ALWAYS) == 0;
    for (size_t i = 0; i < sizeof transitions / sizeof transitions[0]; i++)
        if (transitions[i].from == from && transitions[i].to == to)
            return (mask & transitions[i].req) == transitions[i].req &&
                   (mask & ~(transitions[i].req | transitions[i].opt | ALWAYS)) == 0;
    return 0; /* not a transition the state machine has */
}

/* Whether gid is a port's of a live device on another network than ctx's. */
static int unreachable_gid(const fv_ctx_t *ctx, const union ibv_gid *gid)
{
    fv_dir_t *d = fv_dir();
    for (int i = 0; i < FV_MAX_CTX; i++) {
        const fv_dir_ctx_t *e = &d->ctx[i];
        if (!atomic_load(&e->pid) || !e->roce || e->net == d->ctx[ctx->index].net)
            continue;
        for (uint32_t p = 1; p <= e->nports; p++)
            for (int g = 0; g < FV_ROCE_GIDS; g++) {
                union ibv_gid mine;
                int type;
                if (!fv_gid(i, 1, (int)p, g, &mine, &type) && !memcmp(&mine, gid, sizeof mine))
                    return 1;
            }
    }
    return 0;
}

/* The values a transition sets; EINVAL for ones the port cannot take. */
static int apply(fv_qp_t *q, const struct ibv_qp_attr *a, int mask)
{
    const fv_devcfg_t *dev = q->ctx->dev;
    if (mask & IBV_QP_PORT) {
        if (a->port_num < 1 || a->port_num > dev->nports)
            return EINVAL;
        q->port = a->port_num;
    }
    if (mask & IBV_QP_ACCESS_FLAGS)
        q->access = (int)a->qp_access_flags;
    if (mask & IBV_QP_PATH_MTU) {
        int active = dev->roce ? 1024 : 4096;
        if (!fv_mtu_bytes(a->path_mtu) || fv_mtu_bytes(a->path_mtu) > active)
            return EINVAL;
        q->path_mtu_bytes = fv_mtu_bytes(a->path_mtu);
    }
    if (mask & IBV_QP_AV) {
        /* RoCE has no LIDs: every packet needs a GRH with a valid source GID. */
        if (dev->roce && (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index >= FV_ROCE_GIDS))
            return EINVAL;
        /* The kernel resolves a RoCE destination's address here; one on
         * another network never answers. */
        if (dev->roce && unreachable_gid(q->ctx, &a->ah_attr.grh.dgid))
            return ETIMEDOUT;
        if (!dev->roce && !a->ah_attr.is_global && a->ah_attr.dlid == 0)
            return EINVAL;
        q->ah = a->ah_attr;
    }
    if (mask & IBV_QP_DEST_QPN)
        q->dest_qpn = a->dest_qp_num & 0xffffff;
    if (mask & IBV_QP_RQ_PSN)
        q->rq_psn = a->rq_psn & 0xffffff;
    if (mask & IBV_QP_SQ_PSN)
        q->sq_psn = a->sq_psn & 0xffffff;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        q->min_rnr_timer = a->min_rnr_timer & 31;
    if (mask & IBV_QP_TIMEOUT) {
        if (a->timeout > 31)
            return EINVAL;
        q->timeout = a->timeout;
    }
    if (mask & IBV_QP_RETRY_CNT) {
        if (a->retry_cnt > 7)
            return EINVAL;
        q->retry_cnt = a->retry_cnt;
    }
    if (mask & IBV_QP_RNR_RETRY) {
        if (a->rnr_retry > 7)
            return EINVAL;
        q->rnr_retry = a->rnr_retry;
    }
    return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    fv_qp_t *q = (fv_qp_t *)qp;
    pthread_mutex_lock(&q->ctx->lock);
    enum ibv_qp_state from = qp->state, to = (mask & IBV_QP_STATE) ? a->qp_state : from;
    int rc = 0;
    if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != from)
        rc = EINVAL;
    else if (!mask_ok(from, to, mask))
        rc = EINVAL;
    else if (to != IBV_QPS_RESET && to != IBV_QPS_ERR)
        rc = apply(q, a, mask);
    if (rc) {
        pthread_mutex_unlock(&q->ctx->lock);
        return rc;
    }
    if (to == IBV_QPS_ERR) {
        fv_qp_to_error(q);
    } else if (to == IBV_QPS_RESET) {
        /* Everything posted is dropped without completions. */
        atomic_store(&q->sh->remote_qpn, 0);
        q->sq_head = q->sq_tx = q->sq_done = q->tx_off = 0;
        atomic_store(&q->sq_retired, 0);
        q->rq_head = q->rq_used = 0;
        atomic_store(&q->rq_retired, 0);
        q->rx_msgs = 0;
        q->rx_mr = NULL;
        atomic_store(&q->sh->tail, atomic_load(&q->sh->head));
        atomic_store(&q->sh->acked, 0);
        atomic_store(&q->sh->nak_msn, 0);
        atomic_store(&q->sh->rnr_msn, 0);
    } else if (to == IBV_QPS_RTR && from == IBV_QPS_INIT) {
        q->epsn = q->rq_psn;
        q->sh->port = (uint32_t)q->port;
        union ibv_gid g;
        int type = IBV_GID_TYPE_IB;
        if (q->ctx->dev->roce)
            fv_gid(q->ctx->index, 1, q->port, q->ah.grh.sgid_index, &g, &type);
        q->sh->gid_type = (uint32_t)type;
        atomic_store(&q->sh->mtu_bytes, (uint32_t)q->path_mtu_bytes);
        atomic_store(&q->sh->remote_qpn, q->dest_qpn);
    } else if (to == IBV_QPS_RTS && from == IBV_QPS_RTR) {
        q->next_psn = q->sq_psn;
        q->last_ack_ns = fv_now_ns();
    }
    qp->state = to;
    atomic_store(&q->sh->state, to);
    pthread_mutex_unlock(&q->ctx->lock);
    return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init);
int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init)
{
    fv_qp_t *q = (fv_qp_t *)qp;
    (void)mask;
    pthread_mutex_lock(&q->ctx->lock);
    memset(a, 0, sizeof *a);
    a->qp_state = a->cur_qp_state = qp->state;
    a->path_mtu = q->path_mtu_bytes ? (enum ibv_mtu)__builtin_ctz((unsigned)q->path_mtu_bytes >> 7) : 0;
    a->rq_psn = q->epsn;
    a->sq_psn = q->next_psn;
    a->dest_qp_num = q->dest_qpn;
    a->qp_access_flags = (unsigned)q->access;
    a->cap = q->cap;
    a->ah_attr = q->ah;
    a->port_num = (uint8_t)q->port;
    a->timeout = (uint8_t)q->timeout;
    a->retry_cnt = (uint8_t)q->retry_cnt;
    a->rnr_retry = (uint8_t)q->rnr_retry;
    a->min_rnr_timer = (uint8_t)q->min_rnr_timer;
    if (init) {
        memset(init, 0, sizeof *init);
        init->send_cq = qp->send_cq;
        init->recv_cq = qp->recv_cq;
        init->cap = q->cap;
        init->qp_type = IBV_QPT_RC;
        init->sq_sig_all = q->sig_all;
    }
    pthread_mutex_unlock(&q->ctx->lock);
    return 0;
}

static int wr_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE: return FV_OP_WRITE;
    case IBV_WR_RDMA_WRITE_WITH_IMM: return FV_OP_WRITE_IMM;
    case IBV_WR_SEND: return FV_OP_SEND;
    case IBV_WR_SEND_WITH_IMM: return FV_OP_SEND_IMM;
    default: return 0; /* reads and atomics are not modelled */
    }
}

/* Validates and queues one send WR; an errno value when it is refused. */
static int post_one(fv_qp_t *q, const struct ibv_send_wr *wr)
{
    int op = wr_opcode(wr->opcode);
    if (q->qp.state != IBV_QPS_RTS && q->qp.state != IBV_QPS_ERR)
        return EINVAL; /* nothing may be posted to a send queue before RTS */
    if (!op || wr->num_sge < 0 || wr->num_sge > (int)q->cap.max_send_sge)
        return EINVAL;
    if (q->sq_head - atomic_load(&q->sq_retired) >= q->cap.max_send_wr)
        return ENOMEM; /* the send queue is full */
    fv_wqe_t *w = &q->sq[q->sq_head % q->cap.max_send_wr];
    memset(w, 0, sizeof *w);
    for (int i = 0; i < wr->num_sge; i++)
        w->len += wr->sg_list[i].length;
    if (wr->send_flags & IBV_SEND_INLINE) {
        if (w->len > q->cap.max_inline_data)
            return EINVAL;
        size_t off = 0;
        for (int i = 0; i < wr->num_sge; i++) {
            memcpy(w->inl + off, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
        w->is_inline = 1;
    } else {
        w->num_sge = wr->num_sge;
        if (wr->num_sge > 0) /* a zero-length write may give no list */
            memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *w->sge);
    }
    w->wr_id = wr->wr_id;
    w->opcode = op;
    w->signaled = q->sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
    w->raddr = wr->wr.rdma.remote_addr;
    w->rkey = wr->wr.rdma.rkey;
    w->imm = wr->imm_data;
    if ((op == FV_OP_WRITE || op == FV_OP_WRITE_IMM) && w->len > 0 && atomic_exchange(&fv_inject_bad_rkey, 0))
        w->rkey ^= 0x00ffff00u;
    w->msn = q->sq_head++;
    return 0;
}

int fv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int fv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    fv_qp_t *q = (fv_qp_t *)qp;
    int rc = 0;
    pthread_mutex_lock(&q->ctx->lock);
    for (; wr; wr = wr->next)
        if ((rc = post_one(q, wr)) != 0) {
            *bad = wr;
            break;
        }
    /* The doorbell: the NIC starts on it at once (and its thread later). */
    fv_nic_progress(q->ctx);
    pthread_mutex_unlock(&q->ctx->lock);
    return rc;
}

int fv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int fv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    fv_qp_t *q = (fv_qp_t *)qp;
    int rc = 0;
    pthread_mutex_lock(&q->ctx->lock);
    for (; wr; wr = wr->next) {
        if (qp->state == IBV_QPS_RESET || wr->num_sge < 0 || wr->num_sge > (int)q->cap.max_recv_sge)
            rc = EINVAL;
        else if (q->rq_head - atomic_load(&q->rq_retired) >= q->cap.max_recv_wr)
            rc = ENOMEM; /* the receive queue is full */
        if (rc) {
            *bad = wr;
            break;
        }
        fv_rwqe_t *r = &q->rq[q->rq_head++ % q->cap.max_recv_wr];
        r->wr_id = wr->wr_id;
        r->num_sge = wr->num_sge;
        if (wr->num_sge > 0) /* a receive for a write with immediate may give no list */
            memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *r->sge);
    }
    if (qp->state == IBV_QPS_ERR)
        fv_qp_to_error(q);         /* flushes what was just posted */
    fv_ring_doorbell(q->ctx->seg); /* a responder waiting for a WQE may go on */
    pthread_mutex_unlock(&q->ctx->lock);
    return rc;
}
