/* SPDX-License-Identifier: MIT */
/*
 * shm doorbells: a FIFO per rank, beside its segment and unlinked with it,
 * that same-host peers write one byte into when the rank sleeps (shm.h
 * tells the protocol). Everyone holds it open for reading and writing, so
 * that the owner never reads end-of-file and a peer never writes into a
 * FIFO without readers; the owner drains it after every sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "transports/shm/shm.h"

void tt_shm_bell_create(tt_shm_ctx_t *ctx)
{
    const tt_tp_env_t *env = ctx->env;
    snprintf(ctx->bell_path, sizeof ctx->bell_path, TT_SHM_BELL_FORMAT, (unsigned long long)env->key_tag,
             env->rank);
    ctx->bell_fd = -1;
    if (mkfifo(ctx->bell_path, 0600) != 0) {
        TT_INFO(TT_SUB_NET, "shm: no doorbell (mkfifo %s: %s): a waiting rank naps instead of sleeping",
                ctx->bell_path, strerror(errno));
        ctx->bell_path[0] = '\0';
        return;
    }
    ctx->bell_fd = open(ctx->bell_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (ctx->bell_fd < 0) {
        TT_INFO(TT_SUB_NET,
                "shm: opening the doorbell %s failed (%s): a waiting rank naps instead of sleeping",
                ctx->bell_path, strerror(errno));
        unlink(ctx->bell_path);
        ctx->bell_path[0] = '\0';
        return;
    }
    ctx->seg->bell = 1;
}

tutti_status_t tt_shm_bell_open(tt_shm_conn_t *c)
{
    c->bell_fd = -1;
    if (!c->peer_seg->bell)
        return TUTTI_SUCCESS; /* it naps; nobody rings it */
    char path[96];
    snprintf(path, sizeof path, TT_SHM_BELL_FORMAT, (unsigned long long)c->ctx->env->key_tag, c->peer);
    /* Peers must be able to wake a rank that sleeps: one that cannot would
     * leave it asleep until its next liveness check, call after call.
     * Opened for reading too, so that a ring after the owner died finds a
     * reader (this one) instead of raising SIGPIPE. */
    c->bell_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (c->bell_fd < 0) {
        TT_ERROR(TT_SUB_NET, "shm: opening rank %d's doorbell %s failed: %s", c->peer, path, strerror(errno));
        return TUTTI_ERR_SYSTEM;
    }
    return TUTTI_SUCCESS;
}

void tt_shm_bell_close(tt_shm_ctx_t *ctx)
{
    if (ctx->bell_path[0] && !ctx->unlinked)
        unlink(ctx->bell_path);
    if (ctx->bell_fd >= 0)
        close(ctx->bell_fd);
    ctx->bell_fd = -1;
}

void tt_shm_ring_slow(tt_shm_conn_t *c, int force)
{
    _Atomic uint32_t *sleeping = &c->peer_seg->sleeping;
    /* Of the peers that find it raised, one takes it down and rings. */
    if (c->bell_fd < 0 || (!atomic_exchange_explicit(sleeping, 0, memory_order_relaxed) && !force))
        return;
    char b = 0;
    if (write(c->bell_fd, &b, 1) < 0)
        return; /* EAGAIN: the FIFO is full of rings, which wake it all the same */
}

static int channel_ready(const tt_shm_conn_t *c, int ch)
{
    const tt_shm_side_t *in = &c->in[ch], *out = &c->out[ch];
    size_t stride = sizeof(tt_local_slot_t) + c->slot_bytes;
    if (in->reqs) {
        const tt_local_slot_t *slot =
            (const tt_local_slot_t *)(in->slots + (size_t)(in->pos % (uint64_t)c->nslots) * stride);
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) == in->pos + 1)
            return 1;
    }
    return out->reqs &&
           out->pos - atomic_load_explicit(&out->q->tail, memory_order_acquire) < (uint64_t)c->nslots;
}

int tt_shm_arm(void *connp, tt_wait_set_t *ws)
{
    tt_shm_conn_t *c = connp;
    tt_shm_ctx_t *ctx = c->ctx;
    if (c->failed)
        return 1; /* progress reports it */
    if (ctx->bell_fd < 0)
        return -1;
    /* The first connection to arm raises `sleeping` for all of them: every
     * look below comes after it. */
    if (!ctx->armed) {
        if (tt_wait_add(ws, ctx->bell_fd, POLLIN))
            return -1;
        ctx->armed = 1;
        atomic_store_explicit(&ctx->seg->sleeping, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst); /* pairs with the fence in tt_shm_ring */
    }
    for (int ch = 0; ch < c->nchannels; ch++)
        if (channel_ready(c, ch))
            return 1;
    return 0;
}

void tt_shm_disarm(void *connp)
{
    tt_shm_ctx_t *ctx = ((tt_shm_conn_t *)connp)->ctx;
    if (!ctx->armed)
        return;
    ctx->armed = 0;
    atomic_store_explicit(&ctx->seg->sleeping, 0, memory_order_relaxed);
    char sink[64];
    while (read(ctx->bell_fd, sink, sizeof sink) == (ssize_t)sizeof sink)
        ;
}
