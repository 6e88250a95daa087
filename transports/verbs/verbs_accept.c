/* SPDX-License-Identifier: MIT */
/*
 * The accepting thread: the answering side's half of every pair set-up
 * (verbs_connect.c). It admits keyed connections on the set-up socket,
 * many at once (core/admit.c), and brings up the pair each one names when
 * this rank answered that peer's offer; a connection that names another
 * rank is refused. It waits on sockets only for a peer whose main thread
 * is at the other end, so a set-up never waits on a main thread that may
 * itself wait in a join. One thread per communicator that uses verbs,
 * started at its first answer.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/admit.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/wake.h"
#include "transports/verbs/verbs.h"

#define IDLE_MS 1000 /* between looks at a stop when nothing rings */

/* The pending entry a connection from rank from may bring up, marked
 * busy; NULL when this rank answered no offer of from's. */
static tt_verbs_conn_t *take(tt_verbs_ctx_t *ctx, int from, int fd)
{
    tt_verbs_conn_t *c = NULL;
    pthread_mutex_lock(&ctx->lock);
    tt_verbs_pending_t *e = from >= 0 && from < ctx->env->nranks ? &ctx->pending[from] : NULL;
    if (e && e->state == TT_VERBS_PAIR_ANSWERED) {
        e->state = TT_VERBS_PAIR_BUSY;
        c = e->conn;
        ctx->busy_fd = fd;
    }
    pthread_mutex_unlock(&ctx->lock);
    return c;
}

static void serve(tt_verbs_ctx_t *ctx, int fd, const tt_hello_t *h)
{
    tt_verbs_conn_t *c = take(ctx, h->rank, fd);
    if (!c) {
        TT_WARN(TT_SUB_NET,
                "verbs: refused a set-up connection claiming rank %d: rank %d answered no offer of its",
                h->rank, ctx->env->rank);
        close(fd);
        return;
    }
    tt_log_fault_mark();
    tutti_status_t st = tt_verbs_exchange(ctx, fd, c, tt_now_ms() + ctx->env->timeout_ms);
    pthread_mutex_lock(&ctx->lock);
    tt_verbs_pending_t *e = &ctx->pending[h->rank];
    ctx->busy_fd = -1;
    if (e->dropped || st) {
        tt_verbs_conn_destroy(c);
        *e = e->dropped ? (tt_verbs_pending_t){0}
                        : (tt_verbs_pending_t){.state = TT_VERBS_PAIR_FAILED,
                                               .status = st,
                                               .why = strdup(tt_log_last_fault())};
    } else {
        e->state = TT_VERBS_PAIR_UP;
    }
    pthread_mutex_unlock(&ctx->lock);
    /* Only now that busy_fd no longer names it: a stop shuts busy_fd down,
     * and once closed its number may be another thread's new socket. */
    close(fd);
}

static void *acceptor_main(void *arg)
{
    tt_verbs_ctx_t *ctx = arg;
    tt_admit_t *admit = tt_admit_new(ctx->listen_fd, ctx->env->key, TT_SUB_NET, "verbs", NULL, NULL);
    if (!admit) {
        TT_ERROR(TT_SUB_NET, "verbs: no memory to accept set-up connections; pairs that need them time out");
        return NULL;
    }
    /* As tcp's listener: a peer's hello follows its connect at once, but a
     * loaded host can keep it off the CPU for seconds in between. */
    if (ctx->env->timeout_ms > admit->hello_ms)
        admit->hello_ms = ctx->env->timeout_ms > INT32_MAX ? INT32_MAX : (int)ctx->env->timeout_ms;
    struct pollfd fds[TT_ADMIT_PENDING + 2];
    while (!atomic_load(&ctx->stopping)) {
        int64_t now = tt_now_ms(), wake = now + IDLE_MS;
        int n = tt_admit_pollfds(admit, now, fds, &wake);
        int listen_at = n > 0 && fds[0].fd == ctx->listen_fd ? 0 : -1;
        fds[n] = (struct pollfd){.fd = ctx->wake_fd, .events = POLLIN};
        if (poll(fds, (nfds_t)n + 1, (int)(wake > now ? wake - now : 0)) < 0 && errno != EINTR) {
            TT_ERROR(TT_SUB_NET, "verbs: waiting for set-up connections failed: %s", strerror(errno));
            break;
        }
        tt_wake_drain(ctx->wake_fd);
        int listen_ready = listen_at == 0 && fds[0].revents != 0, fd;
        tt_hello_t h;
        while (!atomic_load(&ctx->stopping) && tt_admit_try(admit, listen_ready, &fd, &h)) {
            serve(ctx, fd, &h);
            listen_ready = 0;
        }
    }
    tt_admit_free(admit);
    return NULL;
}

tutti_status_t tt_verbs_acceptor_start(tt_verbs_ctx_t *ctx)
{
    if ((ctx->wake_fd = tt_wake_open()) < 0)
        return TUTTI_ERR_SYSTEM;
    int rc = pthread_create(&ctx->acceptor, NULL, acceptor_main, ctx);
    if (rc) {
        TT_ERROR(TT_SUB_NET, "verbs: starting the thread that accepts set-up connections failed: %s",
                 strerror(rc));
        tt_wake_close(ctx->wake_fd);
        ctx->wake_fd = -1;
        return TUTTI_ERR_SYSTEM;
    }
    ctx->acceptor_on = 1;
    return TUTTI_SUCCESS;
}

void tt_verbs_acceptor_stop(tt_verbs_ctx_t *ctx)
{
    if (ctx->owner != getpid()) /* a forked copy: the thread and its lock are the parent's */
        return;
    pthread_mutex_lock(&ctx->lock);
    int on = ctx->acceptor_on;
    atomic_store(&ctx->stopping, 1);
    if (ctx->busy_fd >= 0) /* a peer that stopped mid set-up does not hold this up */
        shutdown(ctx->busy_fd, SHUT_RDWR);
    pthread_mutex_unlock(&ctx->lock);
    if (on) {
        tt_wake_ring(ctx->wake_fd);
        pthread_join(ctx->acceptor, NULL);
        tt_wake_close(ctx->wake_fd);
        ctx->acceptor_on = 0;
    }
    for (int r = 0; ctx->pending && r < ctx->env->nranks; r++) {
        if (ctx->pending[r].conn)
            tt_verbs_conn_destroy(ctx->pending[r].conn);
        free(ctx->pending[r].why);
    }
}
