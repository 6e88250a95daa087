/* SPDX-License-Identifier: MIT */
/*
 * One connection's resources: a region (receive slots, send staging, RTR
 * descriptors in and out), and on the port it runs on the region's
 * registration, a completion queue deep enough for every work request it
 * can have outstanding (so it cannot overrun), and RC queue pairs taken
 * through INIT, RTR and RTS with the peer's numbers. The port's resources
 * can be taken down again, so that a peer the first port cannot reach may
 * be tried from another.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "core/log.h"
#include "transports/verbs/verbs.h"

/* The channel an idle engine sleeps on (tt_verbs_arm), non-blocking so
 * that disarming takes what came without waiting; NULL where the library
 * or the provider has none (the engine then naps). */
static struct ibv_comp_channel *completion_channel(const tt_ibv_t *ibv, const tt_verbs_port_t *p)
{
    if (!ibv->create_comp_channel || !ibv->destroy_comp_channel || !ibv->get_cq_event || !ibv->ack_cq_events)
        return NULL;
    struct ibv_comp_channel *ch = ibv->create_comp_channel(p->ctx);
    int flags = ch ? fcntl(ch->fd, F_GETFL) : -1;
    if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        TT_INFO(TT_SUB_NET,
                "verbs: no completion channel on %s (%s): a waiting rank naps instead of sleeping", p->dev,
                strerror(errno));
        if (ch)
            ibv->destroy_comp_channel(ch);
        return NULL;
    }
    return ch;
}

size_t tt_verbs_region_bytes(int nch, int nslots, size_t slot_bytes)
{
    size_t rings = (size_t)nch * (size_t)nslots * slot_bytes;
    size_t rtr = (size_t)nch * TT_VERBS_RTR_DEPTH * sizeof(tt_verbs_rtr_t);
    return 2 * rings + 2 * rtr;
}

size_t tt_verbs_ring_off(const tt_verbs_conn_t *c, int ch, uint64_t slot)
{
    return ((size_t)ch * (size_t)c->nslots + (size_t)(slot % (uint64_t)c->nslots)) * c->slot_bytes;
}

size_t tt_verbs_stage_off(const tt_verbs_conn_t *c, int ch, uint64_t slot)
{
    return (size_t)c->nch * (size_t)c->nslots * c->slot_bytes + tt_verbs_ring_off(c, ch, slot);
}

size_t tt_verbs_rtr_in_off(const tt_verbs_conn_t *c, int ch, uint64_t pos)
{
    return 2 * (size_t)c->nch * (size_t)c->nslots * c->slot_bytes +
           ((size_t)ch * TT_VERBS_RTR_DEPTH + (size_t)(pos % TT_VERBS_RTR_DEPTH)) * sizeof(tt_verbs_rtr_t);
}

size_t tt_verbs_rtr_out_off(const tt_verbs_conn_t *c, int ch, uint64_t pos)
{
    return tt_verbs_rtr_in_off(c, ch, pos) + (size_t)c->nch * TT_VERBS_RTR_DEPTH * sizeof(tt_verbs_rtr_t);
}

/* Work requests a queue pair serving nch channels may have outstanding in
 * each direction: a slot's data and its credit per slot, an RTR and a
 * direct write per RTR position, and room for a probe and an abort. */
static uint32_t queue_need(int nch, int nslots)
{
    return (uint32_t)(nch * (2 * nslots + 2 * TT_VERBS_RTR_DEPTH) + 8);
}

static struct ibv_qp *qp_create(tt_verbs_conn_t *c, tt_verbs_qp_t *q)
{
    /* Inline data as large as the device takes, down to none. */
    static const uint32_t inl[] = {256, 128, 64, 0};
    for (size_t i = 0; i < sizeof inl / sizeof inl[0]; i++) {
        struct ibv_qp_init_attr ia = {.send_cq = c->cq,
                                      .recv_cq = c->cq,
                                      .cap = {.max_send_wr = q->sq_depth,
                                              .max_recv_wr = q->rq_depth,
                                              .max_send_sge = 1,
                                              .max_recv_sge = 1,
                                              .max_inline_data = inl[i]},
                                      .qp_type = IBV_QPT_RC};
        struct ibv_qp *qp = c->ctx->ibv->create_qp(c->dev->pd, &ia);
        if (qp) {
            q->max_inline = ia.cap.max_inline_data;
            return qp;
        }
    }
    return NULL;
}

static int qp_init(tt_verbs_conn_t *c, struct ibv_qp *qp)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .port_num = (uint8_t)c->dev->port.port,
                            .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE};
    return c->ctx->ibv->modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

tutti_status_t tt_verbs_conn_create(tt_verbs_ctx_t *ctx, tt_verbs_conn_t *c)
{
    c->ctx = ctx;
    c->nch = ctx->env->nchannels;
    c->nqps = ctx->nqps < c->nch ? ctx->nqps : c->nch;
    c->nslots = ctx->nslots;
    c->slot_bytes = ctx->slot_bytes;
    c->zcopy_bytes = ctx->zcopy_bytes;
    c->region_bytes = tt_verbs_region_bytes(c->nch, c->nslots, c->slot_bytes);
    c->region = mmap(NULL, c->region_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->region == MAP_FAILED) {
        c->region = NULL;
        return TUTTI_ERR_NO_MEMORY;
    }
    for (int ch = 0; ch < c->nch; ch++) {
        c->rx[ch].piece = calloc((size_t)c->nslots, sizeof(uint32_t));
        if (!c->rx[ch].piece)
            return TUTTI_ERR_NO_MEMORY;
    }
    return TUTTI_SUCCESS;
}

/* The queue depths, and the completion queue that holds them all. */
static int make_cq(tt_verbs_conn_t *c, char *why, size_t len)
{
    const tt_verbs_port_t *p = &c->dev->port;
    int cqe = 0;
    for (int qi = 0; qi < c->nqps; qi++) {
        tt_verbs_qp_t *q = &c->qp[qi];
        int nch = (c->nch - qi + c->nqps - 1) / c->nqps; /* channels ch with ch % nqps == qi */
        uint32_t need = queue_need(nch, c->nslots);
        if (need > (uint32_t)p->max_qp_wr) {
            snprintf(why, len, "%u work requests per queue pair exceed %s's %d (lower TUTTI_IB_SLOTS)", need,
                     p->dev, p->max_qp_wr);
            return -1;
        }
        q->sq_depth = q->rq_depth = need;
        q->sig_every = need / 4 ? need / 4 : 1;
        cqe += (int)(q->sq_depth + q->rq_depth);
    }
    c->chan = completion_channel(c->ctx->ibv, p);
    c->cq = c->ctx->ibv->create_cq(p->ctx, cqe, NULL, c->chan, 0);
    if (!c->cq)
        snprintf(why, len, "creating a completion queue of %d entries on %s failed: %s", cqe, p->dev,
                 strerror(errno));
    return c->cq ? 0 : -1;
}

/* Registers the region and makes the queue pairs on c->dev; 0, or -1
 * with why filled. */
static int attach(tt_verbs_conn_t *c, tt_verbs_wire_t *mine, char *why, size_t len)
{
    const tt_ibv_t *ibv = c->ctx->ibv;
    if (tt_verbs_dev_ready(c->ctx, c->dev, why, len))
        return -1;
    c->mr =
        ibv->reg_mr(c->dev->pd, c->region, c->region_bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!c->mr) {
        snprintf(why, len, "registering %zu bytes on %s failed: %s (is RLIMIT_MEMLOCK too low?)",
                 c->region_bytes, c->dev->port.dev, strerror(errno));
        return -1;
    }
    if (make_cq(c, why, len))
        return -1;
    mine->region = (uintptr_t)c->region;
    mine->rkey = c->mr->rkey;
    for (int qi = 0; qi < c->nqps; qi++) {
        tt_verbs_qp_t *q = &c->qp[qi];
        int rc;
        q->qp = qp_create(c, q);
        if (!q->qp || (rc = qp_init(c, q->qp)) != 0) {
            snprintf(why, len, "%s a queue pair on %s failed: %s", q->qp ? "initializing" : "creating",
                     c->dev->port.dev, strerror(q->qp ? rc : errno));
            return -1;
        }
        /* Receives are posted before the peer can send: from INIT on. */
        if (tt_verbs_post_recvs(c, qi, q->rq_depth)) {
            snprintf(why, len, "%s", c->why);
            return -1;
        }
        uint32_t psn = 0;
        if (getrandom(&psn, sizeof psn, 0) != (ssize_t)sizeof psn)
            psn = (uint32_t)(uintptr_t)q;
        mine->qpn[qi] = q->qp->qp_num;
        mine->psn[qi] = psn & 0xffffff;
    }
    return 0;
}

tutti_status_t tt_verbs_conn_attach(tt_verbs_conn_t *c, tt_verbs_dev_t *dev, tt_verbs_wire_t *mine)
{
    memset(mine, 0, sizeof *mine);
    mine->magic = TT_VERBS_MAGIC;
    mine->rank = c->ctx->env->rank;
    c->dev = dev;
    mine->failed = attach(c, mine, mine->why, sizeof mine->why) != 0;
    return mine->failed ? TUTTI_ERR_SYSTEM : TUTTI_SUCCESS;
}

static int qp_up(tt_verbs_conn_t *c, struct ibv_qp *qp, const tt_verbs_port_info_t *peer, uint32_t dest_qpn,
                 uint32_t rq_psn, uint32_t sq_psn)
{
    const tt_verbs_ctx_t *ctx = c->ctx;
    const tt_verbs_port_t *p = &c->dev->port;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                            .path_mtu = p->mtu < (enum ibv_mtu)peer->mtu ? p->mtu : (enum ibv_mtu)peer->mtu,
                            .dest_qp_num = dest_qpn,
                            .rq_psn = rq_psn,
                            .max_dest_rd_atomic = 1,
                            .min_rnr_timer = 12, /* 0.64 ms; receives are posted ahead, so rarely used */
                            .ah_attr = {.dlid = peer->lid, .port_num = (uint8_t)p->port}};
    if (p->gid_index >= 0) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = peer->gid;
        a.ah_attr.grh.sgid_index = (uint8_t)p->gid_index;
        a.ah_attr.grh.hop_limit = 255;
    }
    int rc = ctx->ibv->modify_qp(qp, &a,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (!rc) {
        struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS,
                                .sq_psn = sq_psn,
                                .timeout = (uint8_t)ctx->timeout,
                                .retry_cnt = (uint8_t)ctx->retry_cnt,
                                .rnr_retry = 7, /* for ever: a missing receive is a bug, not a loss */
                                .max_rd_atomic = 1};
        rc = ctx->ibv->modify_qp(qp, &s,
                                 IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
    }
    return rc;
}

int tt_verbs_conn_connect(tt_verbs_conn_t *c, const tt_verbs_port_info_t *peer, const tt_verbs_wire_t *theirs,
                          const tt_verbs_wire_t *mine)
{
    c->peer_region = theirs->region;
    c->peer_rkey = theirs->rkey;
    int rc = 0;
    for (int qi = 0; qi < c->nqps && !rc; qi++)
        rc = qp_up(c, c->qp[qi].qp, peer, theirs->qpn[qi], theirs->psn[qi], mine->psn[qi]);
    return rc;
}

void tt_verbs_conn_detach(tt_verbs_conn_t *c)
{
    const tt_ibv_t *ibv = c->ctx->ibv;
    for (int qi = 0; qi < c->nqps; qi++) {
        if (c->qp[qi].qp)
            ibv->destroy_qp(c->qp[qi].qp);
        memset(&c->qp[qi], 0, sizeof c->qp[qi]);
    }
    if (c->cq)
        ibv->destroy_cq(c->cq); /* every event it raised was acknowledged (tt_verbs_disarm) */
    if (c->chan)
        ibv->destroy_comp_channel(c->chan);
    if (c->mr)
        ibv->dereg_mr(c->mr);
    c->cq = NULL;
    c->chan = NULL;
    c->mr = NULL;
    c->peer_region = 0;
    c->failed = TUTTI_SUCCESS;
}

void tt_verbs_conn_destroy(tt_verbs_conn_t *c)
{
    for (int ch = 0; ch < c->nch && c->dev; ch++) {
        tt_verbs_cache_put(c->dev->cache, c->tx[ch].reg);
        for (int i = 0; i < TT_VERBS_RTR_DEPTH; i++)
            tt_verbs_cache_put(c->dev->cache, c->rx[ch].regs[i]);
    }
    tt_verbs_conn_detach(c);
    for (int ch = 0; ch < c->nch; ch++)
        free(c->rx[ch].piece);
    if (c->region)
        munmap(c->region, c->region_bytes);
    free(c);
}
