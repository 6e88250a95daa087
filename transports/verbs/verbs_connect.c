/* SPDX-License-Identifier: MIT */
/*
 * verbs connections at first use (src/comm/connect.c), so that a rank's
 * queue pairs and registered memory grow with the peers its calls name,
 * not with the communicator. The offer and the answer are each rank's
 * address (its link layer, its settings and its set-up socket). The
 * offering rank's main thread dials the other's set-up socket when it
 * joins and runs its half of the pair's set-up there: the two ranks agree
 * on a pair of ports and swap queue pair numbers (verbs_pair.c). The
 * answering rank's half runs on its accepting thread (verbs_accept.c),
 * never on its main thread, so a rank waiting in a join never waits for
 * another rank's main thread, which may be in a join of its own.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "transports/verbs/verbs.h"

static int reaches(const tt_verbs_addr_t *me, const tt_verbs_addr_t *peer)
{
    return me->magic == TT_VERBS_MAGIC && peer->magic == TT_VERBS_MAGIC && me->usable && peer->usable &&
           me->roce == peer->roce && (me->gid_index >= 0) == (peer->gid_index >= 0) &&
           (me->gid_index >= 0 || (me->lid != 0 && peer->lid != 0));
}

static int same_config(const tt_verbs_addr_t *a, const tt_verbs_addr_t *b)
{
    return a->nqps == b->nqps && a->nslots == b->nslots && a->slot_bytes == b->slot_bytes &&
           a->zcopy_bytes == b->zcopy_bytes;
}

/* Every rank offers verbs, so the core counts on it for the pair: what
 * is off, in full. */
static tutti_status_t check_peer(const tt_verbs_ctx_t *ctx, int peer, const tt_verbs_addr_t *theirs)
{
    const tt_tp_env_t *env = ctx->env;
    if (!reaches(&ctx->addr, theirs)) {
        TT_ERROR(TT_SUB_CONFIG,
                 "verbs: rank %d (%s) and rank %d (%s) cannot connect; set TUTTI_IB_HCA (and "
                 "TUTTI_IB_GID_INDEX) so that every rank uses ports of one kind",
                 env->rank, ctx->addr.roce ? "RoCE" : "InfiniBand", peer,
                 theirs->roce ? "RoCE" : "InfiniBand");
        return TUTTI_ERR_CONFIG;
    }
    if (!same_config(&ctx->addr, theirs)) {
        TT_ERROR(TT_SUB_CONFIG,
                 "verbs: rank %d and rank %d set TUTTI_IB_QPS_PER_PEER, TUTTI_IB_SLOTS, "
                 "TUTTI_IB_SLOT_BYTES or TUTTI_IB_ZCOPY_BYTES differently",
                 env->rank, peer);
        return TUTTI_ERR_CONFIG;
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t dial_watch(void *c)
{
    return tt_verbs_cut_short(c);
}

/* On the caller's thread: every wait of this half ends early when
 * tt_verbs_cut_short says so (an abort, a rank gone). */
static tutti_status_t dial(tt_verbs_ctx_t *ctx, tt_verbs_conn_t *c, const tt_verbs_addr_t *peer)
{
    const tt_tp_env_t *env = ctx->env;
    int64_t deadline = tt_now_ms() + env->timeout_ms;
    int fd;
    c->asking = 1;
    tutti_status_t st = tt_sock_connect_watched(&peer->oob, deadline, dial_watch, c, &fd);
    if (!st && (st = tt_hello_send(fd, env->key, env->rank, env->nranks, 0, deadline)) != TUTTI_SUCCESS)
        close(fd);
    if (st) {
        if (!c->cut) /* an abort is no failure; the watch said why */
            TT_ERROR(TT_SUB_NET, "verbs: reaching rank %d's set-up socket failed: %s", c->peer,
                     tutti_strerror(st));
        return st;
    }
    st = tt_verbs_exchange(ctx, fd, c, deadline);
    close(fd);
    return st;
}

/* A new connection's memory for peer, kept in its pending entry in state;
 * under ctx->lock. */
static tutti_status_t make_pending(tt_verbs_ctx_t *ctx, int peer, tt_verbs_pair_state_t state)
{
    tt_verbs_pending_t *e = &ctx->pending[peer];
    if (e->state != TT_VERBS_PAIR_NONE) {
        TT_ERROR(TT_SUB_NET, "verbs: rank %d asked for a second connection to rank %d", ctx->env->rank, peer);
        return TUTTI_ERR_INTERNAL;
    }
    tt_verbs_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return TUTTI_ERR_NO_MEMORY;
    c->peer = peer;
    tutti_status_t st = tt_verbs_conn_create(ctx, c);
    if (st) {
        tt_verbs_conn_destroy(c);
        return st;
    }
    *e = (tt_verbs_pending_t){.state = state, .conn = c};
    return TUTTI_SUCCESS;
}

static void put_addr(const tt_verbs_ctx_t *ctx, void *blob, size_t *len)
{
    memcpy(blob, &ctx->addr, sizeof ctx->addr);
    *len = sizeof ctx->addr;
}

tutti_status_t tt_verbs_offer(void *ctxp, int peer, void *blob, size_t *len)
{
    tt_verbs_ctx_t *ctx = ctxp;
    pthread_mutex_lock(&ctx->lock);
    tutti_status_t st = make_pending(ctx, peer, TT_VERBS_PAIR_OFFERED);
    pthread_mutex_unlock(&ctx->lock);
    if (!st)
        put_addr(ctx, blob, len);
    return st;
}

/* On the bootstrap's thread. Whether the two ranks can meet is the
 * offering side's to say (its join fails naming why); this side only
 * makes ready to be dialled. */
tutti_status_t tt_verbs_answer(void *ctxp, int peer, const void *offer, size_t offer_len, void *blob,
                               size_t *len)
{
    tt_verbs_ctx_t *ctx = ctxp;
    (void)offer;
    if (offer_len != sizeof(tt_verbs_addr_t))
        return TUTTI_ERR_UNSUPPORTED;
    pthread_mutex_lock(&ctx->lock);
    tutti_status_t st = ctx->acceptor_on ? TUTTI_SUCCESS : tt_verbs_acceptor_start(ctx);
    if (!st)
        st = make_pending(ctx, peer, TT_VERBS_PAIR_ANSWERED);
    pthread_mutex_unlock(&ctx->lock);
    if (!st)
        put_addr(ctx, blob, len);
    return st;
}

/* The offering side: dials the peer's accepting thread and brings the
 * pair up with it. */
static tutti_status_t join_offered(tt_verbs_ctx_t *ctx, int peer, const void *theirs, size_t len, void **conn)
{
    tt_verbs_addr_t addr;
    pthread_mutex_lock(&ctx->lock);
    tt_verbs_pending_t *e = &ctx->pending[peer];
    tt_verbs_conn_t *c = e->state == TT_VERBS_PAIR_OFFERED ? e->conn : NULL;
    if (c) /* it is this thread's now: a late withdraw finds nothing */
        *e = (tt_verbs_pending_t){0};
    pthread_mutex_unlock(&ctx->lock);
    if (!c || len != sizeof addr) {
        TT_ERROR(TT_SUB_NET, "verbs: rank %d joined a pair with rank %d that it had not offered",
                 ctx->env->rank, peer);
        if (c)
            tt_verbs_conn_destroy(c);
        return TUTTI_ERR_INTERNAL;
    }
    memcpy(&addr, theirs, sizeof addr);
    tutti_status_t st = check_peer(ctx, peer, &addr);
    if (!st)
        st = dial(ctx, c, &addr);
    if (st) {
        tt_verbs_conn_destroy(c);
        return st;
    }
    *conn = c;
    return TUTTI_SUCCESS;
}

/* The answering side: the connection once its accepting thread has it up. */
static tutti_status_t join_answered(tt_verbs_ctx_t *ctx, int peer, void **conn)
{
    pthread_mutex_lock(&ctx->lock);
    tt_verbs_pending_t *e = &ctx->pending[peer];
    tutti_status_t st = TUTTI_SUCCESS;
    switch (e->state) {
    case TT_VERBS_PAIR_ANSWERED:
    case TT_VERBS_PAIR_BUSY: break; /* not yet */
    case TT_VERBS_PAIR_UP:
        *conn = e->conn;
        *e = (tt_verbs_pending_t){0};
        break;
    case TT_VERBS_PAIR_FAILED: /* the accepting thread said why: this thread reports it */
        st = e->status;
        tt_log_fault_adopt(e->why ? e->why : "");
        free(e->why);
        *e = (tt_verbs_pending_t){0};
        break;
    default:
        TT_ERROR(TT_SUB_NET, "verbs: rank %d joined a pair with rank %d that it had not answered",
                 ctx->env->rank, peer);
        st = TUTTI_ERR_INTERNAL;
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

tutti_status_t tt_verbs_join(void *ctxp, int peer, int offered, const void *theirs, size_t len, void **conn)
{
    *conn = NULL;
    return offered ? join_offered(ctxp, peer, theirs, len, conn) : join_answered(ctxp, peer, conn);
}

void tt_verbs_withdraw(void *ctxp, int peer)
{
    tt_verbs_ctx_t *ctx = ctxp;
    pthread_mutex_lock(&ctx->lock);
    tt_verbs_pending_t *e = &ctx->pending[peer];
    if (e->state == TT_VERBS_PAIR_BUSY) {
        e->dropped = 1;
    } else {
        if (e->conn)
            tt_verbs_conn_destroy(e->conn);
        *e = (tt_verbs_pending_t){0};
    }
    pthread_mutex_unlock(&ctx->lock);
}
