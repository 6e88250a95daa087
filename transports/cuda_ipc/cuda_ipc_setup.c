/* SPDX-License-Identifier: MIT */
/*
 * cuda_ipc set-up: the host segments (created, keyed and unlinked as shm
 * does) and the FIFO each rank publishes at its first device call.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/env_config.h"
#include "transports/cuda_ipc/cuda_ipc.h"
#include "transports/local.h"
#include "core/log.h"

#ifdef TT_HAVE_CUDA
extern const tt_ipc_backend_t tt_ipc_cuda_backend;
static const tt_ipc_backend_t *current_backend = &tt_ipc_cuda_backend;
#else
static const tt_ipc_backend_t *current_backend;
#endif

const tt_ipc_backend_t *tt_ipc_backend(void)
{
    return current_backend;
}

void tt_ipc_set_backend(const tt_ipc_backend_t *backend)
{
    current_backend = backend;
}

static size_t line_up(size_t n)
{
    return (n + TT_LOCAL_LINE - 1) / TT_LOCAL_LINE * TT_LOCAL_LINE;
}

size_t tt_ipc_queue_offset(int nchannels, int nslots, int sender, int channel)
{
    size_t queue = sizeof(tt_local_queue_t) + (size_t)nslots * sizeof(tt_local_slot_t);
    return line_up(sizeof(tt_ipc_seg_hdr_t)) + queue * ((size_t)sender * (size_t)nchannels + (size_t)channel);
}

size_t tt_ipc_segment_bytes(int nranks, int nchannels, int nslots)
{
    return tt_ipc_queue_offset(nchannels, nslots, nranks, 0);
}

size_t tt_ipc_fifo_offset(int nchannels, int nslots, size_t slot_bytes, int receiver, int channel)
{
    return ((size_t)receiver * (size_t)nchannels + (size_t)channel) * (size_t)nslots * slot_bytes;
}

/* Ranks of one host, ranks of one process included (ncclCommInitAll's
 * threads): CUDA refuses to open an IPC handle in the process that made
 * it, so those share their FIFOs by address instead (open_peer). */
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
    if (tt_config_int(TT_CFG_CUDA_IPC) == 0) {
        snprintf(why, len, "TUTTI_CUDA_IPC=0");
        return 0;
    }
    return !current_backend->usable || current_backend->usable(why, len);
}

static tutti_status_t ipc_listen(const tt_tp_env_t *env, void **ctxp, void *addr, size_t *addr_len)
{
    char why[96];
    if (!ipc_probe(why, sizeof why)) {
        TT_INFO(TT_SUB_NET, "cuda_ipc not offered: %s", why);
        return TUTTI_ERR_UNSUPPORTED;
    }
    tt_ipc_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return TUTTI_ERR_NO_MEMORY;
    *ctx = (tt_ipc_ctx_t){.env = env,
                          .be = current_backend,
                          .nchannels = env->nchannels,
                          .nslots = (int)tt_config_int(TT_CFG_IPC_SLOTS),
                          .slot_bytes = (size_t)tt_config_int(TT_CFG_IPC_SLOT_BYTES),
                          .reach_verdict = -1};
    if (ctx->nslots < 1 || ctx->slot_bytes < 256 || ctx->slot_bytes % 256) {
        TT_ERROR(TT_SUB_CONFIG, "TUTTI_IPC_SLOTS must be >= 1 and TUTTI_IPC_SLOT_BYTES a multiple of 256");
        free(ctx);
        return TUTTI_ERR_CONFIG;
    }
    snprintf(ctx->name, sizeof ctx->name, TT_IPC_NAME_FORMAT, (unsigned long long)env->key_tag, env->rank);
    snprintf(addr, TT_ADDR_MAX, "%s", ctx->name);
    *addr_len = strlen(ctx->name) + 1;
    *ctxp = ctx;
    return TUTTI_SUCCESS;
}

static tutti_status_t segment_create(tt_ipc_ctx_t *ctx)
{
    const tt_tp_env_t *env = ctx->env;
    ctx->seg_bytes = tt_ipc_segment_bytes(env->nranks, ctx->nchannels, ctx->nslots);
    ctx->seg = tt_local_create("cuda_ipc", ctx->name, ctx->seg_bytes);
    if (!ctx->seg)
        return TUTTI_ERR_SYSTEM;
    /* Zero-filled: no announcements, no FIFO, empty queues. */
    ctx->seg->magic = TT_IPC_MAGIC;
    ctx->seg->owner = env->rank;
    ctx->seg->nranks = env->nranks;
    ctx->seg->nchannels = ctx->nchannels;
    ctx->seg->nslots = ctx->nslots;
    ctx->seg->slot_bytes = ctx->slot_bytes;
    memcpy(ctx->seg->key, env->key, TT_KEY_BYTES);
    return TUTTI_SUCCESS;
}

static tutti_status_t map_peer(tt_ipc_ctx_t *ctx, int peer, const char *name)
{
    tt_ipc_seg_hdr_t *seg = ctx->segs[peer] = tt_local_map("cuda_ipc", name, ctx->seg_bytes, peer);
    if (!seg)
        return TUTTI_ERR_SYSTEM;
    if (!tt_local_keyed(seg->magic, TT_IPC_MAGIC, seg->key, ctx->env->key) || seg->owner != peer) {
        TT_WARN(TT_SUB_NET, "cuda_ipc: refused segment %s: it does not carry this job's key", name);
        return TUTTI_ERR_AUTH;
    }
    if (seg->nranks != ctx->env->nranks || seg->nchannels != ctx->nchannels || seg->nslots != ctx->nslots ||
        seg->slot_bytes != ctx->slot_bytes) {
        TT_ERROR(TT_SUB_CONFIG, "cuda_ipc: rank %d uses other TUTTI_PIPELINE/TUTTI_IPC_* values than rank %d",
                 peer, ctx->env->rank);
        return TUTTI_ERR_CONFIG;
    }
    return TUTTI_SUCCESS;
}

static tt_ipc_conn_t *conn_new(tt_ipc_ctx_t *ctx, int peer)
{
    tt_ipc_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = (tt_ipc_conn_t){.peer = peer, .pid = ctx->env->endpoints[peer].pid, .ctx = ctx};
    c->pidfd = tt_local_watch(c->pid);
    c->peer_seg = ctx->segs[peer];
    int me = ctx->env->rank;
    for (int ch = 0; ch < ctx->nchannels; ch++) {
        char *out = (char *)c->peer_seg + tt_ipc_queue_offset(ctx->nchannels, ctx->nslots, me, ch);
        char *in = (char *)ctx->seg + tt_ipc_queue_offset(ctx->nchannels, ctx->nslots, peer, ch);
        c->out[ch] = (tt_ipc_side_t){.q = (tt_local_queue_t *)out,
                                     .hdrs = (tt_local_slot_t *)(out + sizeof(tt_local_queue_t))};
        c->in[ch] = (tt_ipc_side_t){.q = (tt_local_queue_t *)in,
                                    .hdrs = (tt_local_slot_t *)(in + sizeof(tt_local_queue_t))};
    }
    return c;
}

static void ipc_close(void *connp)
{
    tt_ipc_conn_t *c = connp;
    if (!c)
        return;
    if (c->peer_fifo && !c->shared)
        c->ctx->be->fifo_close(c->ctx->dev, c->peer_fifo, c->ctx->fifo_bytes);
    if (c->pidfd >= 0)
        close(c->pidfd);
    c->ctx->conns[c->peer] = NULL;
    free(c);
}

static tutti_status_t ipc_connect(void *ctxp, const int *peers, int npeers, const unsigned char *addrs,
                                  void **conns)
{
    tt_ipc_ctx_t *ctx = ctxp;
    const tt_tp_env_t *env = ctx->env;
    ctx->fifo_bytes = tt_ipc_fifo_offset(ctx->nchannels, ctx->nslots, ctx->slot_bytes, env->nranks, 0);
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

tutti_status_t tt_ipc_bind(void *ctxp, int device)
{
    tt_ipc_ctx_t *ctx = ctxp;
    if (ctx->fifo)
        return TUTTI_SUCCESS;
    const tt_ipc_backend_t *be = ctx->be;
    tt_ipc_seg_hdr_t *seg = ctx->seg;
    int e = ctx->dev ? 0 : be->attach(device, &ctx->dev);
    if (!e) {
        int n = 0;
        e = be->identity(ctx->dev, &seg->device, seg->reach, &n);
        seg->nreach = n;
    }
    if (!e)
        e = be->bus_id(ctx->dev, seg->bus_id, sizeof seg->bus_id);
    if (!e)
        e = be->fifo_alloc(ctx->dev, ctx->fifo_bytes, (void **)&ctx->fifo, seg->handle);
    ctx->device = device;
    seg->fifo_addr = (uint64_t)(uintptr_t)ctx->fifo;
    seg->fifo_device = device;
    seg->pid = (int32_t)getpid();
    if (e) {
        ctx->fifo = NULL;
        TT_WARN(TT_SUB_NET,
                "cuda_ipc: setting up this rank's %zu-byte FIFO failed (%s); device calls go "
                "through host staging",
                ctx->fifo_bytes, be->error(e));
        return TUTTI_ERR_SYSTEM;
    }
    tt_ipc_mem_init(ctx);
    atomic_store_explicit(&seg->fifo_ready, 1, memory_order_release);
    return TUTTI_SUCCESS;
}

/* Peer's FIFO: through its IPC handle, or as it is when the peer is a
 * thread of this process (a handle cannot be opened where it was made). */
static int open_peer(tt_ipc_ctx_t *ctx, tt_ipc_conn_t *c)
{
    const tt_ipc_seg_hdr_t *seg = c->peer_seg;
    void *p = NULL;
    int same_process = seg->pid == (int32_t)getpid();
    int e = same_process
                ? ctx->be->fifo_share(ctx->dev, (void *)(uintptr_t)seg->fifo_addr, seg->fifo_device, &p)
                : ctx->be->fifo_open(ctx->dev, seg->handle, ctx->fifo_bytes, &p);
    if (e) {
        TT_WARN(TT_SUB_NET,
                "cuda_ipc: opening rank %d's FIFO%s failed (%s); device calls go through host staging",
                c->peer, same_process ? " (same process)" : "", ctx->be->error(e));
        return e;
    }
    c->peer_fifo = p;
    c->shared = same_process;
    return 0;
}

int tt_ipc_open_peers(void *ctxp)
{
    tt_ipc_ctx_t *ctx = ctxp;
    if (ctx->opened || ctx->open_failed || !ctx->fifo)
        return ctx->opened;
    int all = 1;
    for (int r = 0; r < ctx->env->nranks; r++) {
        tt_ipc_conn_t *c = ctx->conns[r];
        if (r == ctx->env->rank || !c || c->peer_fifo)
            continue;
        if (!atomic_load_explicit(&c->peer_seg->fifo_ready, memory_order_acquire)) {
            all = 0; /* that rank has made no device call yet */
            continue;
        }
        if (open_peer(ctx, c)) {
            ctx->open_failed = 1;
            return 0;
        }
    }
    ctx->opened = all;
    return all;
}

static void ipc_abort(void *connp)
{
    tt_ipc_conn_t *c = connp;
    atomic_store_explicit(&c->ctx->seg->aborted, 1, memory_order_release);
}

/* Whether some rank gave up: its peers may still have our FIFO mapped, or
 * kernels reading it, so it stays allocated (the process's end frees it). */
static int anyone_aborted(const tt_ipc_ctx_t *ctx)
{
    for (int r = 0; ctx->segs && r < ctx->env->nranks; r++)
        if (ctx->segs[r] && atomic_load_explicit(&ctx->segs[r]->aborted, memory_order_acquire))
            return 1;
    return 0;
}

static int published_any(const tt_ipc_ctx_t *ctx)
{
    for (int r = 0; ctx->segs && r < ctx->env->nranks; r++)
        if (ctx->segs[r] && atomic_load_explicit(&ctx->segs[r]->fifo_ready, memory_order_acquire))
            return 1;
    return 0;
}

/* Every rank closes its connections (and so its mappings of the peers'
 * FIFOs) before finalizing: freeing our FIFO waits for all of them (a
 * barrier), since freeing memory that another process still has open is
 * undefined. After an abort there is no barrier to trust: the FIFO leaks. */
static void ipc_finalize(void *ctxp)
{
    tt_ipc_ctx_t *ctx = ctxp;
    int leak = 0;
    if (published_any(ctx)) /* the same answer on every rank: nobody binds after destroy's barrier */
        leak = anyone_aborted(ctx) || ctx->env->barrier(ctx->env->barrier_arg) != TUTTI_SUCCESS;
    leak = leak && ctx->fifo;
    if (leak)
        TT_INFO(TT_SUB_NET, "cuda_ipc: this rank's FIFO stays allocated: a peer may still use it");
    for (int r = 0; ctx->segs && r < ctx->env->nranks; r++)
        if (ctx->segs[r] && r != ctx->env->rank)
            munmap(ctx->segs[r], ctx->seg_bytes);
    if (ctx->fifo && !leak)
        ctx->be->fifo_free(ctx->dev, ctx->fifo, ctx->fifo_bytes);
    if (ctx->dev && !leak)
        ctx->be->detach(ctx->dev);
    if (ctx->seg) {
        if (!ctx->unlinked)
            shm_unlink(ctx->name);
        munmap(ctx->seg, ctx->seg_bytes);
    }
    free(ctx->segs);
    free(ctx->conns);
    free(ctx);
}

static const tt_device_ops_t ipc_device_ops = {
    .bind = tt_ipc_bind,
    .open_peers = tt_ipc_open_peers,
    .announce = tt_ipc_announce,
    .announcement = tt_ipc_announcement,
    .reach_all = tt_ipc_reach_all,
    .bus_id = tt_ipc_bus_id,
    .mem = tt_ipc_mem,
};

const tt_transport_ops_t tt_cuda_ipc_ops = {
    .name = "cuda_ipc",
    .summary = "device buffers of ranks on one host through GPU FIFOs shared by CUDA IPC handles; kernels "
               "read peer memory",
    .caps = TT_CAP_DEVICE_MEM,
    .link = TT_LINK_PCIE,
    .probe = ipc_probe,
    .reachable = ipc_reachable,
    .listen = ipc_listen,
    .connect = ipc_connect,
    .isend = tt_ipc_isend,
    .irecv = tt_ipc_irecv,
    .progress = tt_ipc_progress,
    .alive = tt_ipc_alive,
    .abort = ipc_abort,
    .close = ipc_close,
    .finalize = ipc_finalize,
    .device = &ipc_device_ops,
};
