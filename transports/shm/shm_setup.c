/* SPDX-License-Identifier: MIT */
/*
 * shm set-up. Each rank creates its segment 0600 with O_EXCL under a name
 * derived from the job key's tag, stamps the key into it, and unlinks it as
 * soon as every rank has mapped its peers' segments, so a crash afterwards
 * leaves nothing in /dev/shm. A segment without the job key is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/env_config.h"
#include "transports/local.h"
#include "core/log.h"
#include "transports/shm/shm.h"

size_t tt_shm_queue_offset(int nchannels, int nslots, size_t slot_bytes, int sender, int channel)
{
    size_t queue = sizeof(tt_local_queue_t) + (size_t)nslots * (sizeof(tt_local_slot_t) + slot_bytes);
    size_t first = (sizeof(tt_shm_seg_hdr_t) + TT_LOCAL_LINE - 1) / TT_LOCAL_LINE * TT_LOCAL_LINE;
    return first + queue * ((size_t)sender * (size_t)nchannels + (size_t)channel);
}

size_t tt_shm_segment_bytes(int nlocal, int nchannels, int nslots, size_t slot_bytes)
{
    return tt_shm_queue_offset(nchannels, nslots, slot_bytes, nlocal, 0);
}

static int shm_reachable(const tt_tp_env_t *env, int peer)
{
    return env->endpoints[peer].host_id == env->endpoints[env->rank].host_id;
}

static void segment_name(char *out, size_t len, uint64_t tag, int rank)
{
    snprintf(out, len, TT_SHM_NAME_FORMAT, (unsigned long long)tag, rank);
}

static tutti_status_t shm_listen(const tt_tp_env_t *env, void **ctxp, void *addr, size_t *addr_len)
{
    tt_shm_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return TUTTI_ERR_NO_MEMORY;
    ctx->env = env;
    ctx->bell_fd = -1;
    ctx->nchannels = env->nchannels;
    ctx->nslots = (int)tt_config_table_int(&tt_shm_config, TT_CFG_SHM_SLOTS);
    ctx->slot_bytes = (size_t)tt_config_table_int(&tt_shm_config, TT_CFG_SHM_SLOT_BYTES);
    if (ctx->nslots < 1 || ctx->slot_bytes < 64 || ctx->slot_bytes % 64) {
        TT_ERROR(TT_SUB_CONFIG, "TUTTI_SHM_SLOTS must be >= 1 and TUTTI_SHM_SLOT_BYTES a multiple of 64");
        free(ctx);
        return TUTTI_ERR_CONFIG;
    }
    segment_name(ctx->name, sizeof ctx->name, env->key_tag, env->rank);
    /* The segment is sized and created at connect time, once the number
     * of same-host peers is known; the name is all peers need. */
    snprintf(addr, TT_ADDR_MAX, "%s", ctx->name);
    *addr_len = strlen(ctx->name) + 1;
    *ctxp = ctx;
    return TUTTI_SUCCESS;
}

static tutti_status_t segment_create(tt_shm_ctx_t *ctx)
{
    const tt_tp_env_t *env = ctx->env;
    ctx->seg_bytes = tt_shm_segment_bytes(ctx->nlocal, ctx->nchannels, ctx->nslots, ctx->slot_bytes);
    ctx->seg = tt_local_create("shm", ctx->name, ctx->seg_bytes);
    if (!ctx->seg)
        return TUTTI_ERR_SYSTEM;
    *ctx->seg = (tt_shm_seg_hdr_t){.magic = TT_SHM_MAGIC,
                                   .owner = env->rank,
                                   .nlocal = ctx->nlocal,
                                   .nchannels = ctx->nchannels,
                                   .nslots = ctx->nslots,
                                   .slot_bytes = ctx->slot_bytes};
    memcpy(ctx->seg->key, env->key, TT_KEY_BYTES);
    tt_shm_bell_create(ctx);
    return TUTTI_SUCCESS;
}

static tutti_status_t conn_map_peer(tt_shm_ctx_t *ctx, tt_shm_conn_t *c, const char *name)
{
    c->peer_seg = tt_local_map("shm", name, ctx->seg_bytes, c->peer);
    if (!c->peer_seg)
        return TUTTI_ERR_SYSTEM;
    if (!tt_local_keyed(c->peer_seg->magic, TT_SHM_MAGIC, c->peer_seg->key, ctx->env->key) ||
        c->peer_seg->owner != c->peer) {
        TT_WARN(TT_SUB_NET, "shm: refused segment %s: it does not carry this job's key", name);
        return TUTTI_ERR_AUTH;
    }
    if (c->peer_seg->nlocal != ctx->nlocal || c->peer_seg->nchannels != ctx->nchannels ||
        c->peer_seg->nslots != ctx->nslots || c->peer_seg->slot_bytes != ctx->slot_bytes) {
        TT_ERROR(TT_SUB_CONFIG, "shm: rank %d uses other TUTTI_PIPELINE/TUTTI_SHM_* values than rank %d",
                 c->peer, ctx->env->rank);
        return TUTTI_ERR_CONFIG;
    }
    int me = ctx->local_index[ctx->env->rank], them = ctx->local_index[c->peer];
    for (int ch = 0; ch < ctx->nchannels; ch++) {
        char *out =
            (char *)c->peer_seg + tt_shm_queue_offset(ctx->nchannels, ctx->nslots, ctx->slot_bytes, me, ch);
        char *in =
            (char *)ctx->seg + tt_shm_queue_offset(ctx->nchannels, ctx->nslots, ctx->slot_bytes, them, ch);
        c->out[ch] = (tt_shm_side_t){.q = (tt_local_queue_t *)out, .slots = out + sizeof(tt_local_queue_t)};
        c->in[ch] = (tt_shm_side_t){.q = (tt_local_queue_t *)in, .slots = in + sizeof(tt_local_queue_t)};
    }
    return tt_shm_bell_open(c);
}

static void conn_free(tt_shm_conn_t *c)
{
    if (!c)
        return;
    if (c->peer_seg)
        munmap(c->peer_seg, c->ctx->seg_bytes);
    if (c->pidfd >= 0)
        close(c->pidfd);
    if (c->bell_fd >= 0)
        close(c->bell_fd);
    free(c);
}

static tutti_status_t shm_connect(void *ctxp, const int *peers, int npeers, const unsigned char *addrs,
                                  void **conns)
{
    tt_shm_ctx_t *ctx = ctxp;
    const tt_tp_env_t *env = ctx->env;
    tutti_status_t st = TUTTI_SUCCESS;
    ctx->local_index = malloc(sizeof(int) * (size_t)env->nranks);
    if (!ctx->local_index)
        return TUTTI_ERR_NO_MEMORY;
    for (int r = 0; r < env->nranks; r++)
        ctx->local_index[r] = shm_reachable(env, r) ? ctx->nlocal++ : -1;
    if (npeers > 0)
        st = segment_create(ctx);
    /* Everyone has created its segment before anyone opens a peer's. */
    tutti_status_t bst = env->barrier(env->barrier_arg);
    if (!st && bst)
        st = bst;
    for (int i = 0; i < npeers && !st; i++) {
        tt_shm_conn_t *c = calloc(1, sizeof *c);
        if (!c) {
            st = TUTTI_ERR_NO_MEMORY;
            break;
        }
        *c = (tt_shm_conn_t){.peer = peers[i],
                             .nchannels = ctx->nchannels,
                             .nslots = ctx->nslots,
                             .slot_bytes = ctx->slot_bytes,
                             .pidfd = -1,
                             .bell_fd = -1,
                             .ctx = ctx};
        conns[i] = c;
        c->pid = env->endpoints[peers[i]].pid;
        c->pidfd = tt_local_watch(c->pid);
        st = conn_map_peer(ctx, c, (const char *)addrs + (size_t)peers[i] * TT_ADDR_MAX);
    }
    /* Unlink once every rank has mapped what it needs (or failed trying). */
    bst = env->barrier(env->barrier_arg);
    if (ctx->seg) {
        shm_unlink(ctx->name);
        if (ctx->bell_path[0])
            unlink(ctx->bell_path);
        ctx->unlinked = 1;
    }
    if (!st && bst)
        st = bst;
    if (st)
        for (int i = 0; i < npeers; i++) {
            conn_free(conns[i]);
            conns[i] = NULL;
        }
    return st;
}

static void shm_abort(void *connp)
{
    tt_shm_conn_t *c = connp;
    atomic_store_explicit(&c->ctx->seg->aborted, 1, memory_order_release);
    tt_shm_ring_slow(c, 1); /* a peer asleep waiting for this rank looks now */
}

static void shm_close(void *connp)
{
    conn_free(connp);
}

static void shm_finalize(void *ctxp)
{
    tt_shm_ctx_t *ctx = ctxp;
    tt_shm_bell_close(ctx);
    if (ctx->seg) {
        if (!ctx->unlinked)
            shm_unlink(ctx->name);
        munmap(ctx->seg, ctx->seg_bytes);
    }
    free(ctx->local_index);
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
    .connect = shm_connect,
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
