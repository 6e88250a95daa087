/* SPDX-License-Identifier: MIT */
/*
 * This rank's listener while it shrinks. What comes: members joining it
 * (answered with a challenge, then admitted once their join proves the
 * key), and verdicts a coordinator left for it. Many connections are
 * served at once, each read as its bytes come, each given a short deadline
 * to finish its part; a full waiting room makes room by dropping the
 * oldest. So connections without the key (a flood of silent ones, a
 * process that took a dead rank's port) cost this rank little time, and
 * one log line per shrink that says how many there were.
 *
 * A rank a shrink ahead (its previous shrink ended before this rank's did)
 * may reach this listener while this rank still serves the previous one.
 * Closing its connection would tell it this rank is gone; it is held for
 * this rank's next shrink instead (comm->rescue_held).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/shrink.h"
#include "core/clock.h"
#include "core/log.h"

#define PENDING 64        /* connections owing their part at once */
#define HANDSHAKE_MS 1000 /* to send a whole message, or to answer the challenge */
#define ACCEPTS_PER_WAKE 256

/* Connections whose hello (a header, read whole) is for the next shrink of comm. */
struct tt_rescue_held {
    int n;
    struct {
        int fd;
        tt_rescue_hdr_t hdr;
    } conn[PENDING];
};

typedef struct {
    int fd;
    int64_t deadline;
    int challenged; /* its hello was answered: its join is owed */
    size_t got;     /* bytes of the message under way */
    tt_rescue_hdr_t hdr;
    unsigned char *payload;
    unsigned char mine[TT_RESCUE_NONCE];
} conn_t;

struct tt_rescue_inbox {
    tt_shrink_t *sh;
    int listen[2]; /* TCP, Unix; -1 where there is none */
    int npending;
    conn_t pending[PENDING];
    uint64_t dropped;
    char first_drop[192];
    int verdict_from; /* -1 until a verdict came */
    tutti_status_t verdict;
    int left_out; /* the verdict taken left this rank out */
    int coordinating; /* this rank coordinates: it takes what its members know */
};

/* The connections held for this shrink join its room; those of an
 * earlier one are closed (their shrink is over everywhere). */
static void take_held(tt_rescue_inbox_t *in)
{
    struct tt_rescue_held *h = in->sh->comm->rescue_held;
    for (int k = 0; h && k < h->n;) {
        if (h->conn[k].hdr.no == in->sh->no + 1) {
            k++;
            continue;
        }
        if (h->conn[k].hdr.no == in->sh->no && in->npending < PENDING)
            in->pending[in->npending++] = (conn_t){.fd = h->conn[k].fd,
                                                   .deadline = tt_now_ms() + HANDSHAKE_MS,
                                                   .got = sizeof h->conn[k].hdr,
                                                   .hdr = h->conn[k].hdr};
        else
            close(h->conn[k].fd);
        h->conn[k] = h->conn[--h->n];
    }
}

void tt_rescue_held_free(tt_comm_t *comm)
{
    struct tt_rescue_held *h = comm->rescue_held;
    for (int k = 0; h && k < h->n; k++)
        close(h->conn[k].fd);
    free(h);
    comm->rescue_held = NULL;
}

tt_rescue_inbox_t *tt_rescue_inbox_new(tt_shrink_t *sh)
{
    tt_rescue_inbox_t *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->sh = sh;
    in->listen[0] = sh->comm->rescue_fd;
    in->listen[1] = sh->comm->rescue_local_fd;
    in->verdict_from = -1;
    for (int i = 0; i < 2; i++)
        if (in->listen[i] >= 0)
            tt_sock_set_nonblocking(in->listen[i]);
    take_held(in);
    return in;
}

static void forget(tt_rescue_inbox_t *in, int i, int close_fd)
{
    conn_t *c = &in->pending[i];
    if (close_fd)
        close(c->fd);
    free(c->payload);
    in->pending[i] = in->pending[--in->npending];
}

/* Drops connection i; a connection that said nothing and closed is a
 * probe (is this rank alive?) and no news. */
static void drop(tt_rescue_inbox_t *in, int i, const char *why)
{
    conn_t *c = &in->pending[i];
    if (why) {
        tt_sockaddr_t peer = {.len = sizeof peer.u};
        socklen_t plen = sizeof peer.u;
        char from[80] = "a process of this host";
        if (getpeername(c->fd, &peer.u.sa, &plen) == 0 && peer.u.sa.sa_family != AF_UNIX)
            tt_sock_addr_str(&peer, from, sizeof from);
        TT_DEBUG(TT_SUB_INIT, "shrink: rank %d dropped a connection from %s: %s", in->sh->me, from, why);
        if (!in->dropped++)
            snprintf(in->first_drop, sizeof in->first_drop, "from %s: %s", from, why);
    }
    forget(in, i, 1);
}

/* Moves connection i, whose hello is for the next shrink, to comm's held
 * ones (when all 64 places are taken, the one in the first is closed). */
static void hold(tt_rescue_inbox_t *in, int i)
{
    tt_comm_t *comm = in->sh->comm;
    struct tt_rescue_held *h = comm->rescue_held ? comm->rescue_held : calloc(1, sizeof *h);
    if (!h) {
        drop(in, i, "no memory to hold it for the next shrink");
        return;
    }
    comm->rescue_held = h;
    if (h->n == PENDING) {
        close(h->conn[0].fd);
        h->conn[0] = h->conn[--h->n];
    }
    h->conn[h->n].fd = in->pending[i].fd;
    h->conn[h->n++].hdr = in->pending[i].hdr;
    TT_DEBUG(TT_SUB_INIT, "shrink: rank %d holds rank %d's message for its shrink #%u", in->sh->me,
             in->pending[i].hdr.rank, in->pending[i].hdr.no + 1);
    forget(in, i, 0);
}

void tt_rescue_inbox_free(tt_rescue_inbox_t *in)
{
    if (!in)
        return;
    while (in->npending)
        forget(in, 0, 1);
    if (in->dropped)
        TT_WARN(TT_SUB_INIT,
                "shrink: rank %d dropped %llu connection%s to its listener that did not prove this shrink's "
                "key (the first: %s)",
                in->sh->me, (unsigned long long)in->dropped, in->dropped > 1 ? "s" : "", in->first_drop);
    free(in);
}

tutti_status_t tt_rescue_inbox_verdict(const tt_rescue_inbox_t *in)
{
    return in->verdict_from < 0 ? TUTTI_SUCCESS : in->verdict;
}

/* A member's join proved the key: it is admitted (or held until this rank
 * coordinates). What it knows dead, a coordinator knows too (a rank that
 * follows another keeps its own view, or it would leave a live
 * coordinator); a member whose list or flags differ is kept, to be told. */
static void admit(tt_rescue_inbox_t *in, int i)
{
    tt_shrink_t *sh = in->sh;
    conn_t *c = &in->pending[i];
    int r = c->hdr.rank;
    tt_rescue_member_t *m = &sh->joined[r];
    memcpy(&m->join, c->payload, sizeof m->join);
    const unsigned char *dead = c->payload + sizeof m->join;
    if (!sh->mismatch[0] &&
        (m->join.flags != (sh->flags & TUTTI_SHRINK_DEAD) || m->join.exclude_hash != sh->exclude_hash))
        snprintf(sh->mismatch, sizeof sh->mismatch,
                 "rank %d passed another exclude list or TUTTI_SHRINK_DEAD than rank %d", r, sh->me);
    for (int q = 0; in->coordinating && q < sh->n; q++)
        if (q != sh->me && q != r && sh->joined[q].fd < 0 && dead[q] && dead[q] <= TT_LEFT_OUT &&
            !sh->dead[q])
            sh->dead[q] = dead[q];
    if (m->fd >= 0)
        close(m->fd); /* it came back on a new connection */
    m->fd = c->fd;
    memcpy(m->theirs, c->hdr.nonce, TT_RESCUE_NONCE);
    memcpy(m->mine, c->mine, TT_RESCUE_NONCE);
    sh->dead[r] = TT_ALIVE;
    TT_DEBUG(TT_SUB_INIT, "shrink: rank %d joined rank %d", r, sh->me);
    forget(in, i, 0);
}

static void take_verdict(tt_rescue_inbox_t *in, int i)
{
    tt_shrink_t *sh = in->sh;
    conn_t *c = &in->pending[i];
    tt_rescue_decision_t d;
    memcpy(&d, c->payload, sizeof d);
    tutti_status_t st;
    /* A verdict that this shrink failed may be followed by one that a later
     * shrink of comm (the others retried without this rank) left it out,
     * both waiting in the listener: that one is final and must be read, or
     * comm->shrunk_out_by stays unset and this rank shrinks comm again. */
    if ((in->verdict_from < 0 || (!in->left_out && !d.status)) &&
        tt_rescue_verdict_ok(sh, &c->hdr, &d, c->payload + sizeof d, &st)) {
        in->verdict_from = c->hdr.rank;
        in->verdict = st;
        in->left_out = !d.status;
    }
    forget(in, i, 1);
}

/* The challenge that answers a hello: this rank's nonce, and a code over the member's. */
static int challenge(tt_rescue_inbox_t *in, conn_t *c)
{
    tt_rescue_nonce(c->mine);
    return tt_rescue_send(in->sh, c->fd, TT_RESCUE_CHALLENGE, c->hdr.rank, c->mine, c->hdr.nonce, NULL, 0,
                          NULL, tt_now_ms() + HANDSHAKE_MS) == TUTTI_SUCCESS;
}

/* Reads what connection i sent: 1 when it completed a join or a verdict
 * (it is gone from the room), 0 while it owes more, -1 when dropped. */
static int progress(tt_rescue_inbox_t *in, int i)
{
    tt_shrink_t *sh = in->sh;
    conn_t *c = &in->pending[i];
    for (;;) {
        size_t hsz = sizeof c->hdr, want = c->got < hsz ? hsz : hsz + c->hdr.len;
        char *dst = c->got < hsz ? (char *)&c->hdr + c->got : (char *)c->payload + (c->got - hsz);
        ssize_t n = c->got < want ? recv(c->fd, dst, want - c->got, MSG_DONTWAIT) : 0;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (c->got < want && n <= 0) {
            drop(in, i, c->got || c->challenged ? "it closed before its part was whole" : NULL);
            return -1;
        }
        c->got += (size_t)n;
        if (c->got == hsz && !c->payload) {
            if (!c->challenged && c->hdr.magic == TT_RESCUE_MAGIC && c->hdr.kind == TT_RESCUE_HELLO &&
                c->hdr.no == sh->no + 1) {
                hold(in, i);
                return -1;
            }
            tt_rescue_kind_t kind = c->challenged                      ? TT_RESCUE_JOIN
                                    : c->hdr.kind == TT_RESCUE_VERDICT ? TT_RESCUE_VERDICT
                                                                       : TT_RESCUE_HELLO;
            if (!tt_rescue_hdr_ok(sh, &c->hdr, kind, -1) ||
                (c->hdr.len && !(c->payload = malloc(c->hdr.len)))) {
                drop(in, i, "not a shrink's message, or not for this rank");
                return -1;
            }
        }
        if (c->got < hsz || c->got < hsz + c->hdr.len)
            continue;
        if (c->hdr.kind == TT_RESCUE_HELLO) {
            if (!challenge(in, c)) {
                drop(in, i, "it did not take the challenge");
                return -1;
            }
            c->challenged = 1;
            c->got = 0;
            c->deadline = tt_now_ms() + HANDSHAKE_MS;
            continue;
        }
        if (!tt_rescue_check(sh, &c->hdr, c->payload, c->challenged ? c->mine : NULL)) {
            drop(in, i, "its code does not prove this shrink's key");
            return -1;
        }
        if (c->hdr.kind == TT_RESCUE_JOIN)
            admit(in, i);
        else
            take_verdict(in, i);
        return 1;
    }
}

/* Takes what the kernel queued; a full room drops its oldest. */
static void accept_some(tt_rescue_inbox_t *in, int lfd, int64_t now)
{
    for (int k = 0; k < ACCEPTS_PER_WAKE; k++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (in->npending == PENDING) {
            int oldest = 0;
            for (int i = 1; i < in->npending; i++)
                if (in->pending[i].deadline < in->pending[oldest].deadline)
                    oldest = i;
            drop(in, oldest, "the room for waiting connections was full");
        }
        in->pending[in->npending++] = (conn_t){.fd = fd, .deadline = now + HANDSHAKE_MS};
        progress(in, in->npending - 1); /* a member's hello is usually there already */
    }
}

/* Reads every waiting connection; 1 when one completed. */
static int progress_all(tt_rescue_inbox_t *in, int64_t now)
{
    int came = 0;
    for (int i = 0; i < in->npending;) {
        int rc = progress(in, i);
        came |= rc > 0;
        if (rc == 0 && now >= in->pending[i].deadline) {
            drop(in, i,
                 in->pending[i].challenged ? "no join within its deadline" : "silent past its deadline");
            continue;
        }
        if (rc == 0)
            i++;
    }
    return came;
}

int tt_rescue_inbox_serve(tt_rescue_inbox_t *in, int coordinating, int extra_fd, int64_t deadline_ms)
{
    in->coordinating = coordinating;
    struct pollfd pfds[PENDING + 3];
    for (;;) {
        int64_t now = tt_now_ms();
        for (int l = 0; l < 2; l++) /* what is queued is taken even when the deadline has passed */
            if (in->listen[l] >= 0)
                accept_some(in, in->listen[l], now);
        int came = progress_all(in, now);
        if (came || now >= deadline_ms)
            return came;
        int np = 0;
        int64_t wake = deadline_ms;
        pfds[np++] = (struct pollfd){.fd = in->listen[0], .events = POLLIN};
        pfds[np++] = (struct pollfd){.fd = in->listen[1], .events = POLLIN};
        pfds[np++] = (struct pollfd){.fd = extra_fd, .events = POLLIN};
        for (int i = 0; i < in->npending; i++) {
            pfds[np++] = (struct pollfd){.fd = in->pending[i].fd, .events = POLLIN};
            if (in->pending[i].deadline < wake)
                wake = in->pending[i].deadline;
        }
        int rc = poll(pfds, (nfds_t)np, (int)(wake > now ? wake - now : 0));
        if (rc < 0 && errno != EINTR)
            return 0;
        if (rc > 0 && pfds[2].revents)
            return 0;
    }
}
