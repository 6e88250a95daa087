/* SPDX-License-Identifier: MIT */
/*
 * Which ports two ranks connect through. A host may have RDMA ports on
 * several networks (RoCE NICs on different subnets, soft-RoCE on a veth,
 * separate InfiniBand fabrics), so the port nearest to a rank may not reach
 * its peer's. Over the set-up socket the two ranks swap every port they
 * offer, order the pairs alike (tt_verbs_pair_order), and try them in turn:
 * queue pairs made on both sides, brought up (RoCE resolves the peer's
 * address here), and a zero-length write each way that must be
 * acknowledged; each step's outcome goes both ways, so both ranks move on
 * together. A rank that ends on another port than its first says so in one
 * line; when no pair works, the error names every pair tried and why.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/wake.h"
#include "transports/verbs/verbs.h"

#define MAX_TRIES 16
#define WATCH_MS 100 /* between looks at env->watch while the set-up socket is silent */

void tt_verbs_offer_make(tt_verbs_ctx_t *ctx)
{
    tt_verbs_offer_t *o = &ctx->offer;
    memset(o, 0, sizeof *o);
    o->magic = TT_VERBS_MAGIC;
    o->rank = ctx->env->rank;
    o->nports = (uint32_t)ctx->ndev;
    for (int i = 0; i < ctx->ndev; i++) {
        const tt_verbs_port_t *p = &ctx->dev[i].port;
        tt_verbs_port_info_t *e = &o->port[i];
        snprintf(e->dev, sizeof e->dev, "%s", p->dev);
        e->port = (uint8_t)p->port;
        e->roce = (uint8_t)p->roce;
        e->mtu = (uint8_t)p->mtu;
        e->subnet_bits = (uint8_t)p->subnet_bits;
        e->gid_index = (int16_t)p->gid_index;
        e->lid = p->lid;
        e->subnet = p->subnet;
        e->gid = p->gid;
    }
}

/* 0: one known subnet; 1: not known to differ; 2: known to differ. */
static int subnet_class(const tt_verbs_port_info_t *a, const tt_verbs_port_info_t *b)
{
    if (!a->subnet_bits || !b->subnet_bits)
        return 1;
    return a->subnet_bits == b->subnet_bits && a->subnet == b->subnet ? 0 : 2;
}

int tt_verbs_pair_order(const tt_verbs_offer_t *lo, const tt_verbs_offer_t *hi, tt_verbs_pair_t *out, int max)
{
    int n = 0;
    int nlo = (int)(lo->nports < TT_VERBS_MAX_PORTS ? lo->nports : TT_VERBS_MAX_PORTS);
    int nhi = (int)(hi->nports < TT_VERBS_MAX_PORTS ? hi->nports : TT_VERBS_MAX_PORTS);
    for (int cls = 0; cls < 3; cls++)
        for (int sum = 0; sum < nlo + nhi - 1; sum++)
            for (int i = 0; i < nlo && i <= sum; i++) {
                int j = sum - i;
                if (j < nhi && n < max && lo->port[i].roce == hi->port[j].roce &&
                    subnet_class(&lo->port[i], &hi->port[j]) == cls)
                    out[n++] = (tt_verbs_pair_t){i, j};
            }
    return n;
}

/* "rxe0 port 1 (GID index 1, ::ffff:10.11.0.1)", or with the LID. */
static void port_text(const tt_verbs_port_info_t *p, char *out, size_t len)
{
    char gid[INET6_ADDRSTRLEN] = "?";
    if (p->gid_index < 0) {
        snprintf(out, len, "%s port %u (LID %u)", p->dev, p->port, p->lid);
        return;
    }
    inet_ntop(AF_INET6, p->gid.raw, gid, sizeof gid);
    snprintf(out, len, "%s port %u (GID index %d, %s)", p->dev, p->port, p->gid_index, gid);
}

/* The asking side's half runs on the caller's thread inside a call
 * (verbs_connect.c), and tutti_comm_abort waits for that call to leave
 * before it closes anything: no close shuts its set-up socket down, as one
 * does the accepting thread's. So its waits look at the abort flag and the
 * star's news themselves; else a peer stopped mid set-up held an abort
 * for the whole TUTTI_TIMEOUT. */
tutti_status_t tt_verbs_cut_short(tt_verbs_conn_t *c)
{
    const tt_tp_env_t *env = c->ctx->env;
    if (!c->asking)
        return TUTTI_SUCCESS;
    tutti_status_t st = TUTTI_ERR_ABORTED;
    if (!env->aborting || !atomic_load_explicit(env->aborting, memory_order_relaxed))
        st = env->watch ? env->watch(env->watch_arg) : TUTTI_SUCCESS;
    c->cut |= st != TUTTI_SUCCESS;
    return st;
}

/* Until fd has something to read: TUTTI_SUCCESS, TUTTI_ERR_TIMEOUT at the
 * deadline, or why the set-up was cut short. The asking side polls the
 * communicator's wake-up too, which an abort rings once its flag is up. */
static tutti_status_t readable(tt_verbs_conn_t *c, int fd, int64_t deadline)
{
    const tt_tp_env_t *env = c->ctx->env;
    int wake = c->asking && env->aborting ? env->wake_fd : -1;
    for (;;) {
        tutti_status_t st = tt_verbs_cut_short(c);
        int64_t left = deadline - tt_now_ms();
        if (st || left <= 0)
            return st ? st : TUTTI_ERR_TIMEOUT;
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake, .events = POLLIN}};
        int rc = poll(p, 2, left > WATCH_MS ? WATCH_MS : (int)left);
        if (rc < 0 && errno != EINTR)
            return TUTTI_ERR_SYSTEM;
        if (rc > 0 && p[1].revents)
            tt_wake_drain(wake); /* the engine reads the flag and the news on every poll anyway */
        if (rc > 0 && p[0].revents)
            return TUTTI_SUCCESS;
    }
}

/* Sends ours, reads theirs: one step of a try, both ways. A step is far
 * smaller than a socket's buffer, so only the read waits on the peer. */
static tutti_status_t swap(tt_verbs_conn_t *c, int fd, const void *mine, void *theirs, size_t len,
                           int64_t deadline)
{
    tutti_status_t st = tt_sock_send_all(fd, mine, len, deadline);
    if (!st)
        st = readable(c, fd, deadline);
    return st ? st : tt_sock_recv_all(fd, theirs, len, deadline);
}

/* A zero-length write to the peer, which its NIC must acknowledge: the
 * path works both ways. 0, or -1 with why filled. On the accepting thread
 * the wait also ends when the communicator closes (ctx->stopping): a peer
 * stopped here never answers, a killed one only once the NIC's retries run
 * out (seconds), and the close waits for this thread; the set-up socket's
 * shutdown, which ends the other steps' waits, does not reach this one.
 * On the asking side it ends when the set-up is cut short (*cut says why). */
static int probe(tt_verbs_conn_t *c, int64_t deadline, tutti_status_t *cut, char *why, size_t len)
{
    const tt_ibv_t *ibv = c->ctx->ibv;
    if (tt_verbs_post_write(c, 0, NULL, 0, 0, c->peer_region, c->peer_rkey, 0, TT_WR_PROBE, 0)) {
        snprintf(why, len, "%s", c->why);
        return -1;
    }
    struct ibv_wc wc;
    int n;
    while ((n = ibv_poll_cq(c->cq, 1, &wc)) == 0 && tt_now_ms() < deadline &&
           !atomic_load(&c->ctx->stopping) && !(*cut = tt_verbs_cut_short(c))) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    if (n == 1 && wc.status == IBV_WC_SUCCESS) {
        c->qp[0].freed = wc.wr_id & 0xffffffffffffull;
        return 0;
    }
    int closed = n == 0 && atomic_load(&c->ctx->stopping);
    snprintf(why, len, "a write to the peer was not acknowledged: %s",
             n < 0                ? "polling the completion queue failed"
             : closed             ? "the communicator was closed"
             : n == 0             ? "no answer before TUTTI_TIMEOUT"
             : ibv->wc_status_str ? ibv->wc_status_str(wc.status)
                                  : "work request failed");
    return -1;
}

/* Each step of a try after the queue pairs are made: 0 or an errno of
 * this side, and why. */
typedef struct {
    int32_t err;
    char why[TT_VERBS_WHY];
} step_t;

/* One try: queue pairs on mine, to the peer's port theirs. 1 when both
 * ranks' are up and carried a write each way; 0 when this pair does not
 * work (why says on which side and why), or when the set-up socket failed
 * (*st says how). */
static int try_pair(tt_verbs_conn_t *c, int fd, tt_verbs_dev_t *mine, const tt_verbs_port_info_t *theirs,
                    int64_t deadline, tutti_status_t *st, char *why, size_t len)
{
    tt_verbs_wire_t w, pw;
    tt_verbs_conn_attach(c, mine, &w);
    *st = swap(c, fd, &w, &pw, sizeof w, deadline);
    if (!*st && (pw.magic != TT_VERBS_MAGIC || pw.rank != c->peer)) {
        TT_ERROR(TT_SUB_NET, "verbs: rank %d answered set-up with a malformed message", c->peer);
        *st = TUTTI_ERR_INTERNAL;
    }
    if (*st)
        return 0;
    pw.why[sizeof pw.why - 1] = '\0';
    if (w.failed || pw.failed) {
        snprintf(why, len, "on rank %d: %.200s", w.failed ? c->ctx->env->rank : c->peer,
                 w.failed ? w.why : pw.why);
        return 0;
    }
    step_t me = {tt_verbs_conn_connect(c, theirs, &pw, &w), ""}, peer;
    if (me.err)
        snprintf(me.why, sizeof me.why, "bringing the queue pairs up failed: %s", strerror(me.err));
    for (int round = 0; round < 2; round++) {
        if ((*st = swap(c, fd, &me, &peer, sizeof me, deadline)) != TUTTI_SUCCESS)
            return 0;
        peer.why[sizeof peer.why - 1] = '\0';
        if (me.err || peer.err) {
            snprintf(why, len, "on rank %d: %.200s", me.err ? c->ctx->env->rank : c->peer,
                     me.err ? me.why : peer.why);
            return 0;
        }
        if (round == 0) { /* both up: each writes once */
            me.err = probe(c, deadline, st, me.why, sizeof me.why) ? -1 : 0;
            if (*st) /* cut short: no step more */
                return 0;
        }
    }
    return 1;
}

/* One line when a rank connects from another port than the one it
 * prefers (its first offered): where it ended, and why (the first pair
 * tried failed, or the pair shares a subnet where the nearest does not). */
static void said_where(const tt_verbs_ctx_t *ctx, const tt_verbs_conn_t *c, int me,
                       const tt_verbs_port_info_t *theirs, const char *a, const char *b,
                       const char *first_failed)
{
    char pref[128];
    if (first_failed) {
        TT_INFO(TT_SUB_NET, "verbs: rank %d reaches rank %d from its %s to rank %d's %s; first tried: %s",
                ctx->env->rank, c->peer, a, c->peer, b, first_failed);
    } else if (me != 0) {
        port_text(&ctx->offer.port[0], pref, sizeof pref);
        TT_INFO(
            TT_SUB_NET,
            "verbs: rank %d reaches rank %d from its %s to rank %d's %s%s rather than from its nearest %s",
            ctx->env->rank, c->peer, a, c->peer, b,
            subnet_class(&ctx->offer.port[me], theirs) == 0 ? ", on one subnet," : ",", pref);
    }
}

/* What to set, after the pairs tried (each listed in tried). */
static void no_pair(const tt_verbs_ctx_t *ctx, const tt_verbs_conn_t *c, const char *tried)
{
    TT_ERROR(TT_SUB_NET,
             "verbs: rank %d and rank %d reach each other through none of their ports: %s; set TUTTI_IB_HCA "
             "on every host to ports on one network (ibv_devinfo -v lists each port's GIDs; on RoCE, "
             "TUTTI_IB_GID_INDEX to a GID of that network), or leave verbs out (TUTTI_TRANSPORTS)",
             ctx->env->rank, c->peer, *tried ? tried : "no two ports of one link layer");
}

tutti_status_t tt_verbs_pair_up(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline)
{
    tt_verbs_offer_t peer;
    tutti_status_t st = swap(c, fd, &ctx->offer, &peer, sizeof peer, deadline);
    if (!st && (peer.magic != TT_VERBS_MAGIC || peer.rank != c->peer || peer.nports > TT_VERBS_MAX_PORTS)) {
        TT_ERROR(TT_SUB_NET, "verbs: rank %d answered set-up with a malformed message", c->peer);
        st = TUTTI_ERR_INTERNAL;
    }
    if (st)
        return st;
    for (uint32_t i = 0; i < peer.nports; i++)
        peer.port[i].dev[sizeof peer.port[i].dev - 1] = '\0';
    int lower = ctx->env->rank < c->peer;
    const tt_verbs_offer_t *lo = lower ? &ctx->offer : &peer, *hi = lower ? &peer : &ctx->offer;
    tt_verbs_pair_t pairs[MAX_TRIES];
    int n = tt_verbs_pair_order(lo, hi, pairs, MAX_TRIES);
    char tried[1024] = "";
    size_t used = 0, first_len = 0;
    for (int k = 0; k < n; k++) {
        int me = lower ? pairs[k].lo : pairs[k].hi, them = lower ? pairs[k].hi : pairs[k].lo;
        char why[TT_VERBS_WHY] = "", a[128], b[128];
        port_text(&ctx->offer.port[me], a, sizeof a);
        port_text(&peer.port[them], b, sizeof b);
        if (try_pair(c, fd, &ctx->dev[me], &peer.port[them], deadline, &st, why, sizeof why)) {
            tried[first_len] = '\0';
            said_where(ctx, c, me, &peer.port[them], a, b, k > 0 ? tried : NULL);
            return TUTTI_SUCCESS;
        }
        if (st)
            return st;
        TT_DEBUG(TT_SUB_NET, "verbs: rank %d's %s and rank %d's %s: %s", ctx->env->rank, a, c->peer, b, why);
        /* Past the deadline (a rank stopped through the set-up, or gone) a
         * write unanswered says nothing of the ports: no pair could be tried
         * in time, and "set TUTTI_IB_HCA" would send the user astray. */
        if (tt_now_ms() >= deadline)
            return TUTTI_ERR_TIMEOUT;
        if (used < sizeof tried)
            used += (size_t)snprintf(tried + used, used < sizeof tried ? sizeof tried - used : 0,
                                     "%srank %d's %s to rank %d's %s: %s", k ? "; " : "", ctx->env->rank, a,
                                     c->peer, b, why);
        if (k == 0)
            first_len = used < sizeof tried ? used : sizeof tried - 1;
        tt_verbs_conn_detach(c);
    }
    no_pair(ctx, c, tried);
    return TUTTI_ERR_CONFIG;
}

tutti_status_t tt_verbs_exchange(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline)
{
    tutti_status_t st = tt_verbs_pair_up(ctx, fd, c, deadline);
    /* CONFIG: no pair of ports, said in full already; stopping: this
     * rank's close cut the set-up short, and nothing failed; cut: an abort
     * did (no failure either), or the watch said which rank is gone. */
    if (!st)
        c->probe_at_ms = tt_now_ms();
    else if (st != TUTTI_ERR_CONFIG && !atomic_load(&ctx->stopping) && !c->cut)
        TT_ERROR(TT_SUB_NET, "verbs: set-up with rank %d failed: %s", c->peer, tutti_strerror(st));
    return st;
}
