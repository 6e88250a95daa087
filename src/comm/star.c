/* SPDX-License-Identifier: MIT */
/*
 * The star's thread and its member side. The rank's main thread never
 * writes to the tree itself: it queues its frames and kicks the thread,
 * which writes them (rank 0's own go straight to its hub), so a main
 * thread never waits on a socket and rank 0 never writes to itself. The
 * news the frames carry is kept for the main thread, which waits on a
 * condition variable for exchanges, destroy's barrier and the who-is-stuck
 * report.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/wake.h"

#define STOP_FLUSH_MS 1000    /* what a stopping thread still has to send goes out within this */
#define ATTACH_GRACE_MS 30000 /* the longest a welcomed rank may take to attach to its parent */
#define STAR_HELLO_MS 10000   /* ... and a connection to this rank's listener to say who it is */

/* News for the rank's calls: the flag they read, and a wake-up for one
 * that sleeps in the engine waiting for a peer that may never come. */
static void raise_news(tt_star_t *s)
{
    atomic_store_explicit(&s->news, 1, memory_order_relaxed);
    tt_wake_ring(atomic_load_explicit(&s->wake_fd, memory_order_relaxed));
}

/* Keeps the first rank that died, the one that gave up in the earliest
 * collective (its news ends the most calls), and every rank that died
 * (for a shrink). Under the lock. */
static void note_failed(tt_star_t *s, int rank, tutti_status_t st, uint64_t from, const char *text, int died)
{
    if (died)
        s->dead[rank] = TT_STAR_RANK_DIED;
    if (died && s->n.died_rank < 0) {
        s->n.died_rank = rank;
        raise_news(s);
    }
    if (!died && (s->n.failed_rank < 0 || from < s->n.failed_from)) {
        s->n.failed_rank = rank;
        s->n.failed_status = st;
        s->n.failed_from = from;
        snprintf(s->n.failed_text, sizeof s->n.failed_text, "%s", text);
        raise_news(s);
    }
}

static void answer_poll(tt_star_t *s, uint64_t seq)
{
    tt_stuck_state_t st = {.seq = UINT64_MAX, .peer = -1, .kind = TT_STUCK_NO_STEP};
    pthread_mutex_lock(&s->lock);
    tt_star_describe_fn describe = s->describe;
    void *arg = s->describe_arg;
    pthread_mutex_unlock(&s->lock);
    if (describe)
        describe(arg, &st);
    tt_star_up(s, TT_STAR_STATE, 0, seq, &st, sizeof st);
}

static void keep_bcast(tt_star_t *s, const tt_star_hdr_t *h, const char *payload)
{
    tt_star_frame_t *f = tt_star_frame_new(h->type, h->rank, h->status, h->seq, payload, h->len);
    if (!f) {
        TT_ERROR(TT_SUB_INIT, "star: rank %d has no memory for exchange %llu", s->rank,
                 (unsigned long long)h->seq);
        return;
    }
    *s->bcast_tail = f;
    s->bcast_tail = &f->next;
}

void tt_star_member_frame(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload)
{
    (void)from;
    if (h->type == TT_STAR_POLL) {
        answer_poll(s, h->seq);
        return;
    }
    pthread_mutex_lock(&s->lock);
    switch (h->type) {
    case TT_STAR_ALL: keep_bcast(s, h, payload); break;
    case TT_STAR_FAILED:
        /* Of itself it knows; a notice for the ranks in destroy is theirs. */
        if (h->rank == s->rank || ((h->reserved & TT_STAR_FAILED_FOR_LEAVERS) && !s->said_leaving))
            break;
        if (h->reserved & TT_STAR_FAILED_ENDED) {
            s->dead[h->rank] = TT_STAR_RANK_LEFT;
            break;
        }
        note_failed(s, h->rank, (tutti_status_t)h->status, h->seq, payload,
                    h->reserved & TT_STAR_FAILED_DIED);
        s->hub_failed |= h->rank == 0;
        break;
    case TT_STAR_LEFT:
        if (s->n.left_rank < 0) {
            s->n.left_rank = h->rank;
            s->n.left_after = h->seq;
            raise_news(s);
        }
        break;
    case TT_STAR_DONE:
        s->done = 1;
        s->done_status = (tutti_status_t)h->status;
        snprintf(s->done_text, sizeof s->done_text, "%s", payload);
        break;
    case TT_STAR_REPORT:
        s->n.have_report = 1;
        snprintf(s->n.report, sizeof s->n.report, "%s", payload);
        raise_news(s);
        break;
    case TT_STAR_REVOKED:
        if (s->n.revoked_rank < 0) {
            s->n.revoked_rank = h->rank;
            if (s->on_revoke)
                s->on_revoke(s->on_revoke_arg, h->rank);
            raise_news(s);
        }
        break;
    default: break;
    }
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

void tt_star_member_lost(tt_star_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->hub_gone = 1;
    /* Rank 0 is gone: it died, or it said why and left (maybe for a
     * successor of the communicator, whose listeners it keeps). */
    s->dead[0] = s->done ? 0 : s->hub_failed ? TT_STAR_RANK_LEFT : TT_STAR_RANK_DIED;
    if (!s->done && !s->hub_failed)
        note_failed(s, 0, TUTTI_ERR_PEER_FAILED, 0, "", 1);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* The main thread's frames: rank 0's to its hub (or, a broadcast, down);
 * the others' up. Returns whether the thread is to stop. */
static int take_queued(tt_star_t *s)
{
    uint64_t v;
    if (read(s->kick_fd, &v, sizeof v) < 0 && errno != EAGAIN)
        TT_DEBUG(TT_SUB_INIT, "star: reading the kick failed: %s", strerror(errno));
    pthread_mutex_lock(&s->lock);
    tt_star_frame_t *f = s->queued;
    s->queued = NULL;
    s->queued_tail = &s->queued;
    int stop = s->stopping;
    pthread_mutex_unlock(&s->lock);
    while (f) {
        tt_star_frame_t *next = f->next;
        s->word_taken |= f->hdr.type == TT_STAR_ALL; /* rank 0's word: star_wait.c's word_out */
        if (f->hdr.type == TT_STAR_ALL)
            tt_star_to_kids(s, &f->hdr, f->payload);
        else if (s->hub)
            tt_star_hub_frame(s, s->rank, &f->hdr, f->payload);
        else
            tt_star_link_queue(s, &s->up, &f->hdr, f->payload);
        free(f);
        f = next;
    }
    return stop;
}

static int pending_output(const tt_star_t *s)
{
    int any = s->up.fd >= 0 && s->up.out;
    for (int k = 0; k < s->nkids && !any; k++)
        any = s->kids[k]->out != NULL;
    return any;
}

/* A turn round the connections begins: what came before it, it reads. */
static uint64_t turn_begin(tt_star_t *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t turn = ++s->turns_begun;
    pthread_mutex_unlock(&s->lock);
    return turn;
}

/* ... and ended: whoever waits for a turn or for rank 0's word to be out hears of it. */
static void turn_end(tt_star_t *s, uint64_t turn)
{
    int written = s->word_taken && !pending_output(s);
    pthread_mutex_lock(&s->lock);
    s->turns_done = turn;
    if (written) {
        s->word_taken = 0;
        s->words_out++;
        s->word_news = s->n.died_rank >= 0 || s->n.failed_rank >= 0;
    }
    if (s->turn_wanted || written)
        pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* A stopping rank still relays what its children said last and sends what
 * it queued (rank 0 tells the others it gave up), for a moment. */
static void drain(tt_star_t *s, struct pollfd *pfds, int cap)
{
    tt_star_serve(s, pfds, 0);
    for (int64_t until = tt_now_ms() + STOP_FLUSH_MS; pending_output(s) && tt_now_ms() < until;) {
        tt_star_flush(s);
        int64_t wake = until;
        int n = tt_star_pollfds(s, pfds, cap, &wake);
        poll(pfds, (nfds_t)n, 10);
    }
}

static void *star_thread(void *arg)
{
    tt_star_t *s = arg;
    struct pollfd *pfds = NULL;
    int cap = 0;
    for (;;) {
        int need = 3 + s->nkids + TT_STAR_INBOUND + TT_ADMIT_PENDING;
        if (need > cap) {
            struct pollfd *more = realloc(pfds, (size_t)need * sizeof *pfds);
            if (!more) {
                TT_ERROR(TT_SUB_INIT, "star: rank %d has no memory to poll its connections", s->rank);
                break;
            }
            pfds = more;
            cap = need;
        }
        int64_t now = tt_now_ms(), wake = s->hub ? tt_star_hub_wake(s) : -1;
        if (wake < 0)
            wake = INT64_MAX;
        if (s->attach_until && s->attach_until < wake)
            wake = s->attach_until;
        pfds[0] = (struct pollfd){.fd = s->kick_fd, .events = POLLIN};
        int n = 1 + tt_star_pollfds(s, pfds + 1, cap - 1, &wake);
        int timeout = wake == INT64_MAX ? -1
                      : wake > now      ? (int)(wake - now < 60000 ? wake - now : 60000)
                                        : 0;
        if (poll(pfds, (nfds_t)n, timeout) < 0 && errno != EINTR) {
            TT_ERROR(TT_SUB_INIT, "star: rank %d: poll failed: %s", s->rank, strerror(errno));
            break;
        }
        if ((pfds[0].revents & POLLIN) && take_queued(s)) {
            drain(s, pfds, cap);
            break;
        }
        uint64_t turn = turn_begin(s);
        tt_star_serve(s, pfds + 1, n - 1);
        tt_star_check_kids(s);
        if (s->hub)
            tt_star_hub_tick(s);
        tt_star_flush(s);
        turn_end(s, turn);
    }
    free(pfds);
    return NULL;
}

static void release(tt_star_t *s);

const tt_star_roles_t tt_star_roles = {.member_frame = tt_star_member_frame,
                                       .member_lost = tt_star_member_lost,
                                       .mail_in = tt_star_mail_in,
                                       .hub_frame = tt_star_hub_frame,
                                       .hub_gone = tt_star_hub_gone,
                                       .hub_adopt = tt_star_hub_adopt};

tt_star_t *tt_star_start(const tt_star_join_t *j)
{
    tt_star_t *s = calloc(1, sizeof *s);
    if (!s) {
        TT_ERROR(TT_SUB_INIT, "rank %d: no memory for the bootstrap's service", j->rank);
        return NULL;
    }
    s->roles = tt_star_roles;
    s->rank = j->rank;
    s->nranks = j->nranks;
    s->timeout_ms = j->timeout_ms;
    s->wait_ms = j->timeout_ms / 2 < 1000 ? (int)(j->timeout_ms / 2) : 1000;
    memcpy(s->key, j->key, TT_KEY_BYTES);
    s->n.died_rank = s->n.failed_rank = s->n.left_rank = s->n.revoked_rank = -1;
    s->wake_fd = -1;
    s->queued_tail = &s->queued;
    s->bcast_tail = &s->bcasts;
    s->mail_tail = &s->mailbox;
    s->root_addr = j->root;
    s->listen_fd = j->listen_fd;
    s->up = (tt_star_link_t){.fd = j->up_fd, .rank = tt_star_parent(j->rank)};
    /* Rank 0 welcomes every rank within moments of its parent, and each
     * attaches at once: a child that has not by then died meanwhile (one
     * that attached and then died is seen closing). */
    s->attach_until =
        tt_now_ms() + (j->timeout_ms / 2 < ATTACH_GRACE_MS ? j->timeout_ms / 2 : ATTACH_GRACE_MS);
    atomic_store(&s->bytes_out, j->bytes_out);
    atomic_store(&s->bytes_in, j->bytes_in);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->mail_lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->kick_fd < 0 || !(s->dead = calloc((size_t)s->nranks, 1)) ||
        !(s->admit = tt_admit_new(s->listen_fd, s->key, TT_SUB_INIT, "the bootstrap", NULL, NULL)) ||
        (s->rank == 0 && !(s->hub = tt_star_hub_new(s->nranks))))
        goto fail;
    /* Its children and peers are ranks of the job, which a loaded host
     * may keep off a CPU for seconds: they get longer than a stranger. */
    s->admit->hello_ms = STAR_HELLO_MS;
    if (s->up.fd >= 0) {
        /* A frame goes out as a header, then its payload: Nagle would hold
         * the payload until the peer's delayed ACK (40 ms per exchange). */
        tt_sock_tune(s->up.fd, 0);
        tt_sock_set_nonblocking(s->up.fd);
    }
    if (pthread_create(&s->thread, NULL, star_thread, s))
        goto fail;
    s->running = 1;
    return s; /* it owns listen_fd and up_fd from here */
fail:
    TT_ERROR(TT_SUB_INIT, "rank %d: could not start the bootstrap's service thread: %s", j->rank,
             strerror(errno));
    s->up.fd = s->listen_fd = -1; /* still the bootstrap's */
    release(s);
    return NULL;
}

void tt_star_set_view(tt_star_t *s, const void *endpoints, tt_star_describe_fn describe, void *arg)
{
    pthread_mutex_lock(&s->lock);
    s->endpoints = endpoints;
    s->describe = describe;
    s->describe_arg = arg;
    pthread_mutex_unlock(&s->lock);
}

void tt_star_set_wake(tt_star_t *s, int fd)
{
    atomic_store_explicit(&s->wake_fd, fd, memory_order_relaxed);
}

void tt_star_on_revoke(tt_star_t *s, void (*fn)(void *arg, int rank), void *arg)
{
    pthread_mutex_lock(&s->lock);
    s->on_revoke = fn;
    s->on_revoke_arg = arg;
    /* A revocation that came during set-up, before anyone listened for it,
     * is delivered now: the revoker may be done with the communicator. */
    int by = s->n.revoked_rank;
    if (fn && by >= 0 && by != s->rank)
        fn(arg, by);
    pthread_mutex_unlock(&s->lock);
}

void tt_star_bytes(tt_star_t *s, uint64_t *out, uint64_t *in)
{
    *out = atomic_load_explicit(&s->bytes_out, memory_order_relaxed);
    *in = atomic_load_explicit(&s->bytes_in, memory_order_relaxed);
}

/* Closes the star's descriptors and frees what its thread used. */
static void release(tt_star_t *s)
{
    tt_star_links_free(s);
    if (s->kick_fd >= 0)
        close(s->kick_fd);
    while (s->queued) {
        tt_star_frame_t *f = s->queued;
        s->queued = f->next;
        free(f);
    }
    while (s->bcasts) {
        tt_star_frame_t *f = s->bcasts;
        s->bcasts = f->next;
        free(f);
    }
    tt_star_mail_free(s);
    tt_star_hub_free(s->hub);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->mail_lock);
    pthread_cond_destroy(&s->cond);
    free(s->dead);
    free(s);
}

void tt_star_stop(tt_star_t *s)
{
    if (!s)
        return;
    if (s->running) {
        pthread_mutex_lock(&s->lock);
        s->stopping = 1;
        pthread_mutex_unlock(&s->lock);
        uint64_t one = 1;
        if (write(s->kick_fd, &one, sizeof one) != sizeof one)
            TT_DEBUG(TT_SUB_INIT, "star: could not wake the thread: %s", strerror(errno));
        pthread_join(s->thread, NULL);
    }
    release(s);
}

void tt_star_forget(tt_star_t *s)
{
    if (!s)
        return;
    tt_star_links_close(s);
    if (s->kick_fd >= 0)
        close(s->kick_fd);
}
