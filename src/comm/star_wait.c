/* SPDX-License-Identifier: MIT */
/*
 * What a rank's main thread asks of the star: it queues a frame for the
 * thread to send (tt_star_t.queued), then waits on the condition variable
 * for what answers it (an exchange's broadcast, destroy's end, the
 * who-is-stuck report) or for news that ends the wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/wake.h"

#define LAST_LOOK_MS 1000 /* the longest a wait at its deadline waits for the thread's turn */

/* Hands a frame of this rank's to the thread. */
static tutti_status_t queue(tt_star_t *s, int type, tutti_status_t status, uint64_t seq, const void *p,
                            size_t len)
{
    tt_star_frame_t *f = tt_star_frame_new(type, s->rank, status, seq, p, len);
    if (!f) {
        TT_ERROR(TT_SUB_INIT, "rank %d: no memory for a frame of %zu bytes to the other ranks", s->rank, len);
        return TUTTI_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&s->lock);
    *s->queued_tail = f;
    s->queued_tail = &f->next;
    pthread_mutex_unlock(&s->lock);
    uint64_t one = 1;
    if (write(s->kick_fd, &one, sizeof one) != sizeof one)
        TT_DEBUG(TT_SUB_INIT, "star: could not wake the thread");
    return TUTTI_SUCCESS;
}

/*
 * Under the lock: until a turn of the thread round its connections that
 * began after now has ended (LAST_LOOK_MS at most): it read all that had
 * come. The kick starts one at once (a turn under way leaves it unread).
 */
static void last_look(tt_star_t *s)
{
    uint64_t one = 1, begun = s->turns_begun;
    int64_t until = tt_now_ms() + LAST_LOOK_MS;
    s->turn_wanted++;
    if (write(s->kick_fd, &one, sizeof one) != sizeof one)
        TT_DEBUG(TT_SUB_INIT, "star: could not wake the thread");
    for (int64_t left; s->turns_done <= begun && (left = until - tt_now_ms()) > 0;) {
        struct timespec ts = tt_realtime_in_ns(left * 1000000);
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    s->turn_wanted--;
}

/*
 * Waits under the lock until done(s) or the deadline: 0 when done. At the
 * deadline the thread first takes in what has come: a process stopped
 * (SIGSTOP, a debugger) or kept off its CPUs past the deadline wakes with
 * the answer in its sockets, and this thread may run before that one. The
 * answer may be a communicator's last set-up barrier, which the others
 * passed and went on from: giving up on it would leave this rank behind.
 */
static int wait_until(tt_star_t *s, int (*done)(const tt_star_t *s, const void *arg), const void *arg,
                      int64_t deadline_ms)
{
    for (int looked = 0; !done(s, arg);) {
        int64_t left = deadline_ms - tt_now_ms();
        if (left <= 0 && looked)
            return -1;
        if (left <= 0) {
            last_look(s);
            looked = 1;
            continue;
        }
        struct timespec ts = tt_realtime_in_ns(left * 1000000);
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    return 0;
}

/* Once every rank is past destroy's barrier (done), a rank that left is no
 * news: the transports' teardown may still exchange. */
static int stopped(const tt_star_t *s)
{
    return s->n.died_rank >= 0 || s->n.failed_rank >= 0 || (s->n.left_rank >= 0 && !s->done);
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

static tt_star_frame_t *find_bcast(const tt_star_t *s, uint64_t round)
{
    for (tt_star_frame_t *f = s->bcasts; f; f = f->next)
        if (f->hdr.seq == round)
            return f;
    return NULL;
}

static int bcast_in(const tt_star_t *s, const void *arg)
{
    return find_bcast(s, *(const uint64_t *)arg) || stopped(s);
}

static int gathered(const tt_star_t *s, const void *arg)
{
    return s->gathered == *(const uint64_t *)arg || stopped(s);
}

/*
 * The end of an exchange's wait, under the lock: a little past the
 * timeout, so that when a rank never joined, rank 0 says which first.
 * Rank 0 decides for all: its broadcast lets the others go on. So an
 * exchange gathered whole still fails when a rank gave up or died first:
 * a rank 0 stopped or starved through the wait finds the parts and the
 * ranks' giving up, sent meanwhile, in its sockets together, and going on
 * would leave it alone in a communicator the others gave up (and maybe
 * replaced: the job split in two). What came with the last part is taken
 * in before it decides.
 */
static tutti_status_t exchange_end(tt_star_t *s, int (*done)(const tt_star_t *s, const void *arg),
                                   uint64_t round)
{
    if (wait_until(s, done, &round, tt_now_ms() + s->timeout_ms + s->wait_ms)) {
        TT_ERROR(TT_SUB_INIT, "set-up exchange: not every rank took part within %lld ms (TUTTI_TIMEOUT)",
                 (long long)s->timeout_ms);
        return TUTTI_ERR_TIMEOUT;
    }
    if (done == gathered && s->gathered == round)
        last_look(s);
    if (done == gathered ? s->gathered != round || stopped(s) : !find_bcast(s, round))
        return stopped_by_news(s, "set-up exchange");
    return TUTTI_SUCCESS;
}

tutti_status_t tt_star_gather(tt_star_t *s, const void *mine, void *all, size_t size)
{
    pthread_mutex_lock(&s->lock);
    uint64_t round = ++s->xround;
    if (s->hub)
        s->gather_buf = all;
    pthread_mutex_unlock(&s->lock);
    tutti_status_t st = queue(s, TT_STAR_DATA, 0, round, mine, size);
    if (st || !s->hub)
        return st;
    pthread_mutex_lock(&s->lock);
    st = exchange_end(s, gathered, round);
    s->gather_buf = NULL;
    pthread_mutex_unlock(&s->lock);
    return st;
}

static int sent(const tt_star_t *s, const void *arg)
{
    return s->words_out > *(const uint64_t *)arg;
}

/*
 * Rank 0's broadcast is its word that the others may go on, so it counts
 * once it has left this process, and only when no rank had given up or
 * died by then (the thread notes which when it has written the word out
 * whole; what came later may answer the word itself): a rank 0 stopped or
 * starved between its deciding and its thread's writing would otherwise
 * go on in a communicator whose other ranks gave up waiting for the word
 * (and maybe made another successor of the one before it). The ranks that
 * had the word go on without rank 0, as after any failure of it.
 */
static tutti_status_t word_out(tt_star_t *s, uint64_t before)
{
    pthread_mutex_lock(&s->lock);
    int late = wait_until(s, sent, &before, tt_now_ms() + s->timeout_ms);
    tutti_status_t st = TUTTI_SUCCESS;
    if (late) {
        TT_ERROR(TT_SUB_INIT,
                 "set-up exchange: rank 0 could not send its broadcast within %lld ms (TUTTI_TIMEOUT)",
                 (long long)s->timeout_ms);
        st = TUTTI_ERR_TIMEOUT;
    } else if (s->word_news) {
        st = stopped_by_news(s, "set-up exchange");
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

tutti_status_t tt_star_bcast(tt_star_t *s, void *buf, size_t size)
{
    pthread_mutex_lock(&s->lock);
    uint64_t round = ++s->xround, before = s->words_out;
    pthread_mutex_unlock(&s->lock);
    if (s->hub) {
        tutti_status_t st = queue(s, TT_STAR_ALL, 0, round, buf, size);
        return st ? st : word_out(s, before);
    }
    pthread_mutex_lock(&s->lock);
    tutti_status_t st = exchange_end(s, bcast_in, round);
    if (!st) {
        tt_star_frame_t **p = &s->bcasts, *f;
        while ((*p)->hdr.seq != round)
            p = &(*p)->next;
        f = *p;
        if (!(*p = f->next))
            s->bcast_tail = p;
        if (f->hdr.len == size) {
            memcpy(buf, f->payload, size);
        } else {
            TT_ERROR(TT_SUB_INIT, "set-up exchange: rank 0 sent %u bytes where rank %d expected %zu",
                     f->hdr.len, s->rank, size);
            st = TUTTI_ERR_MISMATCH;
        }
        free(f);
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

tutti_status_t tt_star_allgather(tt_star_t *s, const void *mine, void *all, size_t size)
{
    tutti_status_t st = tt_star_gather(s, mine, all, size);
    return st ? st : tt_star_bcast(s, all, (size_t)s->nranks * size);
}

static int leave_over(const tt_star_t *s, const void *arg)
{
    (void)arg;
    return s->done || s->n.failed_rank >= 0 || s->n.died_rank >= 0;
}

tutti_status_t tt_star_leave(tt_star_t *s, uint64_t ncalls)
{
    pthread_mutex_lock(&s->lock);
    s->said_leaving = 1;
    s->leave_after = ncalls;
    pthread_mutex_unlock(&s->lock);
    tutti_status_t st = queue(s, TT_STAR_LEAVING, 0, ncalls, NULL, 0);
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

void tt_star_fail(tt_star_t *s, tutti_status_t status, uint64_t from, const char *why)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    int first = !s->said_fail;
    if (first) {
        s->said_fail = 1;
        s->fail_status = status;
        s->fail_from = from;
        snprintf(s->fail_text, sizeof s->fail_text, "%s", why);
    }
    pthread_mutex_unlock(&s->lock);
    if (first)
        queue(s, TT_STAR_FAIL, status, from, why, strlen(why) + 1);
}

static int report_in(const tt_star_t *s, const void *arg)
{
    (void)arg;
    return s->n.have_report || s->hub_gone;
}

void tt_star_who_is_stuck(tt_star_t *s, const tt_stuck_state_t *mine, char *out, size_t len)
{
    pthread_mutex_lock(&s->lock);
    int asked = s->n.have_report;
    pthread_mutex_unlock(&s->lock);
    if (!asked)
        asked = queue(s, TT_STAR_QUERY, 0, 0, NULL, 0) == TUTTI_SUCCESS;
    pthread_mutex_lock(&s->lock);
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
    if (first) {
        s->n.revoked_rank = s->rank;
        s->said_revoke = 1;
    }
    atomic_store_explicit(&s->news, 1, memory_order_relaxed);
    tt_wake_ring(atomic_load_explicit(&s->wake_fd, memory_order_relaxed));
    pthread_mutex_unlock(&s->lock);
    if (first)
        queue(s, TT_STAR_REVOKE, 0, 0, NULL, 0);
}

void tt_star_dead(tt_star_t *s, unsigned char *dead, unsigned char died, unsigned char left, int *blind)
{
    pthread_mutex_lock(&s->lock);
    for (int r = 0; r < s->nranks; r++)
        if (!dead[r] && s->dead[r])
            dead[r] = s->dead[r] == TT_STAR_RANK_DIED ? died : left;
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
