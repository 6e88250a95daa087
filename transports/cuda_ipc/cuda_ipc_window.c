/* SPDX-License-Identifier: MIT */
/*
 * What a direct run touches, set up on the caller's thread at the first
 * device calls (with the bound GPU current, before anything is queued):
 * this rank's window and its segment registered with its GPU (bind), then
 * each peer's window opened and its segment registered as the peers
 * publish theirs (open_peers). Also the host's side of the inbox words:
 * releasing this rank's stream from a peer that gave up, and where each
 * sender's inbox lies in a segment.
 */
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/log.h"
#include "transports/cuda_ipc/cuda_ipc.h"

/* The segment: its header, then an inbox per sender, each on lines of its own. */
static size_t line_up(size_t n)
{
    return (n + TT_LOCAL_LINE - 1) / TT_LOCAL_LINE * TT_LOCAL_LINE;
}

size_t tt_cuda_ipc_inbox_offset(int sender)
{
    return line_up(sizeof(tt_cuda_ipc_seg_hdr_t)) + (size_t)sender * sizeof(tt_cuda_ipc_inbox_t);
}

size_t tt_cuda_ipc_segment_bytes(int nranks)
{
    return tt_cuda_ipc_inbox_offset(nranks);
}

tt_cuda_ipc_inbox_t *tt_cuda_ipc_inbox(void *seg, int peer)
{
    return (tt_cuda_ipc_inbox_t *)((char *)seg + tt_cuda_ipc_inbox_offset(peer));
}

static void undo_bind(tt_cuda_ipc_ctx_t *ctx)
{
    if (ctx->seg_dev)
        ctx->be->host_unregister(ctx->dev, ctx->seg);
    ctx->seg_dev = NULL;
}

tutti_status_t tt_cuda_ipc_bind(void *ctxp, int device)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    if (ctx->window)
        return TUTTI_SUCCESS;
    const tt_cuda_ipc_backend_t *be = ctx->be;
    tt_cuda_ipc_seg_hdr_t *seg = ctx->seg;
    const char *what = "attaching to the GPU";
    tutti_status_t st = ctx->dev ? TUTTI_SUCCESS : be->attach(device, &ctx->dev);
    if (!st) {
        int n = 0;
        what = "asking which GPUs this one reaches";
        st = be->identity(ctx->dev, &seg->device, seg->reach, &n);
        seg->nreach = n;
    }
    if (!st && !(st = be->host_register(ctx->dev, seg, ctx->seg_bytes, &ctx->seg_dev)))
        what = "allocating the window";
    else if (!st)
        what = "registering the segment with the GPU";
    if (!st && (st = be->window_alloc(ctx->dev, ctx->mapped_bytes, (void **)&ctx->window, seg->handle)) != 0)
        undo_bind(ctx);
    if (st) {
        ctx->window = NULL;
        TT_WARN(TT_SUB_NET, "cuda_ipc: %s failed (%s); device calls go through host staging", what,
                be->said());
        return st;
    }
    ctx->device = device;
    ctx->view[ctx->env->rank].window = ctx->window;
    seg->window_addr = (uint64_t)(uintptr_t)ctx->window;
    seg->window_device = device;
    atomic_store_explicit(&seg->window_ready, 1, memory_order_release);
    return TUTTI_SUCCESS;
}

/* A peer's window, through its IPC handle, or as it is when the peer is a
 * thread of this process (a handle cannot be opened where it was made);
 * a process of another PID namespace may have this one's PID, so the
 * namespace must match too. Then its segment, for our stream's stores. */
static tutti_status_t open_peer(tt_cuda_ipc_ctx_t *ctx, tt_cuda_ipc_conn_t *c)
{
    const tt_cuda_ipc_seg_hdr_t *seg = c->peer_seg;
    void *p = NULL;
    int same_process = seg->pid == (int32_t)getpid() && seg->pid_ns == ctx->seg->pid_ns;
    tutti_status_t st = same_process ? ctx->be->window_share(ctx->dev, (void *)(uintptr_t)seg->window_addr,
                                                             seg->window_device, &p)
                                     : ctx->be->window_open(ctx->dev, seg->handle, ctx->mapped_bytes, &p);
    if (!st) {
        c->peer_window = p;
        c->shared = same_process;
        st = ctx->be->host_register(ctx->dev, c->peer_seg, ctx->seg_bytes, &c->peer_seg_dev);
    }
    if (st)
        TT_WARN(TT_SUB_NET,
                "cuda_ipc: opening rank %d's window%s failed (%s); device calls go through host staging",
                c->peer, same_process ? " (same process)" : "", ctx->be->said());
    return st;
}

/* Peer q's entry of the view, once its window is open and its segment
 * registered. A sends' region for receiver r starts at W + 2 r slots. */
static void view_peer(tt_cuda_ipc_ctx_t *ctx, const tt_cuda_ipc_conn_t *c)
{
    int me = ctx->env->rank, q = c->peer;
    tt_direct_peer_t *v = &ctx->view[q];
    tt_cuda_ipc_inbox_t *mine = tt_cuda_ipc_inbox(ctx->seg_dev, q),
                        *theirs = tt_cuda_ipc_inbox(c->peer_seg_dev, me);
    v->window = c->peer_window;
    v->ready_from = (unsigned *)&mine->ready;
    v->done_from = (unsigned *)&mine->done;
    v->ready_to = (unsigned *)&theirs->ready;
    v->done_to = (unsigned *)&theirs->done;
    v->p2p_out = ctx->window + ctx->window_bytes + (size_t)q * 2 * ctx->slot_bytes;
    v->p2p_in = c->peer_window + ctx->window_bytes + (size_t)me * 2 * ctx->slot_bytes;
    v->sent_from = (unsigned *)&mine->sent;
    v->taken_from = (unsigned *)&mine->taken;
    v->sent_to = (unsigned *)&theirs->sent;
    v->taken_to = (unsigned *)&theirs->taken;
}

tutti_status_t tt_cuda_ipc_open_peers(void *ctxp, int *all)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    *all = ctx->opened;
    if (ctx->opened || ctx->open_failed || !ctx->window)
        return TUTTI_SUCCESS;
    int every = 1;
    for (int r = 0; r < ctx->env->nranks; r++) {
        tt_cuda_ipc_conn_t *c = ctx->conns[r];
        if (r == ctx->env->rank || (c && c->peer_seg_dev))
            continue;
        if (!c || !atomic_load_explicit(&c->peer_seg->window_ready, memory_order_acquire)) {
            every = 0; /* that rank has made no device call yet */
            continue;
        }
        if (open_peer(ctx, c)) {
            ctx->open_failed = 1; /* said; this communicator stages from now on */
            return TUTTI_SUCCESS;
        }
        view_peer(ctx, c);
    }
    ctx->opened = every;
    *all = every;
    return TUTTI_SUCCESS;
}

const tt_direct_peer_t *tt_cuda_ipc_peers(void *ctxp, size_t *window_bytes)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    *window_bytes = ctx->window_bytes;
    return ctx->opened ? ctx->view : NULL;
}

const tt_direct_peer_t *tt_cuda_ipc_pair(void *ctxp, int peer, size_t *slot_bytes)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    *slot_bytes = ctx->slot_bytes;
    const tt_cuda_ipc_conn_t *c =
        peer < 0 || peer >= ctx->env->nranks || peer == ctx->env->rank ? NULL : ctx->conns[peer];
    if (!ctx->window || ctx->open_failed || !ctx->slot_bytes || !c || !c->peer_seg_dev)
        return NULL;
    /* The receiver's kernels copy out of the sender's window: both ways, as
     * either side may send. */
    if (!tt_cuda_ipc_reaches(ctx->seg, c->peer_seg->device) ||
        !tt_cuda_ipc_reaches(c->peer_seg, ctx->seg->device))
        return NULL;
    return &ctx->view[peer];
}

/* Only forward: a late release must not undo what the peer wrote since. */
static void raise_to(_Atomic uint32_t *word, unsigned round)
{
    uint32_t now = atomic_load_explicit(word, memory_order_acquire);
    while ((int32_t)(round - now) > 0 && !atomic_compare_exchange_weak_explicit(
                                             word, &now, round, memory_order_release, memory_order_acquire))
        ;
}

void tt_cuda_ipc_release(void *ctxp, int peer, unsigned round, const unsigned *chunks_to,
                         const unsigned *chunks_from)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    for (int q = 0; q < ctx->env->nranks; q++)
        if (q != ctx->env->rank && (peer < 0 || q == peer)) {
            tt_cuda_ipc_inbox_t *in = tt_cuda_ipc_inbox(ctx->seg, q);
            raise_to(&in->ready, round);
            raise_to(&in->done, round);
            if (chunks_to)
                raise_to(&in->taken, chunks_to[q]);
            if (chunks_from)
                raise_to(&in->sent, chunks_from[q]);
        }
}

void tt_cuda_ipc_keep(void *ctxp)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    ctx->kept = 1;
}

void tt_cuda_ipc_unbind_peer(tt_cuda_ipc_conn_t *c)
{
    const tt_cuda_ipc_ctx_t *ctx = c->ctx;
    if (ctx->kept)
        return;
    if (c->peer_window && !c->shared)
        ctx->be->window_close(ctx->dev, c->peer_window, ctx->mapped_bytes);
    if (c->peer_seg_dev)
        ctx->be->host_unregister(ctx->dev, c->peer_seg);
    c->peer_window = NULL;
    c->peer_seg_dev = NULL;
}

void tt_cuda_ipc_unbind(tt_cuda_ipc_ctx_t *ctx)
{
    if (!ctx->kept)
        undo_bind(ctx);
}
