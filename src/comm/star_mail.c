/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point messages between any two ranks, outside the tree: the
 * sender connects to the receiver's listener, presents its hello and one
 * frame, and closes; the receiver's star thread reads it whatever its main
 * thread does, offers it to the handler (the pairs' connection requests
 * are answered there) or keeps it for tt_star_take_msg. A rank thus
 * handles only the messages of the peers it deals with.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/wake.h"

tutti_status_t tt_star_send_msg(tt_star_t *s, const tt_sockaddr_t *to, int peer, uint64_t tag,
                                const void *payload, size_t len, int64_t deadline_ms)
{
    return tt_star_send_msg_watched(s, to, peer, tag, payload, len, deadline_ms, NULL, NULL);
}

typedef struct {
    tutti_status_t (*fn)(void *arg);
    void *arg;
    tutti_status_t said;
} watch_t;

static tutti_status_t watched(void *arg)
{
    watch_t *w = arg;
    return w->said = w->fn(w->arg);
}

tutti_status_t tt_star_send_msg_watched(tt_star_t *s, const tt_sockaddr_t *to, int peer, uint64_t tag,
                                        const void *payload, size_t len, int64_t deadline_ms,
                                        tutti_status_t (*watch)(void *arg), void *arg)
{
    int fd;
    watch_t w = {watch, arg, TUTTI_SUCCESS};
    tutti_status_t st = tt_sock_connect_watched(to, deadline_ms, watch ? watched : NULL, &w, &fd);
    if (w.said)
        return w.said; /* the caller's news (a revocation, a peer gone), which its watch recorded */
    if (!st) {
        st = tt_hello_send(fd, s->key, s->rank, s->nranks, TT_STAR_HELLO_MSG, deadline_ms);
        if (!st)
            st = tt_star_send(fd, TT_STAR_MSG, s->rank, 0, tag, payload, len, deadline_ms - tt_now_ms());
        close(fd);
    }
    if (st) {
        TT_ERROR(TT_SUB_INIT, "rank %d could not send a message to rank %d: %s", s->rank, peer,
                 tutti_strerror(st));
        return st;
    }
    atomic_fetch_add_explicit(&s->bytes_out, sizeof(tt_hello_t) + sizeof(tt_star_hdr_t) + len,
                              memory_order_relaxed);
    return TUTTI_SUCCESS;
}

void tt_star_on_mail(tt_star_t *s, tt_star_mail_fn fn, void *arg)
{
    pthread_mutex_lock(&s->mail_lock);
    s->on_mail = fn;
    s->on_mail_arg = arg;
    pthread_mutex_unlock(&s->mail_lock);
}

void tt_star_mail_kick(tt_star_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->mail_seen++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    tt_wake_ring(atomic_load_explicit(&s->wake_fd, memory_order_relaxed));
}

void tt_star_mail_in(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload)
{
    if (h->type != TT_STAR_MSG) {
        TT_DEBUG(TT_SUB_INIT, "star: rank %d sent a frame of type %u as a message", from, h->type);
        return;
    }
    /* The handler runs without the star's lock (it sends messages), and
     * under mail_lock, so that whoever unsets it knows it is not running. */
    pthread_mutex_lock(&s->mail_lock);
    int taken = s->on_mail && s->on_mail(s->on_mail_arg, from, h->seq, payload, h->len);
    pthread_mutex_unlock(&s->mail_lock);
    if (taken)
        return;
    tt_star_mail_t *m = malloc(sizeof *m + h->len);
    if (!m) {
        TT_ERROR(TT_SUB_INIT, "star: rank %d has no memory for a message from rank %d", s->rank, from);
        return;
    }
    *m = (tt_star_mail_t){.from = from, .tag = h->seq, .len = h->len};
    memcpy(m->payload, payload, h->len);
    pthread_mutex_lock(&s->lock);
    *s->mail_tail = m;
    s->mail_tail = &m->next;
    pthread_mutex_unlock(&s->lock);
    tt_star_mail_kick(s);
}

int tt_star_take_msg(tt_star_t *s, int from, uint64_t tag, void *buf, size_t cap, size_t *len)
{
    pthread_mutex_lock(&s->lock);
    tt_star_mail_t **p = &s->mailbox;
    while (*p && ((*p)->from != from || (*p)->tag != tag))
        p = &(*p)->next;
    tt_star_mail_t *m = *p;
    if (m) {
        if (!(*p = m->next))
            s->mail_tail = p;
    }
    pthread_mutex_unlock(&s->lock);
    if (!m)
        return 0;
    memcpy(buf, m->payload, m->len < cap ? m->len : cap);
    *len = m->len;
    free(m);
    return 1;
}

void tt_star_wait_mail(tt_star_t *s, int64_t deadline_ms)
{
    pthread_mutex_lock(&s->lock);
    uint64_t seen = s->mail_seen;
    while (s->mail_seen == seen && !atomic_load_explicit(&s->news, memory_order_relaxed) && !s->hub_gone) {
        int64_t left = deadline_ms - tt_now_ms();
        if (left <= 0)
            break;
        struct timespec ts = tt_realtime_in_ns(left * 1000000);
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
}

void tt_star_mail_free(tt_star_t *s)
{
    while (s->mailbox) {
        tt_star_mail_t *m = s->mailbox;
        s->mailbox = m->next;
        free(m);
    }
}
