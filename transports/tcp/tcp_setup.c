/* SPDX-License-Identifier: MIT */
/*
 * tcp transport set-up: each rank listens; for every pair the higher rank
 * connects to the lower one, one socket per channel, and opens each with a
 * hello carrying the job key. Connections are admitted many at once and
 * those without the key refused (core/admit.c); a rank that gave up
 * elsewhere ends the waits at once (env->watch).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/admit.h"
#include "core/clock.h"
#include "core/env_config.h"
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
    if (st) {
        free(ctx);
        return st;
    }
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

/* Admits the expected connections from higher ranks, the keyed ones only,
 * each into its peer's and channel's place. */
static tutti_status_t accept_higher(tt_tcp_ctx_t *ctx, void **conns, const int *slot_of_rank, int expected,
                                    int64_t deadline)
{
    const tt_tp_env_t *env = ctx->env;
    if (!expected)
        return TUTTI_SUCCESS;
    tt_admit_t *admit = tt_admit_new(ctx->listen_fd, env->key, TT_SUB_NET, "tcp", env->watch, env->watch_arg);
    if (!admit)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = TUTTI_SUCCESS;
    while (expected > 0) {
        int fd;
        tt_hello_t h;
        st = tt_admit_next(admit, deadline, &fd, &h);
        if (st == TUTTI_ERR_TIMEOUT)
            TT_ERROR(TT_SUB_NET, "tcp: %d connections from higher ranks never arrived", expected);
        if (st)
            break;
        int slot = h.rank >= 0 && h.rank < env->nranks ? slot_of_rank[h.rank] : -1;
        if (slot < 0 || h.channel < 0 || h.channel >= env->nchannels ||
            ((tt_tcp_conn_t *)conns[slot])->ch[h.channel].fd >= 0) {
            TT_WARN(TT_SUB_NET, "tcp: refused unexpected connection claiming rank %d channel %d", h.rank,
                    h.channel);
            close(fd);
            continue;
        }
        conn_adopt(ctx, conns[slot], h.channel, fd);
        expected--;
    }
    tt_admit_free(admit);
    return st;
}

static tutti_status_t tcp_connect(void *ctxp, const int *peers, int npeers, const unsigned char *addrs,
                                  void **conns)
{
    tt_tcp_ctx_t *ctx = ctxp;
    const tt_tp_env_t *env = ctx->env;
    int64_t deadline = tt_now_ms() + env->timeout_ms;
    int nch = env->nchannels, expected = 0;
    tutti_status_t st = TUTTI_SUCCESS;
    int *slot_of_rank = malloc(sizeof(int) * (size_t)env->nranks);
    if (!slot_of_rank)
        return TUTTI_ERR_NO_MEMORY;
    for (int i = 0; i < env->nranks; i++)
        slot_of_rank[i] = -1;
    for (int i = 0; i < npeers; i++) {
        conns[i] = conn_new(peers[i], nch);
        if (!conns[i]) {
            st = TUTTI_ERR_NO_MEMORY;
            goto undo_conns;
        }
        slot_of_rank[peers[i]] = i;
    }
    /* Connect up to lower ranks first: their listeners queue us without
     * an accept, so no rank waits on another's accept loop. */
    for (int i = 0; i < npeers; i++) {
        if (peers[i] > env->rank) {
            expected += nch;
            continue;
        }
        tt_sockaddr_t peer_addr;
        memcpy(&peer_addr, addrs + (size_t)peers[i] * TT_ADDR_MAX, sizeof peer_addr);
        for (int c = 0; c < nch; c++) {
            int fd;
            st = tt_sock_connect_watched(&peer_addr, deadline, env->watch, env->watch_arg, &fd);
            if (!st)
                st = tt_hello_send(fd, env->key, env->rank, env->nranks, c, deadline);
            if (st) {
                TT_ERROR(TT_SUB_NET, "tcp connect to rank %d failed: %s", peers[i], tutti_strerror(st));
                goto undo_conns;
            }
            conn_adopt(ctx, conns[i], c, fd);
        }
    }
    st = accept_higher(ctx, conns, slot_of_rank, expected, deadline);
    if (st)
        goto undo_conns;
    /* Every connection is up: nothing more to accept, so stop listening. */
    close(ctx->listen_fd);
    ctx->listen_fd = -1;
    free(slot_of_rank);
    return TUTTI_SUCCESS;

undo_conns:
    for (int i = 0; i < npeers; i++) {
        conn_free(conns[i]);
        conns[i] = NULL;
    }
    free(slot_of_rank);
    return st;
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
    .connect = tcp_connect,
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
