/* SPDX-License-Identifier: MIT */
/*
 * cuda_ipc set-up: the host segments (created, keyed and unlinked as shm
 * does), the connections (liveness only: they carry no messages) and the
 * teardown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/env_config.h"
#include "core/log.h"
#include "core/shm_names.h"
#include "transports/cuda_ipc/cuda_ipc.h"
#include "transports/local.h"

#ifdef TT_HAVE_CUDA
static const tt_cuda_ipc_backend_t *current_backend = &tt_cuda_ipc_runtime_backend;
#else
static const tt_cuda_ipc_backend_t *current_backend;
#endif

void tt_cuda_ipc_set_backend(const tt_cuda_ipc_backend_t *backend)
{
    current_backend = backend;
}

uint64_t tt_cuda_ipc_pid_ns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Ranks of one host, ranks of one process included (ncclCommInitAll's
 * threads): CUDA refuses to open an IPC handle in the process that made
 * it, so those share their windows by address instead. */
static int ipc_reachable(const tt_tp_env_t *env, int peer)
{
    return env->endpoints[peer].host_id == env->endpoints[env->rank].host_id;
}

static int ipc_probe(char *why, size_t len)
{
    if (!current_backend) {
        snprintf(why, len, "this tutti was built without CUDA");
        return 0;
    }
    if (tt_config_table_int(&tt_cuda_ipc_config, TT_CFG_CUDA_IPC) == 0) {
        snprintf(why, len, "TUTTI_CUDA_IPC=0");
        return 0;
    }
    return !current_backend->usable || current_backend->usable(why, len) == TUTTI_SUCCESS;
}

static tutti_status_t ipc_listen(const tt_tp_env_t *env, void **ctxp, void *addr, size_t *addr_len)
{
    char why[96];
    if (!ipc_probe(why, sizeof why)) {
        TT_INFO(TT_SUB_NET, "cuda_ipc not offered: %s", why);
        return TUTTI_ERR_UNSUPPORTED;
    }
    tt_cuda_ipc_ctx_t *ctx = calloc(1, sizeof *ctx);
    tt_direct_peer_t *view = calloc((size_t)env->nranks, sizeof *view);
    if (!ctx || !view) {
        free(ctx);
        free(view);
        return TUTTI_ERR_NO_MEMORY;
    }
    *ctx = (tt_cuda_ipc_ctx_t){.env = env,
                               .be = current_backend,
                               .window_bytes =
                                   (size_t)tt_config_table_int(&tt_cuda_ipc_config, TT_CFG_IPC_WINDOW_BYTES),
                               .view = view,
                               .reach_verdict = -1};
    /* The sends' regions follow the collectives' part (cuda_ipc.h). */
    ctx->mapped_bytes = ctx->window_bytes + ctx->window_bytes / 2;
    ctx->slot_bytes = ctx->window_bytes / 2 / (size_t)env->nranks / 2 / 256 * 256;
    snprintf(ctx->name, sizeof ctx->name, TT_IPC_NAME_FORMAT, (unsigned long long)env->key_tag, env->rank);
    snprintf(addr, TT_ADDR_MAX, "%s", ctx->name);
    *addr_len = strlen(ctx->name) + 1;
    *ctxp = ctx;
    return TUTTI_SUCCESS;
}

static tutti_status_t segment_create(tt_cuda_ipc_ctx_t *ctx)
{
    const tt_tp_env_t *env = ctx->env;
    ctx->seg_bytes = tt_cuda_ipc_segment_bytes(env->nranks);
    ctx->seg = tt_local_create("cuda_ipc", ctx->name, ctx->seg_bytes);
    if (!ctx->seg)
        return TUTTI_ERR_SYSTEM;
    /* Zero-filled: no announcements, no window, empty inboxes. */
    ctx->seg->magic = TT_IPC_MAGIC;
    ctx->seg->owner = env->rank;
    ctx->seg->nranks = env->nranks;
    ctx->seg->window_bytes = ctx->window_bytes;
    ctx->seg->pid = (int32_t)getpid();
    ctx->seg->pid_ns = tt_cuda_ipc_pid_ns();
    memcpy(ctx->seg->key, env->key, TT_KEY_BYTES);
    return TUTTI_SUCCESS;
}

static tutti_status_t map_peer(tt_cuda_ipc_ctx_t *ctx, int peer, const char *name)
{
    tt_cuda_ipc_seg_hdr_t *seg = ctx->segs[peer] = tt_local_map("cuda_ipc", name, ctx->seg_bytes, peer);
    if (!seg)
        return TUTTI_ERR_SYSTEM;
    if (!tt_local_keyed(seg->magic, TT_IPC_MAGIC, seg->key, ctx->env->key) || seg->owner != peer) {
        TT_WARN(TT_SUB_NET, "cuda_ipc: refused segment %s: it does not carry this job's key", name);
        return TUTTI_ERR_AUTH;
    }
    if (seg->nranks != ctx->env->nranks || seg->window_bytes != ctx->window_bytes) {
        TT_ERROR(TT_SUB_CONFIG, "cuda_ipc: rank %d uses another TUTTI_IPC_WINDOW_BYTES than rank %d", peer,
                 ctx->env->rank);
        return TUTTI_ERR_CONFIG;
    }
    return TUTTI_SUCCESS;
}

/* A peer in another PID namespace (another container) cannot be watched
 * by its PID: it may even equal one of ours. Its segment says so. */
static tt_cuda_ipc_conn_t *conn_new(tt_cuda_ipc_ctx_t *ctx, int peer)
{
    tt_cuda_ipc_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    const tt_cuda_ipc_seg_hdr_t *seg = ctx->segs[peer];
    int same_ns = seg->pid_ns == ctx->seg->pid_ns;
    *c = (tt_cuda_ipc_conn_t){.peer = peer, .pid = same_ns ? seg->pid : 0, .pidfd = -1, .ctx = ctx};
    if (same_ns)
        c->pidfd = tt_local_watch(c->pid);
    c->peer_seg = ctx->segs[peer];
    return c;
}

static void ipc_close(void *connp)
{
    tt_cuda_ipc_conn_t *c = connp;
    if (!c)
        return;
    tt_cuda_ipc_unbind_peer(c);
    if (c->pidfd >= 0)
        close(c->pidfd);
    c->ctx->conns[c->peer] = NULL;
    free(c);
}

static tutti_status_t ipc_connect(void *ctxp, const int *peers, int npeers, const unsigned char *addrs,
                                  void **conns)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    const tt_tp_env_t *env = ctx->env;
    ctx->segs = calloc((size_t)env->nranks, sizeof *ctx->segs);
    ctx->conns = calloc((size_t)env->nranks, sizeof *ctx->conns);
    tutti_status_t st = ctx->segs && ctx->conns ? segment_create(ctx) : TUTTI_ERR_NO_MEMORY;
    if (!st)
        ctx->segs[env->rank] = ctx->seg;
    /* Everyone has created its segment before anyone opens a peer's. */
    tutti_status_t bst = env->barrier(env->barrier_arg);
    if (!st)
        st = bst;
    for (int r = 0; r < env->nranks && !st; r++)
        if (r != env->rank)
            st = map_peer(ctx, r, (const char *)addrs + (size_t)r * TT_ADDR_MAX);
    for (int i = 0; i < npeers && !st; i++)
        if (!(conns[i] = ctx->conns[peers[i]] = conn_new(ctx, peers[i])))
            st = TUTTI_ERR_NO_MEMORY;
    bst = env->barrier(env->barrier_arg);
    if (ctx->seg) {
        shm_unlink(ctx->name);
        ctx->unlinked = 1;
    }
    if (!st)
        st = bst;
    if (st)
        for (int i = 0; i < npeers; i++) {
            ipc_close(conns[i]);
            conns[i] = NULL;
        }
    return st;
}

static void ipc_abort(void *connp)
{
    tt_cuda_ipc_conn_t *c = connp;
    atomic_store_explicit(&c->ctx->seg->aborted, 1, memory_order_release);
}

tutti_status_t tt_cuda_ipc_alive(void *connp)
{
    tt_cuda_ipc_conn_t *c = connp;
    if (atomic_load_explicit(&c->peer_seg->aborted, memory_order_acquire))
        return TUTTI_ERR_ABORTED;
    if (c->pid && tt_local_gone(c->pidfd, c->pid))
        return TUTTI_ERR_PEER_FAILED;
    return TUTTI_SUCCESS;
}

/* Whether some rank gave up: its peers may still have our window mapped,
 * or kernels reading it, so it stays allocated (the process's end frees it). */
static int anyone_aborted(const tt_cuda_ipc_ctx_t *ctx)
{
    for (int r = 0; ctx->segs && r < ctx->env->nranks; r++)
        if (ctx->segs[r] && atomic_load_explicit(&ctx->segs[r]->aborted, memory_order_acquire))
            return 1;
    return 0;
}

static int published_any(const tt_cuda_ipc_ctx_t *ctx)
{
    for (int r = 0; ctx->segs && r < ctx->env->nranks; r++)
        if (ctx->segs[r] && atomic_load_explicit(&ctx->segs[r]->window_ready, memory_order_acquire))
            return 1;
    return 0;
}

/* Every rank closes its mappings of the peers' windows before freeing its
 * own: freeing memory that another process still has open is undefined,
 * so the free waits for all of them (a barrier). After an abort there is
 * no barrier to trust, and where this rank's GPU may still use the windows
 * and segments (kept), nothing is released: they leak. */
static void ipc_finalize(void *ctxp)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    /* The same answer on every rank: nobody binds after destroy's barrier. */
    int leak = ctx->kept || (published_any(ctx) && anyone_aborted(ctx));
    tt_cuda_ipc_unbind(ctx);
    if (!leak && published_any(ctx) && ctx->env->barrier(ctx->env->barrier_arg) != TUTTI_SUCCESS)
        leak = 1;
    if (ctx->window && leak)
        TT_INFO(TT_SUB_NET,
                "cuda_ipc: this rank's window stays allocated: a peer or this GPU may still use it");
    else if (ctx->window)
        ctx->be->window_free(ctx->dev, ctx->window, ctx->mapped_bytes);
    if (ctx->dev && !leak)
        ctx->be->detach(ctx->dev);
    for (int r = 0; ctx->segs && r < ctx->env->nranks && !ctx->kept; r++)
        if (ctx->segs[r] && r != ctx->env->rank)
            munmap(ctx->segs[r], ctx->seg_bytes);
    if (ctx->seg) {
        if (!ctx->unlinked)
            shm_unlink(ctx->name);
        if (!ctx->kept)
            munmap(ctx->seg, ctx->seg_bytes);
    }
    free(ctx->segs);
    free(ctx->conns);
    free(ctx->view);
    free(ctx);
}

static const tt_device_ops_t ipc_device_ops = {
    .bind = tt_cuda_ipc_bind,
    .open_peers = tt_cuda_ipc_open_peers,
    .announce = tt_cuda_ipc_announce,
    .announcement = tt_cuda_ipc_announcement,
    .reach_all = tt_cuda_ipc_reach_all,
    .peers = tt_cuda_ipc_peers,
    .release = tt_cuda_ipc_release,
    .offer = tt_cuda_ipc_offer,
    .claim = tt_cuda_ipc_claim,
    .withdraw = tt_cuda_ipc_withdraw,
    .decide = tt_cuda_ipc_decide,
    .decision = tt_cuda_ipc_decision,
    .took = tt_cuda_ipc_took,
    .pair = tt_cuda_ipc_pair,
    .keep = tt_cuda_ipc_keep,
};

TT_CONFIG_TABLE_DEFINE(tt_cuda_ipc_config, "cuda_ipc", TT_IPC_CONFIG, TT_IPC_CONFIG_RULES);

const tt_transport_ops_t tt_cuda_ipc_ops = {
    .name = "cuda_ipc",
    .config = &tt_cuda_ipc_config,
    .summary = "device buffers of ranks on one host: GPU windows shared by CUDA IPC handles, read by the "
               "ranks' kernels in rounds their streams order",
    .caps = TT_CAP_DEVICE_MEM,
    .link = TT_LINK_PCIE,
    .probe = ipc_probe,
    .reachable = ipc_reachable,
    .listen = ipc_listen,
    .connect = ipc_connect,
    .alive = tt_cuda_ipc_alive,
    .abort = ipc_abort,
    .close = ipc_close,
    .finalize = ipc_finalize,
    .device = &ipc_device_ops,
};
