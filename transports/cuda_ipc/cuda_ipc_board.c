/* SPDX-License-Identifier: MIT */
/*
 * The board in every rank's cuda_ipc segment: call by call, each rank
 * announces whether it can run the call on its device buffers, with the
 * call's signature, and a rank that can reads the others' announcements
 * before going direct (where a different signature is a mismatch: a
 * direct run has no message headers to catch it later).
 */
#include <sched.h>

#include "core/clock.h"
#include "core/log.h"
#include "transports/cuda_ipc/cuda_ipc.h"

static uint64_t lowest_announced(const tt_cuda_ipc_ctx_t *ctx)
{
    uint64_t low = UINT64_MAX;
    for (int r = 0; r < ctx->env->nranks; r++) {
        uint64_t a = atomic_load_explicit(&ctx->segs[r]->announced, memory_order_acquire);
        low = a < low ? a : low;
    }
    return low;
}

tutti_status_t tt_cuda_ipc_announce(void *ctxp, uint64_t seq, int capable, uint64_t sig, int64_t timeout_ms)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    /* Entry seq % TT_IPC_BOARD last held seq - TT_IPC_BOARD: overwrite it
     * only once every rank has announced the call after that one, so that
     * none can still be reading it. */
    for (int64_t deadline = 0; seq >= ctx->announce_room;) {
        ctx->announce_room = lowest_announced(ctx) + TT_IPC_BOARD - 1;
        if (seq < ctx->announce_room)
            break;
        int64_t now = tt_now_ns();
        if (!deadline)
            deadline = now + timeout_ms * 1000000;
        else if (now > deadline)
            return TUTTI_ERR_TIMEOUT;
        sched_yield();
    }
    ctx->seg->sig[seq % TT_IPC_BOARD] = sig; /* published by the release store after it */
    atomic_store_explicit(&ctx->seg->board[seq % TT_IPC_BOARD], 2 * (seq + 1) + (capable ? 1 : 0),
                          memory_order_release);
    atomic_store_explicit(&ctx->seg->announced, seq + 1, memory_order_release);
    return TUTTI_SUCCESS;
}

tt_board_t tt_cuda_ipc_announcement(const void *ctxp, int rank, uint64_t seq, uint64_t *sig)
{
    const tt_cuda_ipc_ctx_t *ctx = ctxp;
    const tt_cuda_ipc_seg_hdr_t *seg = ctx->segs[rank];
    uint64_t v = atomic_load_explicit(&seg->board[seq % TT_IPC_BOARD], memory_order_acquire);
    if (v / 2 != seq + 1)
        return TT_BOARD_NOT_YET;
    *sig = seg->sig[seq % TT_IPC_BOARD];
    return v & 1 ? TT_BOARD_DIRECT : TT_BOARD_STAGES;
}

int tt_cuda_ipc_reaches(const tt_cuda_ipc_seg_hdr_t *from, uint64_t device)
{
    for (int i = 0; i < from->nreach && i < TT_IPC_REACH_MAX; i++)
        if (from->reach[i] == device)
            return 1;
    return 0;
}

tutti_status_t tt_cuda_ipc_reach_all(void *ctxp, int *all)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    *all = 0;
    if (ctx->reach_verdict >= 0) {
        *all = ctx->reach_verdict;
        return TUTTI_SUCCESS;
    }
    int every = 1, p = ctx->env->nranks;
    for (int a = 0; a < p; a++) {
        if (!atomic_load_explicit(&ctx->segs[a]->window_ready, memory_order_acquire))
            return TUTTI_SUCCESS; /* cannot happen once every rank announced it can go direct */
        for (int b = 0; b < p; b++)
            every &= tt_cuda_ipc_reaches(ctx->segs[a], ctx->segs[b]->device);
    }
    if (!every)
        TT_INFO(TT_SUB_NET, "cuda_ipc: some ranks' GPUs cannot load from each other; device calls go through "
                            "host staging");
    /* Published windows never change, so neither does the verdict. */
    ctx->reach_verdict = *all = every;
    return TUTTI_SUCCESS;
}
