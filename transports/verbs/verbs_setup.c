/* SPDX-License-Identifier: MIT */
/*
 * verbs set-up. listen opens libibverbs and the ports this rank offers,
 * and publishes the preferred one's link layer and a set-up socket; where
 * nothing is usable it says why in one info line and is not offered (the
 * core then leaves verbs out for every rank). A pair connects when a call
 * first needs it (verbs_connect.c): the two ranks present the job key on
 * the set-up socket, agree on a pair of ports, exchange queue pair
 * numbers, PSNs and the registered region, and bring their queue pairs up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/env_config.h"
#include "core/log.h"
#include "core/try.h"
#include "transports/verbs/verbs.h"

static int verbs_reachable(const tt_tp_env_t *env, int peer)
{
    (void)env;
    (void)peer;
    return 1; /* offered by every rank: any two ranks meet through the fabric (or one NIC) */
}

static tutti_status_t read_config(tt_verbs_ctx_t *ctx)
{
    int64_t nqps = tt_config_table_int(&tt_verbs_config, TT_CFG_IB_QPS_PER_PEER),
            nslots = tt_config_table_int(&tt_verbs_config, TT_CFG_IB_SLOTS);
    int64_t slot = tt_config_table_int(&tt_verbs_config, TT_CFG_IB_SLOT_BYTES),
            zcopy = tt_config_table_int(&tt_verbs_config, TT_CFG_IB_ZCOPY_BYTES);
    int64_t timeout = tt_config_table_int(&tt_verbs_config, TT_CFG_IB_TIMEOUT),
            retry = tt_config_table_int(&tt_verbs_config, TT_CFG_IB_RETRY_CNT);
    if (nqps < 1 || nqps > TT_VERBS_MAX_QPS || nslots < 1 || nslots > 4096 || slot < 128 || slot % 64 ||
        slot > (1 << 30) || zcopy < 0 || timeout < 1 || timeout > 31 || retry < 0 || retry > 7) {
        TT_ERROR(TT_SUB_CONFIG,
                 "TUTTI_IB_QPS_PER_PEER must be 1..%d, TUTTI_IB_SLOTS 1..4096, TUTTI_IB_SLOT_BYTES "
                 "a multiple of 64 from 128, TUTTI_IB_TIMEOUT 1..31 and TUTTI_IB_RETRY_CNT 0..7",
                 TT_VERBS_MAX_QPS);
        return TUTTI_ERR_CONFIG;
    }
    ctx->nqps = (int)nqps;
    ctx->nslots = (int)nslots;
    ctx->slot_bytes = (size_t)slot;
    ctx->zcopy_bytes = (size_t)zcopy;
    ctx->timeout = (int)timeout;
    ctx->retry_cnt = (int)retry;
    /* A lost peer is noticed after the ACK timeout times (retries + 1). */
    double lost_ms = 4.096e-3 * (double)(1ll << timeout) * (double)(retry + 1);
    if (lost_ms > (double)ctx->env->timeout_ms)
        TT_WARN(TT_SUB_CONFIG,
                "verbs notices a lost peer after %.0f ms (TUTTI_IB_TIMEOUT, TUTTI_IB_RETRY_CNT), "
                "later than TUTTI_TIMEOUT",
                lost_ms);
    return TUTTI_SUCCESS;
}

/* Says once per process why verbs is not offered here. */
static void not_usable(tt_verbs_ctx_t *ctx, const char *why)
{
    static int said;
    snprintf(ctx->why, sizeof ctx->why, "%s", why);
    if (!said++)
        TT_INFO(TT_SUB_NET, "verbs: not used: %s; the next transport in TUTTI_TRANSPORTS carries its peers",
                why);
}

/* TUTTI_IB_GDR: asked for (1) it must work; auto looks only where the
 * application already runs CUDA; 0 never. */
static tutti_status_t choose_gdr(tt_verbs_ctx_t *ctx)
{
    const char *setting = tt_config_table_str(&tt_verbs_config, TT_CFG_IB_GDR);
    tt_gdr_caps_t caps = {0};
    char why[TT_VERBS_WHY];
    int probe = strcmp(setting, "1") == 0 || (strcmp(setting, "auto") == 0 && tt_verbs_gdr_cuda_loaded());
    if (probe)
        tt_verbs_gdr_probe(ctx->ibv, &caps);
    tutti_status_t st = tt_verbs_gdr_decide(setting, &caps, &ctx->gdr, why, sizeof why);
    if (st)
        TT_ERROR(TT_SUB_CONFIG, "verbs: GPUDirect RDMA: %s", why);
    else if (probe)
        TT_INFO(TT_SUB_NET, "verbs: device buffers %s%s", ctx->gdr ? "use GPUDirect RDMA" : "are staged: ",
                ctx->gdr == TT_GDR_DMABUF    ? " (dmabuf)"
                : ctx->gdr == TT_GDR_PEERMEM ? " (nvidia_peermem)"
                                             : why);
    return st;
}

static tutti_status_t open_resources(tt_verbs_ctx_t *ctx, char *why, size_t len)
{
    TT_TRY(tt_verbs_open_ports(ctx->ibv, ctx->env, ctx->dev, &ctx->ndev, why, len));
    TT_TRY(choose_gdr(ctx));
    /* The preferred port's resources now, so that a port that cannot serve
     * says so here; the others' when a peer needs them. */
    TT_TRY(tt_verbs_dev_ready(ctx, &ctx->dev[0], why, len));
    for (int i = 0; i < ctx->ndev; i++) {
        const tt_verbs_port_t *p = &ctx->dev[i].port;
        TT_DEBUG(TT_SUB_NET, "verbs: rank %d %s %s port %d (%s, LID %u, GID index %d, MTU %d)",
                 ctx->env->rank, i ? "also offers" : "prefers", p->dev, p->port,
                 p->roce ? "RoCE" : "InfiniBand", p->lid, p->gid_index, 128 << p->mtu);
    }
    tt_verbs_offer_make(ctx);
    return TUTTI_SUCCESS;
}

static void verbs_finalize(void *ctxp)
{
    tt_verbs_ctx_t *ctx = ctxp;
    tt_verbs_acceptor_stop(ctx); /* before the ports: it may be bringing a pair up on one */
    if (ctx->listen_fd >= 0)
        close(ctx->listen_fd);
    for (int i = 0; i < ctx->ndev; i++) {
        tt_verbs_dev_t *d = &ctx->dev[i];
        tt_verbs_cache_free(d->cache);
        if (d->pd)
            ctx->ibv->dealloc_pd(d->pd);
    }
    for (int i = 0; i < ctx->ndev; i++) /* after every PD of a context */
        if (ctx->dev[i].owns_ctx)
            ctx->ibv->close_device(ctx->dev[i].port.ctx);
    if (ctx->owner == getpid())
        pthread_mutex_destroy(&ctx->lock);
    free(ctx->pending);
    free(ctx);
}

static tutti_status_t verbs_listen(const tt_tp_env_t *env, void **ctxp, void *addr, size_t *addr_len)
{
    tt_verbs_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return TUTTI_ERR_NO_MEMORY;
    ctx->env = env;
    ctx->listen_fd = ctx->wake_fd = ctx->busy_fd = -1;
    ctx->owner = getpid();
    pthread_mutex_init(&ctx->lock, NULL);
    tt_verbs_addr_t *a = &ctx->addr;
    a->magic = TT_VERBS_MAGIC;
    tutti_status_t st = read_config(ctx);
    if (!st && !(ctx->pending = calloc((size_t)env->nranks, sizeof *ctx->pending)))
        st = TUTTI_ERR_NO_MEMORY;
    char why[TT_VERBS_WHY];
    if (!st && !(ctx->ibv = tt_verbs_lib(why, sizeof why))) {
        not_usable(ctx, why);
        st = TUTTI_ERR_UNSUPPORTED;
    } else if (!st && (st = open_resources(ctx, why, sizeof why)) != TUTTI_SUCCESS) {
        if (st == TUTTI_ERR_UNSUPPORTED || st == TUTTI_ERR_SYSTEM) {
            not_usable(ctx, why);
            st = TUTTI_ERR_UNSUPPORTED;
        } else if (*why) {
            TT_ERROR(TT_SUB_CONFIG, "verbs: %s", why);
        }
    } else if (!st) {
        st = tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), &a->oob);
        if (!st)
            st = tt_sock_listen(&a->oob, &ctx->listen_fd);
    }
    if (st) { /* UNSUPPORTED: not offered on this rank, so the core uses it on none */
        verbs_finalize(ctx);
        return st;
    }
    ctx->usable = 1;
    a->usable = 1;
    const tt_verbs_port_t *p = &ctx->dev[0].port; /* the peers check the link layer against it */
    a->roce = (uint8_t)p->roce;
    a->port = (uint8_t)p->port;
    a->mtu = (uint8_t)p->mtu;
    a->lid = p->lid;
    a->gid_index = (int16_t)p->gid_index;
    a->gid = p->gid;
    a->nqps = (uint32_t)ctx->nqps;
    a->nslots = (uint32_t)ctx->nslots;
    a->slot_bytes = (uint32_t)ctx->slot_bytes;
    a->zcopy_bytes = (uint32_t)(ctx->zcopy_bytes > 0xffffffffu ? 0xffffffffu : ctx->zcopy_bytes);
    _Static_assert(sizeof *a <= TT_ADDR_MAX, "the verbs address fits a blob");
    memcpy(addr, a, sizeof *a);
    *addr_len = sizeof *a;
    *ctxp = ctx;
    return TUTTI_SUCCESS;
}

static void verbs_close(void *conn)
{
    tt_verbs_conn_destroy(conn);
}

static int verbs_probe(char *why, size_t len)
{
    const tt_ibv_t *ibv = tt_verbs_lib(why, len);
    return ibv && tt_verbs_probe(ibv, why, len);
}

const tt_transport_ops_t tt_verbs_ops = {
    .name = "verbs",
    .config = &tt_verbs_config,
    .summary =
        "RDMA verbs (InfiniBand, RoCE): RC queue pairs, writes with immediate, zero copy for large messages",
    .caps = TT_CAP_HOST_MEM,
    .link = TT_LINK_IB,
    .probe = verbs_probe,
    .reachable = verbs_reachable,
    .listen = verbs_listen,
    .offer = tt_verbs_offer,
    .answer = tt_verbs_answer,
    .join = tt_verbs_join,
    .withdraw = tt_verbs_withdraw,
    .isend = tt_verbs_isend,
    .irecv = tt_verbs_irecv,
    .peek = tt_verbs_peek,
    .progress = tt_verbs_progress,
    .arm = tt_verbs_arm,
    .disarm = tt_verbs_disarm,
    .alive = tt_verbs_alive,
    .abort = tt_verbs_abort,
    .close = verbs_close,
    .finalize = verbs_finalize,
};
