/* SPDX-License-Identifier: MIT */
/*
 * shm set-up. At start the host's segment is made and mapped by every rank
 * of the host (shm_pool.c). A pair connects at first use
 * (src/comm/connect.c): each side gives the other, from its own pool, the
 * queues the other will send on (zeroed before the other hears of them),
 * and each side's blob says where they are and how large their slots are.
 * A segment without the job key is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/env_config.h"
#include "core/log.h"
#include "core/try.h"
#include "transports/local.h"
#include "transports/shm/shm.h"

static int shm_reachable(const tt_tp_env_t *env, int peer)
{
    return env->endpoints[peer].host_id == env->endpoints[env->rank].host_id;
}

static tutti_status_t shm_listen(const tt_tp_env_t *env, void **ctxp, void *addr, size_t *addr_len)
{
    (void)addr;
    tt_shm_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return TUTTI_ERR_NO_MEMORY;
    ctx->env = env;
    ctx->bell_fd = ctx->ring_fd = -1;
    ctx->nchannels = env->nchannels;
    ctx->nslots = (int)tt_config_table_int(&tt_shm_config, TT_CFG_SHM_SLOTS);
    ctx->slot_bytes = (size_t)tt_config_table_int(&tt_shm_config, TT_CFG_SHM_SLOT_BYTES);
    ctx->host_budget = (size_t)tt_config_table_int(&tt_shm_config, TT_CFG_SHM_HOST_BYTES);
    if (ctx->nslots < 1 || ctx->slot_bytes < 64 || ctx->slot_bytes % 64) {
        TT_ERROR(TT_SUB_CONFIG, "TUTTI_SHM_SLOTS must be >= 1 and TUTTI_SHM_SLOT_BYTES a multiple of 64");
        free(ctx);
        return TUTTI_ERR_CONFIG;
    }
    /* The segment is made at start, once the host's ranks are known; a
     * pair's blob says where its queues are. */
    *addr_len = 0;
    *ctxp = ctx;
    return TUTTI_SUCCESS;
}

static tutti_status_t shm_start(void *ctxp)
{
    tt_shm_ctx_t *ctx = ctxp;
    const tt_tp_env_t *env = ctx->env;
    ctx->local_index = malloc(sizeof(int) * (size_t)env->nranks);
    if (!ctx->local_index)
        return TUTTI_ERR_NO_MEMORY;
    for (int r = 0; r < env->nranks; r++)
        ctx->local_index[r] = shm_reachable(env, r) ? ctx->nlocal++ : -1;
    ctx->mine = calloc((size_t)ctx->nlocal, sizeof *ctx->mine);
    if (!ctx->mine)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = tt_shm_host_start(ctx);
    if (!st && ctx->host)
        tt_shm_bell_create(ctx);
    return st;
}

/* This rank's queues for peer, from its pool: the blob the peer sends on. */
static tutti_status_t shm_offer(void *ctxp, int peer, void *blob, size_t *len)
{
    tt_shm_ctx_t *ctx = ctxp;
    if (!ctx->host || ctx->local_index[peer] < 0)
        return TUTTI_ERR_UNSUPPORTED;
    tt_shm_region_t *r = &ctx->mine[ctx->local_index[peer]];
    TT_TRY(tt_shm_region_take(ctx, peer, r));
    memcpy(blob, r, sizeof *r);
    *len = sizeof *r;
    return TUTTI_SUCCESS;
}

static tutti_status_t shm_answer(void *ctxp, int peer, const void *offer, size_t offer_len, void *blob,
                                 size_t *len)
{
    (void)offer;
    (void)offer_len;
    return shm_offer(ctxp, peer, blob, len);
}

static void shm_withdraw(void *ctxp, int peer)
{
    tt_shm_ctx_t *ctx = ctxp;
    if (!ctx->host || ctx->local_index[peer] < 0)
        return;
    tt_shm_region_t *r = &ctx->mine[ctx->local_index[peer]];
    if (r->offset)
        tt_shm_region_give_back(ctx, r);
    memset(r, 0, sizeof *r);
}

/* Points the queues of one direction at a region. */
static void lay(tt_shm_ctx_t *ctx, tt_shm_side_t *side, const tt_shm_region_t *r)
{
    for (int ch = 0; ch < r->nchannels; ch++) {
        char *q = ctx->host + r->offset + tt_shm_queue_offset(r->nslots, r->slot_bytes, ch);
        side[ch] = (tt_shm_side_t){.q = (tt_local_queue_t *)q,
                                   .slots = q + sizeof(tt_local_queue_t),
                                   .slot_bytes = r->slot_bytes,
                                   .nslots = r->nslots};
    }
}

/* Whether a peer's region lies inside its own pool (a blob is the peer's word). */
static int region_ok(const tt_shm_ctx_t *ctx, int peer, const tt_shm_region_t *r)
{
    uint64_t pool = ((const tt_shm_host_t *)ctx->host)->pool_bytes;
    uint64_t base = TT_SHM_HOST_HDR + (uint64_t)ctx->local_index[peer] * pool;
    uint64_t len = tt_shm_region_bytes(r->nchannels, r->nslots, r->slot_bytes);
    return r->nchannels == ctx->nchannels && r->nslots >= 1 && r->slot_bytes >= 64 &&
           r->slot_bytes % 64 == 0 && r->slot_bytes <= ctx->slot_bytes &&
           r->offset >= base + TT_SHM_POOL_HDR && r->offset % TT_LOCAL_LINE == 0 && len <= pool &&
           r->offset + len <= base + pool;
}

static tutti_status_t shm_join(void *ctxp, int peer, int offered, const void *theirs, size_t len,
                               void **connp)
{
    tt_shm_ctx_t *ctx = ctxp;
    (void)offered;
    tt_shm_region_t r;
    if (len != sizeof r || !ctx->host)
        return TUTTI_ERR_PEER_FAILED;
    memcpy(&r, theirs, sizeof r);
    if (!region_ok(ctx, peer, &r)) {
        TT_ERROR(TT_SUB_NET, "shm: rank %d gave queues outside its pool, or of another TUTTI_PIPELINE", peer);
        return TUTTI_ERR_CONFIG;
    }
    tt_shm_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return TUTTI_ERR_NO_MEMORY;
    uint64_t pool = ((const tt_shm_host_t *)ctx->host)->pool_bytes;
    *c = (tt_shm_conn_t){.peer = peer, .nchannels = ctx->nchannels, .pidfd = -1, .ctx = ctx};
    c->peer_seg = (tt_shm_seg_hdr_t *)(ctx->host + TT_SHM_HOST_HDR + (uint64_t)ctx->local_index[peer] * pool);
    c->pid = ctx->env->endpoints[peer].pid;
    c->pidfd = tt_local_watch(c->pid);
    lay(ctx, c->out, &r);
    lay(ctx, c->in, &ctx->mine[ctx->local_index[peer]]);
    tt_shm_bell_open(c);
    *connp = c;
    return TUTTI_SUCCESS;
}

static void shm_abort(void *connp)
{
    tt_shm_conn_t *c = connp;
    atomic_store_explicit(&c->ctx->seg->aborted, 1, memory_order_release);
    tt_shm_ring_slow(c, 1); /* a peer asleep waiting for this rank looks now */
}

static void shm_close(void *connp)
{
    tt_shm_conn_t *c = connp;
    if (c->pidfd >= 0)
        close(c->pidfd);
    free(c);
}

static void shm_finalize(void *ctxp)
{
    tt_shm_ctx_t *ctx = ctxp;
    tt_shm_bell_close(ctx);
    tt_shm_host_unmap(ctx);
    free(ctx->local_index);
    free(ctx->mine);
    free(ctx);
}

TT_CONFIG_TABLE_DEFINE(tt_shm_config, "shm", TT_SHM_CONFIG, TT_SHM_CONFIG_RULES);

const tt_transport_ops_t tt_shm_ops = {
    .name = "shm",
    .config = &tt_shm_config,
    .summary = "shared-memory slot queues between ranks of one host; reduces straight from the sender's slot",
    .caps = TT_CAP_HOST_MEM,
    .link = TT_LINK_SHM,
    .reachable = shm_reachable,
    .listen = shm_listen,
    .start = shm_start,
    .offer = shm_offer,
    .answer = shm_answer,
    .join = shm_join,
    .withdraw = shm_withdraw,
    .isend = tt_shm_isend,
    .irecv = tt_shm_irecv,
    .peek = tt_shm_peek,
    .progress = tt_shm_progress,
    .arm = tt_shm_arm,
    .disarm = tt_shm_disarm,
    .alive = tt_shm_alive,
    .abort = shm_abort,
    .close = shm_close,
    .finalize = shm_finalize,
};
