/* SPDX-License-Identifier: MIT */
/*
 * The star's thread and its member side: framed messages on the connection
 * to rank 0, read as they come (never blocking on a slow sender), the news
 * they carry kept for the rank's main thread, which waits on a condition
 * variable for exchanges, destroy's barrier and the who-is-stuck report.
 * Rank 0's thread also runs the hub (star_hub.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/sock.h"
#include "core/wake.h"

int tt_star_hdr_ok(const tt_star_hdr_t *h, int nranks)
{
    return h->magic == TT_STAR_MAGIC && h->type >= TT_STAR_DATA && h->type < TT_STAR_TYPES && h->rank >= 0 &&
           h->rank < nranks && h->len <= TT_STAR_MAX_PAYLOAD;
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

/* News for the rank's calls: the flag they read, and a wake-up for one
 * that sleeps in the engine waiting for a peer that may never come. */
static void raise_news(tt_star_t *s)
{
    atomic_store_explicit(&s->news, 1, memory_order_relaxed);
    tt_wake_ring(atomic_load_explicit(&s->wake_fd, memory_order_relaxed));
}

/* Keeps the first rank that died and the first that gave up, and every
 * rank that died (for a shrink). Under the lock. */
static void note_failed(tt_star_t *s, int rank, tutti_status_t st, const char *text, int died)
{
    if (died)
        s->dead[rank] = 1;
    if (died && s->n.died_rank < 0) {
        s->n.died_rank = rank;
        raise_news(s);
    }
    if (!died && s->n.failed_rank < 0) {
        s->n.failed_rank = rank;
        s->n.failed_status = st;
        snprintf(s->n.failed_text, sizeof s->n.failed_text, "%s", text);
        raise_news(s);
    }
}

void tt_star_member_frame(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload)
{
    (void)from;
    if (h->type == TT_STAR_POLL) {
        tt_stuck_state_t st = {.seq = UINT64_MAX, .peer = -1, .kind = TT_STUCK_NO_STEP};
        pthread_mutex_lock(&s->lock);
        tt_star_describe_fn describe = s->describe;
        void *arg = s->describe_arg;
        pthread_mutex_unlock(&s->lock);
        if (describe)
            describe(arg, &st);
        pthread_mutex_lock(&s->send_lock);
        tt_star_send(s->mfd, TT_STAR_STATE, s->rank, 0, h->seq, &st, sizeof st, s->timeout_ms);
        pthread_mutex_unlock(&s->send_lock);
        return;
    }
    pthread_mutex_lock(&s->lock);
    switch (h->type) {
    case TT_STAR_ALL:
        if (h->seq == s->xround && s->all_buf && h->len == s->all_size * (size_t)s->nranks) {
            memcpy(s->all_buf, payload, h->len);
            s->all_round = h->seq;
        }
        break;
    case TT_STAR_FAILED:
        if (h->seq == 2) { /* a rank that gave up has ended */
            s->dead[h->rank] = 1;
            break;
        }
        note_failed(s, h->rank, (tutti_status_t)h->status, payload, h->seq == 1);
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

static void member_lost(tt_star_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->hub_gone = 1;
    s->dead[0] = !s->done; /* rank 0 is gone, having said why or not */
    if (!s->done && !s->hub_failed)
        note_failed(s, 0, TUTTI_ERR_PEER_FAILED, "", 1);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void *star_thread(void *arg)
{
    tt_star_t *s = arg;
    int n = s->nranks, mfd_open = 1;
    struct pollfd *pfds = calloc((size_t)n + 2, sizeof *pfds);
    if (!pfds)
        return NULL;
    for (;;) {
        int np = 0;
        pfds[np++] = (struct pollfd){.fd = s->stop_pipe[0], .events = POLLIN};
        pfds[np++] = (struct pollfd){.fd = mfd_open ? s->mfd : -1, .events = POLLIN};
        for (int r = 0; s->hub && r < n; r++)
            pfds[np++] = (struct pollfd){.fd = s->hub->gone[r] ? -1 : s->hub->fds[r], .events = POLLIN};
        int wait = -1;
        if (s->hub && s->hub->q_active) {
            int64_t left = s->hub->q_deadline - tt_now_ms();
            wait = left > 0 ? (int)left : 0;
        }
        if (poll(pfds, (nfds_t)np, wait) < 0 && errno != EINTR)
            break;
        if (pfds[0].revents) {
            /* Relay what rank 0 said last (it gave up, say) before going. */
            for (int r = 0; s->hub && r < n; r++)
                if (!s->hub->gone[r] &&
                    tt_star_read(s->hub->fds[r], &s->hub->rd[r], n, tt_star_hub_frame, s, r) < 0)
                    tt_star_hub_gone(s, r);
            break;
        }
        if (mfd_open && pfds[1].revents && tt_star_read(s->mfd, &s->mrd, n, tt_star_member_frame, s, 0) < 0) {
            mfd_open = 0;
            member_lost(s);
        }
        for (int r = 0; s->hub && r < n; r++)
            if (pfds[2 + r].fd >= 0 && pfds[2 + r].revents &&
                tt_star_read(s->hub->fds[r], &s->hub->rd[r], n, tt_star_hub_frame, s, r) < 0)
                tt_star_hub_gone(s, r);
        if (s->hub)
            tt_star_hub_tick(s);
    }
    free(pfds);
    return NULL;
}

static void release(tt_star_t *s, int everything);

tt_star_t *tt_star_start(int rank, int nranks, int fd, int *rank_fds, int64_t timeout_ms)
{
    tt_star_t *s = calloc(1, sizeof *s);
    if (!s) {
        TT_ERROR(TT_SUB_INIT, "rank %d: no memory for the bootstrap's service", rank);
        return NULL;
    }
    s->rank = rank;
    s->nranks = nranks;
    s->timeout_ms = timeout_ms;
    s->wait_ms = timeout_ms / 2 < 1000 ? (int)(timeout_ms / 2) : 1000;
    s->n.died_rank = s->n.failed_rank = s->n.left_rank = s->n.revoked_rank = -1;
    s->mfd = -1;
    s->wake_fd = -1;
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->send_lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    int sp[2];
    if (!(s->dead = calloc((size_t)nranks, 1)) || pipe2(s->stop_pipe, O_CLOEXEC) ||
        (rank == 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp)))
        goto fail;
    s->mfd = rank == 0 ? sp[0] : fd;
    /* A frame goes out as a header, then its payload: Nagle would hold the
     * payload until the peer's delayed ACK (40 ms per exchange on Linux). */
    if (rank != 0)
        tt_sock_tune(fd, 0);
    for (int r = 1; rank == 0 && r < nranks; r++)
        tt_sock_tune(rank_fds[r], 0);
    if (rank == 0 && !(s->hub = tt_star_hub_new(nranks, sp[1], rank_fds))) {
        close(sp[1]);
        goto fail;
    }
    if (pthread_create(&s->thread, NULL, star_thread, s))
        goto fail;
    s->running = 1;
    return s; /* it owns fd and rank_fds[1..] from here */
fail:
    TT_ERROR(TT_SUB_INIT, "rank %d: could not start the bootstrap's service thread: %s", rank,
             strerror(errno));
    if (rank != 0)
        s->mfd = -1; /* still the bootstrap's */
    if (s->hub)
        tt_star_hub_free(s->hub, 0);
    s->hub = NULL;
    release(s, 1);
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

/* Waits under the lock until done(s) or the deadline: 0 when done. */
static int wait_until(tt_star_t *s, int (*done)(const tt_star_t *s, const void *arg), const void *arg,
                      int64_t deadline_ms)
{
    while (!done(s, arg)) {
        int64_t left = deadline_ms - tt_now_ms();
        if (left <= 0)
            return -1;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    return 0;
}

static tutti_status_t send_up(tt_star_t *s, int type, tutti_status_t status, uint64_t seq, const void *p,
                              size_t len)
{
    pthread_mutex_lock(&s->send_lock);
    tutti_status_t st = tt_star_send(s->mfd, type, s->rank, status, seq, p, len, s->timeout_ms);
    pthread_mutex_unlock(&s->send_lock);
    return st;
}

/* Once every rank is past destroy's barrier (done), a rank that left is no
 * news: the transports' teardown may still exchange (cuda_ipc frees its
 * window only after every peer closed it). */
static int exchange_over(const tt_star_t *s, const void *arg)
{
    return s->all_round == *(const uint64_t *)arg || s->n.died_rank >= 0 || s->n.failed_rank >= 0 ||
           (s->n.left_rank >= 0 && !s->done);
}

/* Why an exchange or destroy's barrier stopped early: logged once. */
static tutti_status_t stopped_by_news(tt_star_t *s, const char *during)
{
    if (s->n.died_rank >= 0) {
        TT_ERROR(TT_SUB_INIT, "%s: rank %d died or lost its connection", during, s->n.died_rank);
        return TUTTI_ERR_PEER_FAILED;
    }
    if (s->n.failed_rank >= 0) {
        tutti_status_t st =
            s->n.failed_status == TUTTI_ERR_PEER_FAILED || s->n.failed_status == TUTTI_ERR_ABORTED
                ? TUTTI_ERR_PEER_FAILED
                : s->n.failed_status;
        TT_ERROR(TT_SUB_INIT, "%s: rank %d gave up (%s): %s", during, s->n.failed_rank,
                 tutti_status_name(s->n.failed_status), s->n.failed_text);
        return st;
    }
    TT_ERROR(TT_SUB_INIT, "%s: rank %d called tutti_comm_destroy meanwhile", during, s->n.left_rank);
    return TUTTI_ERR_MISMATCH;
}

tutti_status_t tt_star_allgather(tt_star_t *s, const void *mine, void *all, size_t size)
{
    pthread_mutex_lock(&s->lock);
    uint64_t round = ++s->xround;
    s->all_buf = all;
    s->all_size = size;
    pthread_mutex_unlock(&s->lock);
    tutti_status_t st = send_up(s, TT_STAR_DATA, 0, round, mine, size);
    pthread_mutex_lock(&s->lock);
    /* A little past the timeout: when a rank never joined, rank 0 says which first. */
    if (st) {
        TT_ERROR(TT_SUB_INIT, "set-up exchange: rank 0 is unreachable: %s", tutti_strerror(st));
    } else if (wait_until(s, exchange_over, &round, tt_now_ms() + s->timeout_ms + s->wait_ms)) {
        st = TUTTI_ERR_TIMEOUT;
        TT_ERROR(TT_SUB_INIT, "set-up exchange: not every rank took part within %lld ms (TUTTI_TIMEOUT)",
                 (long long)s->timeout_ms);
    } else if (s->all_round != round) {
        st = stopped_by_news(s, "set-up exchange");
    }
    s->all_buf = NULL;
    pthread_mutex_unlock(&s->lock);
    return st;
}

static int leave_over(const tt_star_t *s, const void *arg)
{
    (void)arg;
    return s->done || s->n.failed_rank >= 0 || s->n.died_rank >= 0;
}

tutti_status_t tt_star_leave(tt_star_t *s, uint64_t ncalls)
{
    tutti_status_t st = send_up(s, TT_STAR_LEAVING, 0, ncalls, NULL, 0);
    pthread_mutex_lock(&s->lock);
    if (!st && wait_until(s, leave_over, NULL, tt_now_ms() + s->timeout_ms)) {
        st = TUTTI_ERR_TIMEOUT;
        TT_ERROR(TT_SUB_INIT, "tutti_comm_destroy: not every rank called it within %lld ms (TUTTI_TIMEOUT)",
                 (long long)s->timeout_ms);
    } else if (!st && s->done && s->done_status) {
        st = s->done_status;
        TT_ERROR(TT_SUB_INIT, "tutti_comm_destroy: %s", s->done_text);
    } else if (!st && !s->done) {
        st = stopped_by_news(s, "tutti_comm_destroy");
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

void tt_star_fail(tt_star_t *s, tutti_status_t status, const char *why)
{
    if (s)
        send_up(s, TT_STAR_FAIL, status, 0, why, strlen(why) + 1);
}

static int report_in(const tt_star_t *s, const void *arg)
{
    (void)arg;
    return s->n.have_report || s->hub_gone;
}

void tt_star_who_is_stuck(tt_star_t *s, const tt_stuck_state_t *mine, char *out, size_t len)
{
    pthread_mutex_lock(&s->lock);
    int asked = s->n.have_report || send_up(s, TT_STAR_QUERY, 0, 0, NULL, 0) == TUTTI_SUCCESS;
    if (asked)
        wait_until(s, report_in, NULL, tt_now_ms() + s->wait_ms + 1000);
    if (s->n.have_report) {
        snprintf(out, len, "%s", s->n.report);
    } else {
        /* Only this rank's view: the hub is rank 0 and it did not answer. */
        tt_stuck_state_t states[2] = {*mine, {0}};
        unsigned char answered[2] = {1, 0};
        char view[TT_STAR_TEXT];
        tt_stuck_compile(1, states, answered, 0, s->wait_ms, NULL, NULL, view, sizeof view);
        snprintf(out, len, "no report: rank 0, which gathers it, did not answer within %d ms; this rank: %s",
                 s->wait_ms + 1000, view);
    }
    pthread_mutex_unlock(&s->lock);
}

void tt_star_revoke(tt_star_t *s)
{
    pthread_mutex_lock(&s->lock);
    int first = s->n.revoked_rank < 0;
    if (first)
        s->n.revoked_rank = s->rank;
    raise_news(s);
    pthread_mutex_unlock(&s->lock);
    if (first)
        send_up(s, TT_STAR_REVOKE, 0, 0, NULL, 0);
}

void tt_star_dead(tt_star_t *s, unsigned char *dead, int *blind)
{
    pthread_mutex_lock(&s->lock);
    for (int r = 0; r < s->nranks; r++)
        dead[r] |= s->dead[r];
    *blind = s->hub_gone;
    pthread_mutex_unlock(&s->lock);
}

int tt_star_has_news(tt_star_t *s)
{
    return s && atomic_load_explicit(&s->news, memory_order_relaxed);
}

void tt_star_news(tt_star_t *s, tt_star_news_t *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->n;
    pthread_mutex_unlock(&s->lock);
}

/* Closes the star's descriptors; with everything, also frees what its
 * thread used (not in a forked child, where that thread may have been
 * anywhere in its work when the parent forked: its copy is left alone). */
static void release(tt_star_t *s, int everything)
{
    for (int i = 0; i < 2; i++)
        if (s->stop_pipe[i] >= 0)
            close(s->stop_pipe[i]);
    if (s->mfd >= 0)
        close(s->mfd);
    if (!everything) {
        for (int r = 0; s->hub && s->hub->fds && r < s->hub->n; r++)
            close(s->hub->fds[r]);
        return;
    }
    tt_star_reader_reset(&s->mrd);
    if (s->hub)
        tt_star_hub_free(s->hub, 1);
    free(s->dead);
    free(s);
}

void tt_star_stop(tt_star_t *s)
{
    if (!s)
        return;
    if (s->running) {
        char b = 1;
        if (write(s->stop_pipe[1], &b, 1) != 1)
            TT_DEBUG(TT_SUB_INIT, "star: could not wake the thread: %s", strerror(errno));
        pthread_join(s->thread, NULL);
    }
    release(s, 1);
}

void tt_star_forget(tt_star_t *s)
{
    if (s)
        release(s, 0);
}
