/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point agreement in the cuda_ipc segments: per pair and
 * direction, message by message, whether a send runs directly. The
 * receiver writes its offer for message k into its own segment (its inbox
 * for the sender); the sender takes it at its call (unless it is not
 * there, not capable or withdrawn), decides, and writes the decision into
 * its own; a capable receiver reads that, or withdraws its offer once it
 * has waited long enough. Each side writes only its own segment (but for
 * the sender's taking of an offer), and the rings are reused as the board is:
 * an offer's place only once the sender has decided the message a ring
 * before, a decision's only once the receiver took the one a ring before.
 */
#include "transports/cuda_ipc/cuda_ipc.h"

static uint64_t entry(uint64_t k, int yes)
{
    return 2 * (k + 1) + (yes ? 1 : 0);
}

static uint64_t offer_entry(uint64_t k, int state)
{
    return 4 * (k + 1) + (uint64_t)state;
}

/* The owner's side of its pair with peer q, in the segment of rank owner. */
static tt_cuda_ipc_inbox_t *side(const tt_cuda_ipc_ctx_t *ctx, int owner, int q)
{
    return tt_cuda_ipc_inbox(ctx->segs[owner], q);
}

int tt_cuda_ipc_offer(void *ctxp, int sender, uint64_t k, int capable, uint64_t sig)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    int me = ctx->env->rank;
    uint64_t decided = atomic_load_explicit(&side(ctx, sender, me)->decided, memory_order_acquire);
    if (k >= decided + TT_IPC_RING)
        return 1; /* the sender has not read the offer a ring before */
    tt_cuda_ipc_inbox_t *mine = side(ctx, me, sender);
    mine->offer_sig[k % TT_IPC_RING] = sig; /* published by the release store after it */
    atomic_store_explicit(&mine->offer[k % TT_IPC_RING],
                          offer_entry(k, capable ? TT_IPC_OFFER_OPEN : TT_IPC_OFFER_NO),
                          memory_order_release);
    return 0;
}

/* The offer lives in the receiver's segment and both sides change it, by
 * compare-and-swap, so a sender taking it and a receiver that stopped
 * waiting cannot both win. */
int tt_cuda_ipc_claim(void *ctxp, int receiver, uint64_t k, uint64_t sig)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    tt_cuda_ipc_inbox_t *theirs = side(ctx, receiver, ctx->env->rank);
    _Atomic uint64_t *slot = &theirs->offer[k % TT_IPC_RING];
    uint64_t v = atomic_load_explicit(slot, memory_order_acquire);
    if (v / 4 != k + 1)
        return -1;
    if (v != offer_entry(k, TT_IPC_OFFER_OPEN) || theirs->offer_sig[k % TT_IPC_RING] != sig)
        return 0;
    return atomic_compare_exchange_strong_explicit(slot, &v, offer_entry(k, TT_IPC_OFFER_TAKEN),
                                                   memory_order_acq_rel, memory_order_acquire);
}

int tt_cuda_ipc_withdraw(void *ctxp, int sender, uint64_t k)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    uint64_t open = offer_entry(k, TT_IPC_OFFER_OPEN);
    return atomic_compare_exchange_strong_explicit(&side(ctx, ctx->env->rank, sender)->offer[k % TT_IPC_RING],
                                                   &open, offer_entry(k, TT_IPC_OFFER_NO),
                                                   memory_order_acq_rel, memory_order_acquire);
}

int tt_cuda_ipc_decide(void *ctxp, int receiver, uint64_t k, int direct)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    int me = ctx->env->rank;
    uint64_t took = atomic_load_explicit(&side(ctx, receiver, me)->took, memory_order_acquire);
    if (k >= took + TT_IPC_RING)
        return 1; /* the receiver may still read the decision a ring before */
    tt_cuda_ipc_inbox_t *mine = side(ctx, me, receiver);
    atomic_store_explicit(&mine->decision[k % TT_IPC_RING], entry(k, direct), memory_order_release);
    atomic_store_explicit(&mine->decided, k + 1, memory_order_release);
    return 0;
}

int tt_cuda_ipc_decision(const void *ctxp, int sender, uint64_t k)
{
    const tt_cuda_ipc_ctx_t *ctx = ctxp;
    uint64_t v = atomic_load_explicit(&side(ctx, sender, ctx->env->rank)->decision[k % TT_IPC_RING],
                                      memory_order_acquire);
    return v / 2 == k + 1 ? (int)(v & 1) : -1;
}

void tt_cuda_ipc_took(void *ctxp, int sender, uint64_t k)
{
    tt_cuda_ipc_ctx_t *ctx = ctxp;
    atomic_store_explicit(&side(ctx, ctx->env->rank, sender)->took, k + 1, memory_order_release);
}
