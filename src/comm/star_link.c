/* SPDX-License-Identifier: MIT */
/*
 * The tree's connections, served by the star's thread: frames read as they
 * come and written as the sockets take them (never blocking: a relay that
 * waited on a socket could wait on a peer that waits on it), what comes
 * from the parent passed down to the children, what comes from a child
 * passed up (or to the hub on rank 0), children and messages admitted on
 * this rank's listener, and a rank whose parent is gone attaching to
 * rank 0 instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/grow.h"
#include "core/log.h"

#define REATTACH_MS 2000 /* the longest an orphan waits for rank 0 to take its connection */

int tt_star_hdr_ok(const tt_star_hdr_t *h, int nranks)
{
    return h->magic == TT_STAR_MAGIC && h->type >= TT_STAR_DATA && h->type < TT_STAR_TYPES && h->rank >= 0 &&
           h->rank < nranks && h->len <= TT_STAR_MAX_PAYLOAD;
}

tt_star_frame_t *tt_star_frame_new(int type, int rank, tutti_status_t status, uint64_t seq, const void *p,
                                   size_t len)
{
    /* One byte more: a payload is read as text where it is one. */
    tt_star_frame_t *f = malloc(sizeof *f + len + 1);
    if (!f)
        return NULL;
    f->next = NULL;
    f->sent = 0;
    f->hdr = (tt_star_hdr_t){.magic = TT_STAR_MAGIC,
                             .type = (uint16_t)type,
                             .rank = rank,
                             .status = (int32_t)status,
                             .len = (uint32_t)len,
                             .seq = seq};
    if (len)
        memcpy(f->payload, p, len);
    f->payload[len] = '\0';
    return f;
}

tutti_status_t tt_star_send(int fd, int type, int rank, tutti_status_t status, uint64_t seq,
                            const void *payload, size_t len, int64_t timeout_ms)
{
    tt_star_hdr_t h = {.magic = TT_STAR_MAGIC,
                       .type = (uint16_t)type,
                       .rank = rank,
                       .status = (int32_t)status,
                       .len = (uint32_t)len,
                       .seq = seq};
    int64_t deadline = tt_now_ms() + timeout_ms;
    tutti_status_t st = tt_sock_send_all(fd, &h, sizeof h, deadline);
    return st || !len ? st : tt_sock_send_all(fd, payload, len, deadline);
}

void tt_star_reader_reset(tt_star_reader_t *rd)
{
    free(rd->payload);
    rd->payload = NULL;
    rd->got = 0;
}

int tt_star_read(int fd, tt_star_reader_t *rd, int nranks,
                 void (*handle)(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload),
                 tt_star_t *s, int from)
{
    for (;;) {
        size_t hsz = sizeof rd->hdr, want = rd->got < hsz ? hsz - rd->got : hsz + rd->hdr.len - rd->got;
        char *dst = rd->got < hsz ? (char *)&rd->hdr + rd->got : rd->payload + (rd->got - hsz);
        ssize_t n = want ? recv(fd, dst, want, MSG_DONTWAIT) : 0;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (want && n <= 0)
            return -1;
        if (s)
            atomic_fetch_add_explicit(&s->bytes_in, (uint64_t)n, memory_order_relaxed);
        rd->got += (size_t)n;
        if (rd->got == hsz && !rd->payload) {
            if (!tt_star_hdr_ok(&rd->hdr, nranks)) {
                TT_DEBUG(TT_SUB_INIT, "star: a malformed frame (type %u) from rank %d", rd->hdr.type, from);
                return -1;
            }
            rd->payload = malloc((size_t)rd->hdr.len + 1);
            if (!rd->payload)
                return -1;
        }
        if (rd->got < hsz || rd->got < hsz + rd->hdr.len)
            continue;
        rd->payload[rd->hdr.len] = '\0';
        handle(s, from, &rd->hdr, rd->payload);
        tt_star_reader_reset(rd);
    }
}

void tt_star_link_queue(tt_star_t *s, tt_star_link_t *l, const tt_star_hdr_t *h, const char *payload)
{
    (void)s;
    if (l->fd < 0)
        return;
    tt_star_frame_t *f = tt_star_frame_new(h->type, h->rank, h->status, h->seq, payload, h->len);
    if (!f) {
        TT_ERROR(TT_SUB_INIT, "star: no memory to pass a frame to rank %d", l->rank);
        return;
    }
    f->hdr.reserved = h->reserved;
    tt_star_frame_t **tail = &l->out;
    while (*tail)
        tail = &(*tail)->next;
    *tail = f;
}

void tt_star_to_kids(tt_star_t *s, const tt_star_hdr_t *h, const char *payload)
{
    for (int k = 0; k < s->nkids; k++)
        tt_star_link_queue(s, s->kids[k], h, payload);
}

void tt_star_up(tt_star_t *s, int type, tutti_status_t status, uint64_t seq, const void *p, size_t len)
{
    tt_star_frame_t *f = tt_star_frame_new(type, s->rank, status, seq, p, len);
    if (!f) {
        TT_ERROR(TT_SUB_INIT, "star: rank %d has no memory for a frame to rank 0", s->rank);
        return;
    }
    if (s->hub)
        s->roles.hub_frame(s, s->rank, &f->hdr, f->payload);
    else
        tt_star_link_queue(s, &s->up, &f->hdr, f->payload);
    free(f);
}

static void drop_queue(tt_star_link_t *l)
{
    while (l->out) {
        tt_star_frame_t *f = l->out;
        l->out = f->next;
        free(f);
    }
}

static void flush_link(tt_star_t *s, tt_star_link_t *l)
{
    while (l->fd >= 0 && l->out) {
        tt_star_frame_t *f = l->out;
        size_t total = sizeof f->hdr + f->hdr.len;
        ssize_t n = send(l->fd, (char *)&f->hdr + f->sent, total - f->sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n <= 0) { /* the reading side sees the connection close */
            drop_queue(l);
            return;
        }
        atomic_fetch_add_explicit(&s->bytes_out, (uint64_t)n, memory_order_relaxed);
        f->sent += (size_t)n;
        if (f->sent == total) {
            l->out = f->next;
            free(f);
        }
    }
}

void tt_star_flush(tt_star_t *s)
{
    flush_link(s, &s->up);
    for (int k = 0; k < s->nkids; k++)
        flush_link(s, s->kids[k]);
}

int tt_star_pollfds(tt_star_t *s, struct pollfd *fds, int cap, int64_t *wake)
{
    int n = 0;
    if (s->up.fd >= 0)
        fds[n++] = (struct pollfd){.fd = s->up.fd, .events = (short)(POLLIN | (s->up.out ? POLLOUT : 0))};
    for (int k = 0; k < s->nkids && n < cap; k++)
        fds[n++] = (struct pollfd){.fd = s->kids[k]->fd,
                                   .events = (short)(POLLIN | (s->kids[k]->out ? POLLOUT : 0))};
    for (int i = 0; i < s->ninbound && n < cap; i++) {
        fds[n++] = (struct pollfd){.fd = s->inbound[i].fd, .events = POLLIN};
        if (s->inbound[i].deadline < *wake)
            *wake = s->inbound[i].deadline;
    }
    /* With every message slot taken the listener is left alone: what comes
     * waits in its backlog (the senders have gone on) until a slot frees. */
    if (s->admit && s->ninbound < TT_STAR_INBOUND && n + TT_ADMIT_PENDING + 1 <= cap)
        n += tt_admit_pollfds(s->admit, tt_now_ms(), fds + n, wake);
    return n;
}

static int is_down(int type)
{
    return type == TT_STAR_ALL || type == TT_STAR_FAILED || type == TT_STAR_LEFT || type == TT_STAR_DONE ||
           type == TT_STAR_POLL || type == TT_STAR_REPORT || type == TT_STAR_REVOKED;
}

static void from_parent(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload)
{
    if (!is_down(h->type)) {
        TT_DEBUG(TT_SUB_INIT, "star: rank %d's parent sent a frame of type %u", s->rank, h->type);
        return;
    }
    tt_star_to_kids(s, h, payload); /* before acting on it: DONE may end this rank's thread */
    s->roles.member_frame(s, from, h, payload);
}

static void from_kid(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload)
{
    if (is_down(h->type) || h->type >= TT_STAR_JOIN) { /* the join's and messages' own */
        TT_DEBUG(TT_SUB_INIT, "star: child %d of rank %d sent a frame of type %u", from, s->rank, h->type);
        return;
    }
    if (s->hub)
        s->roles.hub_frame(s, h->rank, h, payload);
    else
        tt_star_link_queue(s, &s->up, h, payload);
}

static void link_close(tt_star_link_t *l, int close_fd)
{
    if (l->fd >= 0 && close_fd)
        close(l->fd);
    l->fd = -1;
    tt_star_reader_reset(&l->rd);
    drop_queue(l);
}

/* Child r is gone: the hub hears it (this rank is its parent, the best
 * witness), unless the job is over. */
static void report_gone(tt_star_t *s, int r)
{
    pthread_mutex_lock(&s->lock);
    int done = s->done;
    pthread_mutex_unlock(&s->lock);
    if (s->hub) {
        s->roles.hub_gone(s, r, 0);
        return;
    }
    if (done)
        return; /* the job is over: its children go as it goes */
    TT_DEBUG(TT_SUB_INIT, "star: rank %d's child %d closed its connection", s->rank, r);
    tt_star_frame_t *f = tt_star_frame_new(TT_STAR_GONE, r, 0, 0, NULL, 0);
    if (f)
        tt_star_link_queue(s, &s->up, &f->hdr, f->payload);
    free(f);
    if (!tt_grow((void **)&s->lost_kids, &s->lost_cap, s->nlost + 1, sizeof(int)))
        s->lost_kids[s->nlost++] = r;
}

static void kid_lost(tt_star_t *s, int k)
{
    tt_star_link_t *l = s->kids[k];
    int r = l->rank;
    link_close(l, 1);
    free(l);
    s->kids[k] = s->kids[--s->nkids];
    report_gone(s, r);
}

void tt_star_check_kids(tt_star_t *s)
{
    if (!s->attach_until || tt_now_ms() < s->attach_until)
        return;
    s->attach_until = 0;
    for (int k = 0; k < TT_STAR_FANOUT; k++) {
        int r = s->rank * TT_STAR_FANOUT + 1 + k;
        if (r < s->nranks && !s->kid_seen[k]) {
            TT_DEBUG(TT_SUB_INIT, "star: rank %d's child %d never attached", s->rank, r);
            report_gone(s, r);
        }
    }
}

/* Connects to rank 0's listener as an orphan: 0, or -1 (rank 0 is gone too). */
static int reattach(tt_star_t *s)
{
    int fd;
    int64_t deadline = tt_now_ms() + (s->timeout_ms < REATTACH_MS ? s->timeout_ms : REATTACH_MS);
    if (tt_sock_connect_once(&s->root_addr, deadline, &fd))
        return -1; /* refused: rank 0 is gone too */
    if (tt_hello_send(fd, s->key, s->rank, s->nranks, TT_STAR_HELLO_ORPHAN, deadline)) {
        close(fd);
        return -1;
    }
    tt_sock_tune(fd, 0);
    tt_sock_set_nonblocking(fd);
    s->up.fd = fd;
    return 0;
}

/* What this rank said up before, said again to its new parent (rank 0). */
static void say_again(tt_star_t *s, int old_parent)
{
    tt_star_frame_t *f = tt_star_frame_new(TT_STAR_GONE, old_parent, 0, 1, NULL, 0);
    if (f)
        tt_star_link_queue(s, &s->up, &f->hdr, f->payload);
    free(f);
    for (int i = 0; i < s->nlost; i++)
        if ((f = tt_star_frame_new(TT_STAR_GONE, s->lost_kids[i], 0, 0, NULL, 0)) != NULL) {
            tt_star_link_queue(s, &s->up, &f->hdr, f->payload);
            free(f);
        }
    pthread_mutex_lock(&s->lock);
    int fail = s->said_fail, leaving = s->said_leaving, revoke = s->said_revoke;
    pthread_mutex_unlock(&s->lock);
    if (fail)
        tt_star_up(s, TT_STAR_FAIL, s->fail_status, s->fail_from, s->fail_text, strlen(s->fail_text) + 1);
    if (leaving)
        tt_star_up(s, TT_STAR_LEAVING, 0, s->leave_after, NULL, 0);
    if (revoke)
        tt_star_up(s, TT_STAR_REVOKE, 0, 0, NULL, 0);
}

static void parent_lost(tt_star_t *s)
{
    int old = s->up.rank;
    link_close(&s->up, 1);
    pthread_mutex_lock(&s->lock);
    int done = s->done, stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);
    if (done)
        return;
    if (old != 0 && !stopping && reattach(s) == 0) {
        TT_DEBUG(TT_SUB_INIT, "star: rank %d lost its parent %d and attached to rank 0", s->rank, old);
        s->up.rank = 0;
        say_again(s, old);
        return;
    }
    s->roles.member_lost(s);
}

static void add_kid(tt_star_t *s, int fd, int rank, int orphan)
{
    tt_star_link_t *l = calloc(1, sizeof *l);
    if (!l || tt_grow((void **)&s->kids, &s->kids_cap, s->nkids + 1, sizeof *s->kids)) {
        TT_ERROR(TT_SUB_INIT, "star: rank %d has no memory for its child %d", s->rank, rank);
        free(l);
        close(fd);
        return;
    }
    tt_sock_tune(fd, 0);
    l->fd = fd;
    l->rank = rank;
    s->kids[s->nkids++] = l;
    if (tt_star_parent(rank) == s->rank)
        s->kid_seen[rank - s->rank * TT_STAR_FANOUT - 1] = 1;
    if (orphan)
        s->roles.hub_adopt(s, l);
}

/* A connection admitted on this rank's listener (its hello had the key). */
static void admitted(tt_star_t *s, int fd, const tt_hello_t *h)
{
    int r = h->rank, known = 0;
    for (int k = 0; k < s->nkids; k++)
        known |= s->kids[k]->rank == r;
    int ok = h->nranks == s->nranks && r >= 0 && r < s->nranks && r != s->rank;
    if (ok && h->channel == TT_STAR_HELLO_CHILD && tt_star_parent(r) == s->rank && !known) {
        add_kid(s, fd, r, 0);
    } else if (ok && h->channel == TT_STAR_HELLO_ORPHAN && s->hub && !known) {
        add_kid(s, fd, r, 1);
    } else if (ok && h->channel == TT_STAR_HELLO_MSG && s->ninbound < TT_STAR_INBOUND) {
        s->inbound[s->ninbound++] =
            (tt_star_inbound_t){.fd = fd, .from = r, .deadline = tt_now_ms() + s->admit->hello_ms};
    } else {
        TT_WARN(TT_SUB_INIT, "star: rank %d refused a connection from rank %d (channel %d)%s", s->rank, r,
                h->channel, ok && h->channel == TT_STAR_HELLO_MSG ? ": too many messages at once" : "");
        close(fd);
    }
}

static void serve_inbound(tt_star_t *s)
{
    int64_t now = tt_now_ms();
    for (int i = 0; i < s->ninbound;) {
        tt_star_inbound_t *in = &s->inbound[i];
        int rc = tt_star_read(in->fd, &in->rd, s->nranks, s->roles.mail_in, s, in->from);
        if (rc == 0 && now < in->deadline) {
            i++;
            continue;
        }
        /* The sender closes after its one message; one that does not, in
         * time, is dropped with what it sent. */
        close(in->fd);
        tt_star_reader_reset(&in->rd);
        s->inbound[i] = s->inbound[--s->ninbound];
    }
}

void tt_star_serve(tt_star_t *s, const struct pollfd *fds, int n)
{
    (void)fds;
    (void)n;
    /* A read that finds nothing costs one system call; the links are few. */
    if (s->up.fd >= 0 && tt_star_read(s->up.fd, &s->up.rd, s->nranks, from_parent, s, s->up.rank) < 0)
        parent_lost(s);
    for (int k = 0; k < s->nkids;)
        if (tt_star_read(s->kids[k]->fd, &s->kids[k]->rd, s->nranks, from_kid, s, s->kids[k]->rank) < 0)
            kid_lost(s, k);
        else
            k++;
    serve_inbound(s);
    int fd;
    tt_hello_t h;
    for (int listen_ready = 1;
         s->admit && s->ninbound < TT_STAR_INBOUND && tt_admit_try(s->admit, listen_ready, &fd, &h);
         listen_ready = 0)
        admitted(s, fd, &h);
}

void tt_star_links_close(tt_star_t *s)
{
    if (s->up.fd >= 0)
        close(s->up.fd);
    for (int k = 0; k < s->nkids; k++)
        if (s->kids[k]->fd >= 0)
            close(s->kids[k]->fd);
    for (int i = 0; i < s->ninbound; i++)
        close(s->inbound[i].fd);
    if (s->admit)
        tt_admit_close(s->admit);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
}

void tt_star_links_free(tt_star_t *s)
{
    tt_star_links_close(s);
    s->up.fd = s->listen_fd = -1;
    link_close(&s->up, 0);
    for (int k = 0; k < s->nkids; k++) {
        s->kids[k]->fd = -1;
        link_close(s->kids[k], 0);
        free(s->kids[k]);
    }
    free(s->kids);
    s->kids = NULL;
    s->nkids = 0;
    for (int i = 0; i < s->ninbound; i++)
        tt_star_reader_reset(&s->inbound[i].rd);
    s->ninbound = 0;
    free(s->admit);
    s->admit = NULL;
    free(s->lost_kids);
    s->lost_kids = NULL;
}
