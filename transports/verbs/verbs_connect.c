/* SPDX-License-Identifier: MIT */
/*
 * verbs connect: a connection to every peer the core gives (every rank
 * offers verbs then; two ports of different link layers are a configuration
 * error, named), over a keyed set-up socket (the higher rank dials the
 * lower) on which the two ranks agree on a pair of ports and swap queue
 * pair numbers (verbs_pair.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/admit.h"
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

/* Agrees on ports with the peer and brings the connection up. */
static tutti_status_t exchange(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline)
{
    tutti_status_t st = tt_verbs_pair_up(ctx, fd, c, deadline);
    close(fd);
    if (!st)
        c->probe_at_ms = tt_now_ms();
    return st;
}

static tutti_status_t dial(tt_verbs_ctx_t *ctx, tt_verbs_conn_t *c, const tt_verbs_addr_t *peer,
                           int64_t deadline)
{
    const tt_tp_env_t *env = ctx->env;
    int fd;
    tutti_status_t st = tt_sock_connect_watched(&peer->oob, deadline, env->watch, env->watch_arg, &fd);
    if (!st && (st = tt_hello_send(fd, env->key, env->rank, env->nranks, 0, deadline)) != TUTTI_SUCCESS)
        close(fd);
    if (!st)
        st = exchange(ctx, fd, c, deadline);
    if (st && st != TUTTI_ERR_CONFIG) /* CONFIG: no pair of ports, said in full already */
        TT_ERROR(TT_SUB_NET, "verbs: set-up with rank %d failed: %s", c->peer, tutti_strerror(st));
    return st;
}

/* Takes set-up connections from higher ranks until every one arrived:
 * admitted many at once, the keyed ones only (core/admit.c), so that
 * connections without the key cannot hold up the peers'. */
static tutti_status_t accept_all(tt_verbs_ctx_t *ctx, const int *peers, int npeers, void **conns,
                                 int expected, int64_t deadline)
{
    const tt_tp_env_t *env = ctx->env;
    if (!expected)
        return TUTTI_SUCCESS;
    tt_admit_t *admit =
        tt_admit_new(ctx->listen_fd, env->key, TT_SUB_NET, "verbs", env->watch, env->watch_arg);
    if (!admit)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = TUTTI_SUCCESS;
    while (!st && expected > 0) {
        int fd, slot = -1;
        tt_hello_t h;
        st = tt_admit_next(admit, deadline, &fd, &h);
        if (st == TUTTI_ERR_TIMEOUT)
            TT_ERROR(TT_SUB_NET, "verbs: %d set-up connections from higher ranks never arrived", expected);
        if (st)
            break;
        for (int i = 0; i < npeers && slot < 0; i++)
            if (peers[i] == h.rank && peers[i] > env->rank && conns[i] &&
                !((tt_verbs_conn_t *)conns[i])->peer_region)
                slot = i;
        if (slot < 0) {
            TT_WARN(TT_SUB_NET, "verbs: refused unexpected set-up connection claiming rank %d", h.rank);
            close(fd);
            continue;
        }
        st = exchange(ctx, fd, conns[slot], deadline);
        if (st && st != TUTTI_ERR_CONFIG)
            TT_ERROR(TT_SUB_NET, "verbs: set-up with rank %d failed: %s", h.rank, tutti_strerror(st));
        else
            expected--;
    }
    tt_admit_free(admit);
    return st;
}

/* Makes a connection to each peer; how many of them dial in to us. */
static tutti_status_t create_conns(tt_verbs_ctx_t *ctx, const int *peers, int npeers,
                                   const tt_verbs_addr_t *addrs, void **conns, int *expected)
{
    const tt_tp_env_t *env = ctx->env;
    *expected = 0;
    for (int i = 0; i < npeers; i++) {
        if (!reaches(&ctx->addr, &addrs[i])) {
            /* Both offer verbs, so the core counts on it: say what is off. */
            TT_ERROR(TT_SUB_CONFIG,
                     "verbs: rank %d (%s) and rank %d (%s) cannot connect; set TUTTI_IB_HCA (and "
                     "TUTTI_IB_GID_INDEX) so that every rank uses ports of one kind",
                     env->rank, ctx->addr.roce ? "RoCE" : "InfiniBand", peers[i],
                     addrs[i].roce ? "RoCE" : "InfiniBand");
            return TUTTI_ERR_CONFIG;
        }
        if (!same_config(&ctx->addr, &addrs[i])) {
            TT_ERROR(TT_SUB_CONFIG,
                     "verbs: rank %d and rank %d set TUTTI_IB_QPS_PER_PEER, TUTTI_IB_SLOTS, "
                     "TUTTI_IB_SLOT_BYTES or TUTTI_IB_ZCOPY_BYTES differently",
                     env->rank, peers[i]);
            return TUTTI_ERR_CONFIG;
        }
        tt_verbs_conn_t *c = calloc(1, sizeof *c);
        if (!c)
            return TUTTI_ERR_NO_MEMORY;
        c->peer = peers[i];
        conns[i] = c;
        tutti_status_t st = tt_verbs_conn_create(ctx, c);
        if (st)
            return st;
        *expected += peers[i] > env->rank;
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_verbs_connect(void *ctxp, const int *peers, int npeers, const unsigned char *addrs,
                                void **conns)
{
    tt_verbs_ctx_t *ctx = ctxp;
    int64_t deadline = tt_now_ms() + ctx->env->timeout_ms;
    tt_verbs_addr_t *peer = calloc((size_t)npeers + 1, sizeof *peer);
    tutti_status_t st = peer ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    int expected = 0;
    for (int i = 0; i < npeers; i++) {
        conns[i] = NULL;
        if (peer)
            memcpy(&peer[i], addrs + (size_t)peers[i] * TT_ADDR_MAX, sizeof peer[i]);
    }
    if (!st)
        st = create_conns(ctx, peers, npeers, peer, conns, &expected);
    /* Dial lower ranks first: their listeners queue us without an accept. */
    for (int i = 0; i < npeers && !st; i++)
        if (conns[i] && peers[i] < ctx->env->rank)
            st = dial(ctx, conns[i], &peer[i], deadline);
    if (!st)
        st = accept_all(ctx, peers, npeers, conns, expected, deadline);
    if (ctx->listen_fd >= 0) { /* nothing more will dial in */
        close(ctx->listen_fd);
        ctx->listen_fd = -1;
    }
    if (st)
        for (int i = 0; i < npeers; i++)
            if (conns[i]) {
                tt_verbs_conn_destroy(conns[i]);
                conns[i] = NULL;
            }
    free(peer);
    return st;
}
