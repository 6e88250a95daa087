/* SPDX-License-Identifier: MIT */
/*
 * tcp transport set-up: each rank listens for the communicator's life; a
 * pair connects at first use (src/comm/connect.c): the rank that offered
 * dials the other's listener, one socket per channel, and opens each with a
 * hello carrying the job key; the other admits them when it joins,
 * keeping the sockets of peers that came first. Connections are admitted
 * many at once and those without the key refused (core/admit.c); a rank
 * that gave up elsewhere ends the waits at once (env->watch).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/admit.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "core/grow.h"
#include "core/log.h"
#include "transports/tcp/tcp.h"

static int tcp_reachable(const tt_tp_env_t *env, int peer)
{
    (void)env;
    (void)peer;
    return 1;
}

static tutti_status_t tcp_listen(const tt_tp_env_t *env, void **ctxp, void *addr, size_t *addr_len)
{
    tt_tcp_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return TUTTI_ERR_NO_MEMORY;
    ctx->env = env;
    ctx->bufbytes = (int)tt_config_table_int(&tt_tcp_config, TT_CFG_TCP_BUF_BYTES);
    tutti_status_t st = tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), &ctx->addr);
    if (!st)
        st = tt_sock_listen(&ctx->addr, &ctx->listen_fd);
    if (!st && !(ctx->admit =
                     tt_admit_new(ctx->listen_fd, env->key, TT_SUB_NET, "tcp", env->watch, env->watch_arg))) {
        close(ctx->listen_fd);
        st = TUTTI_ERR_NO_MEMORY;
    }
    if (st) {
        free(ctx);
        return st;
    }
    /* A peer's hello follows its connect at once, but with hundreds of
     * ranks to a core the peer can be kept off the CPU for seconds in
     * between; refusing it then breaks the pair. A stranger that never
     * speaks still loses its place when the waiting room fills. */
    if (env->timeout_ms > ctx->admit->hello_ms)
        ctx->admit->hello_ms = env->timeout_ms > INT32_MAX ? INT32_MAX : (int)env->timeout_ms;
    memcpy(addr, &ctx->addr, sizeof ctx->addr);
    *addr_len = sizeof ctx->addr;
    *ctxp = ctx;
    return TUTTI_SUCCESS;
}

static tt_tcp_conn_t *conn_new(int peer, int nchannels)
{
    tt_tcp_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->peer = peer;
    c->nchannels = nchannels;
    for (int i = 0; i < nchannels; i++)
        c->ch[i].fd = -1;
    return c;
}

static void conn_free(tt_tcp_conn_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nchannels; i++) {
        if (c->ch[i].fd >= 0)
            close(c->ch[i].fd);
        free(c->ch[i].bounce);
    }
    free(c);
}

static void conn_adopt(tt_tcp_ctx_t *ctx, tt_tcp_conn_t *c, int channel, int fd)
{
    tt_sock_tune(fd, ctx->bufbytes);
    tt_sock_set_nonblocking(fd);
    c->ch[channel].fd = fd;
}

/* Both sides give the address of their listener, which stays open for
 * the communicator's life. */
static tutti_status_t tcp_offer(void *ctxp, int peer, void *blob, size_t *len)
{
    tt_tcp_ctx_t *ctx = ctxp;
    (void)peer;
    memcpy(blob, &ctx->addr, sizeof ctx->addr);
    *len = sizeof ctx->addr;
    return TUTTI_SUCCESS;
}

static tutti_status_t tcp_answer(void *ctxp, int peer, const void *offer, size_t offer_len, void *blob,
                                 size_t *len)
{
    (void)offer;
    (void)offer_len;
    return tcp_offer(ctxp, peer, blob, len);
}

static void tcp_withdraw(void *ctxp, int peer)
{
    (void)ctxp;
    (void)peer;
}

/* The offering side dials: one socket per channel, each opened with a
 * keyed hello. Its peer's listener queues them whatever the peer does. */
static tutti_status_t dial(tt_tcp_ctx_t *ctx, tt_tcp_conn_t *c, const tt_sockaddr_t *to, int64_t deadline)
{
    const tt_tp_env_t *env = ctx->env;
    for (int ch = 0; ch < c->nchannels; ch++) {
        int fd;
        tutti_status_t st = tt_sock_connect_watched(to, deadline, env->watch, env->watch_arg, &fd);
        if (!st && (st = tt_hello_send(fd, env->key, env->rank, env->nranks, ch, deadline)) != TUTTI_SUCCESS)
            close(fd);
        if (st) {
            TT_ERROR(TT_SUB_NET, "tcp connect to rank %d failed: %s", c->peer, tutti_strerror(st));
            return st;
        }
        conn_adopt(ctx, c, ch, fd);
    }
    return TUTTI_SUCCESS;
}

/* Takes every keyed connection the listener has queued into the stash,
 * without waiting. */
static void admit_queued(tt_tcp_ctx_t *ctx)
{
    const tt_tp_env_t *env = ctx->env;
    int fd;
    tt_hello_t h;
    while (tt_admit_try(ctx->admit, 1, &fd, &h)) {
        int known = h.rank >= 0 && h.rank < env->nranks && h.rank != env->rank && h.nranks == env->nranks &&
                    h.channel >= 0 && h.channel < env->nchannels;
        if (known && !tt_grow((void **)&ctx->stash, &ctx->stash_cap, ctx->nstash + 1, sizeof *ctx->stash)) {
            ctx->stash[ctx->nstash++] = (tt_tcp_stash_t){h.rank, h.channel, fd};
        } else {
            TT_WARN(TT_SUB_NET, "tcp: refused unexpected connection claiming rank %d channel %d", h.rank,
                    h.channel);
            close(fd);
        }
    }
}

/* The answering side: its peer's sockets, once all are in (the keyed ones
 * only; others' wait in the stash for their own join). It never waits:
 * the peer may itself be making another pair before it dials this one. */
static tutti_status_t admit(tt_tcp_ctx_t *ctx, int peer, tt_tcp_conn_t **connp)
{
    int have = 0;
    *connp = NULL;
    admit_queued(ctx);
    for (int i = 0; i < ctx->nstash; i++)
        have += ctx->stash[i].rank == peer;
    if (have < ctx->env->nchannels)
        return TUTTI_SUCCESS;
    tt_tcp_conn_t *c = conn_new(peer, ctx->env->nchannels);
    if (!c)
        return TUTTI_ERR_NO_MEMORY;
    for (int i = 0; i < ctx->nstash;)
        if (ctx->stash[i].rank == peer && c->ch[ctx->stash[i].channel].fd < 0) {
            conn_adopt(ctx, c, ctx->stash[i].channel, ctx->stash[i].fd);
            ctx->stash[i] = ctx->stash[--ctx->nstash];
        } else {
            i++;
        }
    *connp = c;
    return TUTTI_SUCCESS;
}

static tutti_status_t tcp_join(void *ctxp, int peer, int offered, const void *theirs, size_t len,
                               void **connp)
{
    tt_tcp_ctx_t *ctx = ctxp;
    tt_sockaddr_t to;
    if (len != sizeof to)
        return TUTTI_ERR_PEER_FAILED;
    memcpy(&to, theirs, sizeof to);
    if (!offered)
        return admit(ctx, peer, (tt_tcp_conn_t **)connp);
    tt_tcp_conn_t *c = conn_new(peer, ctx->env->nchannels);
    if (!c)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = dial(ctx, c, &to, tt_now_ms() + ctx->env->timeout_ms);
    if (st) {
        conn_free(c);
        return st;
    }
    *connp = c;
    return TUTTI_SUCCESS;
}

static void tcp_abort(void *connp)
{
    tt_tcp_conn_t *c = connp;
    char urgent = TT_TCP_ABORT_BYTE;
    for (int i = 0; i < c->nchannels; i++)
        if (c->ch[i].fd >= 0) {
            send(c->ch[i].fd, &urgent, 1, MSG_OOB | MSG_NOSIGNAL | MSG_DONTWAIT);
            shutdown(c->ch[i].fd, SHUT_RDWR);
        }
}

static void tcp_close(void *connp)
{
    conn_free(connp);
}

static void tcp_finalize(void *ctxp)
{
    tt_tcp_ctx_t *ctx = ctxp;
    for (int i = 0; i < ctx->nstash; i++)
        close(ctx->stash[i].fd);
    free(ctx->stash);
    if (ctx->admit)
        tt_admit_free(ctx->admit);
    if (ctx->listen_fd >= 0)
        close(ctx->listen_fd);
    free(ctx);
}

TT_CONFIG_TABLE_DEFINE(tt_tcp_config, "tcp", TT_TCP_CONFIG, TT_TCP_CONFIG_RULES);

const tt_transport_ops_t tt_tcp_ops = {
    .name = "tcp",
    .config = &tt_tcp_config,
    .summary = "TCP sockets, one per peer and slice in flight, TCP_NODELAY, large buffers",
    .caps = TT_CAP_HOST_MEM,
    .link = TT_LINK_TCP,
    .reachable = tcp_reachable,
    .listen = tcp_listen,
    .offer = tcp_offer,
    .answer = tcp_answer,
    .join = tcp_join,
    .withdraw = tcp_withdraw,
    .isend = tt_tcp_isend,
    .irecv = tt_tcp_irecv,
    .peek = tt_tcp_peek,
    .progress = tt_tcp_progress,
    .arm = tt_tcp_arm,
    .alive = tt_tcp_alive,
    .abort = tcp_abort,
    .close = tcp_close,
    .finalize = tcp_finalize,
};
