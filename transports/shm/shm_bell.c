/* SPDX-License-Identifier: MIT */
/*
 * shm doorbells: a datagram socket per rank, named in the abstract
 * namespace (so nothing is left behind by a crash) after the job's key tag
 * and the rank, that same-host peers send a byte to when the rank sleeps
 * (shm.h tells the protocol). A rank rings all its peers from one unbound
 * socket: a doorbell costs no descriptor per peer. The owner drains it
 * after every sleep.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/shm_names.h"
#include "transports/shm/shm.h"

/* Rank's doorbell address: the abstract name after a NUL byte. */
static socklen_t bell_addr(const tt_shm_ctx_t *ctx, int rank, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, TT_SHM_BELL_FORMAT,
                     (unsigned long long)ctx->env->key_tag, rank);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

void tt_shm_bell_create(tt_shm_ctx_t *ctx)
{
    struct sockaddr_un a;
    socklen_t len = bell_addr(ctx, ctx->env->rank, &a);
    ctx->bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ctx->ring_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ctx->bell_fd < 0 || ctx->ring_fd < 0 || bind(ctx->bell_fd, (struct sockaddr *)&a, len) != 0) {
        TT_INFO(TT_SUB_NET, "shm: no doorbell (%s): a waiting rank naps instead of sleeping",
                strerror(errno));
        tt_shm_bell_close(ctx);
        return;
    }
    ctx->seg->bell = 1;
}

void tt_shm_bell_open(tt_shm_conn_t *c)
{
    c->bell_len = c->peer_seg->bell && c->ctx->ring_fd >= 0 ? bell_addr(c->ctx, c->peer, &c->bell) : 0;
}

void tt_shm_bell_close(tt_shm_ctx_t *ctx)
{
    if (ctx->bell_fd >= 0)
        close(ctx->bell_fd);
    if (ctx->ring_fd >= 0)
        close(ctx->ring_fd);
    ctx->bell_fd = ctx->ring_fd = -1;
}

void tt_shm_ring_slow(tt_shm_conn_t *c, int force)
{
    _Atomic uint32_t *sleeping = &c->peer_seg->sleeping;
    /* Of the peers that find it raised, one takes it down and rings. */
    if (!c->bell_len || (!atomic_exchange_explicit(sleeping, 0, memory_order_relaxed) && !force))
        return;
    char b = 0;
    /* EAGAIN: its queue is full of rings, which wake it all the same. A
     * doorbell this rank cannot reach (another network namespace) leaves
     * the peer to its next liveness check: slow, never stuck. */
    if (sendto(c->ctx->ring_fd, &b, 1, MSG_DONTWAIT, (struct sockaddr *)&c->bell, c->bell_len) < 0 &&
        errno != EAGAIN)
        TT_DEBUG(TT_SUB_NET, "shm: ringing rank %d failed: %s", c->peer, strerror(errno));
}

static int channel_ready(const tt_shm_conn_t *c, int ch)
{
    const tt_shm_side_t *in = &c->in[ch], *out = &c->out[ch];
    if (in->reqs) {
        size_t stride = sizeof(tt_local_slot_t) + in->slot_bytes;
        const tt_local_slot_t *slot =
            (const tt_local_slot_t *)(in->slots + (size_t)(in->pos % (uint64_t)in->nslots) * stride);
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) == in->pos + 1)
            return 1;
    }
    return out->reqs &&
           out->pos - atomic_load_explicit(&out->q->tail, memory_order_acquire) < (uint64_t)out->nslots;
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
    while (recv(ctx->bell_fd, sink, sizeof sink, MSG_DONTWAIT) > 0)
        ;
}
