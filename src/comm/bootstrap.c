/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap star: admission by key (many connections at once, see
 * core/admit.c), then the star's thread serves the connections (star.c):
 * set-up exchanges, failures and destroy's barrier go through it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/star_impl.h"
#include "core/admit.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/ranks.h"

/* What this process holds for a job, by key: a listening socket made
 * before the communicator (tutti_get_unique_id, a launcher's), and how the
 * root's address was chosen, for the messages about it. */
typedef struct kept {
    struct kept *next;
    unsigned char key[TT_KEY_BYTES];
    int fd;
    char note[240];
} kept_t;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept_t *kept;

/* The entry for key, added if missing (NULL without memory); under kept_lock. */
static kept_t *kept_find(const unsigned char *key, int add)
{
    for (kept_t *k = kept; k; k = k->next)
        if (memcmp(k->key, key, TT_KEY_BYTES) == 0)
            return k;
    kept_t *k = add ? calloc(1, sizeof *k) : NULL;
    if (k) {
        memcpy(k->key, key, TT_KEY_BYTES);
        k->fd = -1;
        k->next = kept;
        kept = k;
    }
    return k;
}

/* Frees the entry for key once it holds nothing; under kept_lock. */
static void kept_prune(const unsigned char *key)
{
    for (kept_t **p = &kept; *p; p = &(*p)->next)
        if (memcmp((*p)->key, key, TT_KEY_BYTES) == 0) {
            kept_t *k = *p;
            if (k->fd < 0 && !k->note[0]) {
                *p = k->next;
                free(k);
            }
            return;
        }
}

void tt_bootstrap_keep_listener(const unsigned char *key, int fd)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 1);
    if (k && k->fd >= 0)
        close(k->fd);
    if (k)
        k->fd = fd;
    else
        close(fd);
    pthread_mutex_unlock(&kept_lock);
}

void tt_bootstrap_drop_listener(const unsigned char *key)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 0);
    if (k && k->fd >= 0) {
        close(k->fd);
        k->fd = -1;
    }
    kept_prune(key);
    pthread_mutex_unlock(&kept_lock);
}

void tt_bootstrap_note_root(const unsigned char *key, const char *note)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 1);
    if (k)
        snprintf(k->note, sizeof k->note, "%s", note);
    pthread_mutex_unlock(&kept_lock);
}

static int take_listener(const unsigned char *key)
{
    int fd = -1;
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 0);
    if (k) {
        fd = k->fd;
        k->fd = -1;
        kept_prune(key);
    }
    pthread_mutex_unlock(&kept_lock);
    return fd;
}

/* " (NOTE)" for the job's root, or "". */
static void root_note(const unsigned char *key, char *out, size_t outlen)
{
    out[0] = '\0';
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 0);
    if (k && k->note[0])
        snprintf(out, outlen, " (%s)", k->note);
    pthread_mutex_unlock(&kept_lock);
}

/* The ranks that have not joined, for the message that says the job failed. */
static void missing_ranks(const tt_bootstrap_t *bs, char *out, size_t len)
{
    unsigned char *missing = calloc((size_t)bs->nranks, 1);
    if (!missing) {
        snprintf(out, len, "some ranks");
        return;
    }
    for (int r = 1; r < bs->nranks; r++)
        missing[r] = bs->rank_fds[r] < 0;
    tt_ranks_str(missing, bs->nranks, out, len);
    free(missing);
}

/* Tells the ranks that joined why the job will not form (their star
 * threads are already reading), so they fail at once with the reason.
 * What they sent meanwhile is read and dropped until they close (1 s at
 * most): a socket closed with unread bytes is reset, and the reason with it. */
static void tell_joined(const tt_bootstrap_t *bs, tutti_status_t st, const char *why)
{
    for (int r = 1; r < bs->nranks; r++)
        if (bs->rank_fds[r] >= 0) {
            tt_star_send(bs->rank_fds[r], TT_STAR_FAILED, 0, st, 0, why, strlen(why) + 1, 1000);
            shutdown(bs->rank_fds[r], SHUT_WR);
        }
    int64_t until = tt_now_ms() + 1000;
    for (int r = 1; r < bs->nranks; r++)
        while (bs->rank_fds[r] >= 0) {
            char sink[512];
            struct pollfd p = {.fd = bs->rank_fds[r], .events = POLLIN};
            int64_t left = until - tt_now_ms();
            if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                break;
            ssize_t n = recv(bs->rank_fds[r], sink, sizeof sink, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                break;
        }
}

static tutti_status_t root_admit(tt_bootstrap_t *bs, int listen_fd, int64_t deadline, char *err,
                                 size_t errlen)
{
    int joined = 1;
    tt_admit_t *a = tt_admit_new(listen_fd, bs->key, TT_SUB_INIT, "the bootstrap root", NULL, NULL);
    if (!a) {
        snprintf(err, errlen, "bootstrap root: no memory to admit the ranks");
        return TUTTI_ERR_NO_MEMORY;
    }
    a->answer_refusals = 1; /* a joiner with another key learns it is refused (TUTTI_ERR_AUTH) */
    tutti_status_t st = TUTTI_SUCCESS;
    while (joined < bs->nranks) {
        int fd;
        tt_hello_t h;
        st = tt_admit_next(a, deadline, &fd, &h);
        if (st != TUTTI_SUCCESS) {
            char missing[256];
            missing_ranks(bs, missing, sizeof missing);
            snprintf(err, errlen, "bootstrap root: %d of %d ranks joined before %s; missing: %s", joined,
                     bs->nranks, st == TUTTI_ERR_TIMEOUT ? "the timeout" : "accept failed", missing);
            tell_joined(bs, st, err);
            break;
        }
        if (h.nranks != bs->nranks || h.rank <= 0 || h.rank >= bs->nranks || bs->rank_fds[h.rank] >= 0) {
            TT_WARN(TT_SUB_INIT, "refused rank %d of %d: this communicator has %d ranks%s", h.rank, h.nranks,
                    bs->nranks,
                    h.rank > 0 && h.rank < bs->nranks && bs->rank_fds[h.rank] >= 0
                        ? " and that rank already joined"
                        : "");
            tt_hello_t no = {.magic = TT_HELLO_MAGIC, .rank = TT_HELLO_REFUSED_RANK};
            if (send(fd, &no, sizeof no, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                TT_DEBUG(TT_SUB_INIT, "the refusal of rank %d did not go out: %s", h.rank, strerror(errno));
            close(fd);
            continue;
        }
        /* The answer tells the joiner it reached tutti's root of this job. */
        if (tt_hello_send(fd, bs->key, 0, bs->nranks, 0, deadline)) {
            TT_WARN(TT_SUB_INIT, "rank %d left before the root's answer reached it", h.rank);
            close(fd);
            continue;
        }
        bs->rank_fds[h.rank] = fd;
        joined++;
        TT_DEBUG(TT_SUB_INIT, "bootstrap: rank %d joined (%d/%d)", h.rank, joined, bs->nranks);
    }
    tt_admit_free(a);
    return st;
}

/* Why the first bytes from the root's address are not the job's root's. */
static const char *not_root(const tt_hello_t *h, size_t got, const unsigned char *key)
{
    if (got >= sizeof h->magic && h->magic != TT_HELLO_MAGIC)
        return "it answered with bytes that are not tutti's, so another program holds that address";
    if (got == sizeof *h && !tt_hello_matches(h, key))
        return "it is the root of another tutti job (another key)";
    return NULL;
}

/*
 * The joiner's side of the root's answer: anything but the answer, or the
 * connection closed, means whatever listens at the root's address is not
 * this job's root, and is said at once instead of at the deadline. A root
 * that is silent may merely be late (its listener is made before it
 * serves), so that is only warned about, once.
 */
static tutti_status_t await_root(tt_bootstrap_t *bs, const char *where, int64_t deadline, char *err,
                                 size_t errlen)
{
    tt_hello_t h;
    size_t got = 0;
    int64_t warn_at = tt_now_ms() + TT_HELLO_WAIT_MS;
    char note[260];
    root_note(bs->key, note, sizeof note);
    while (got < sizeof h) {
        int64_t now = tt_now_ms(), until = warn_at > now && warn_at < deadline ? warn_at : deadline;
        if (now >= deadline) {
            snprintf(err, errlen, "rank %d: the bootstrap root at %s did not answer before the timeout%s",
                     bs->rank, where, note);
            return TUTTI_ERR_TIMEOUT;
        }
        struct pollfd p = {.fd = bs->up_fd, .events = POLLIN};
        int rc = poll(&p, 1, (int)(until - now < 1000 ? until - now : 1000));
        if (rc == 0 && warn_at && tt_now_ms() >= warn_at) {
            TT_WARN(TT_SUB_INIT,
                    "rank %d: the bootstrap root at %s has not answered for %d s; still waiting%s", bs->rank,
                    where, TT_HELLO_WAIT_MS / 1000, note);
            warn_at = 0;
        }
        if (rc <= 0)
            continue;
        ssize_t n = recv(bs->up_fd, (char *)&h + got, sizeof h - got, MSG_DONTWAIT);
        if (n > 0)
            got += (size_t)n;
        if (got == sizeof h && h.magic == TT_HELLO_MAGIC && h.rank < 0) {
            snprintf(err, errlen, "rank %d: the bootstrap root at %s refused it: %s", bs->rank, where,
                     h.rank == TT_HELLO_REFUSED_KEY
                         ? "its key is not the job's (another TUTTI_KEY or unique id)"
                         : "another process joined as this rank, or it counts another number of ranks");
            return TUTTI_ERR_AUTH;
        }
        const char *why = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)
                              ? "it closed the connection without answering, so it is not this job's root"
                              : not_root(&h, got, bs->key);
        if (why) {
            snprintf(err, errlen, "rank %d: the program at %s is not tutti's bootstrap root: %s%s", bs->rank,
                     where, why, note);
            return TUTTI_ERR_CONFIG;
        }
    }
    return TUTTI_SUCCESS;
}

static tutti_status_t start_star(tt_bootstrap_t *bs, char *err, size_t errlen);

tutti_status_t tt_bootstrap_init(tt_bootstrap_t *bs, int nranks, int rank, const unsigned char *key,
                                 const tt_sockaddr_t *root, int64_t timeout_ms, char *err, size_t errlen)
{
    memset(bs, 0, sizeof *bs);
    bs->rank = rank;
    bs->nranks = nranks;
    bs->timeout_ms = timeout_ms;
    bs->up_fd = -1;
    memcpy(bs->key, key, TT_KEY_BYTES);
    int64_t deadline = tt_now_ms() + timeout_ms;
    char where[80];
    tt_sock_addr_str(root, where, sizeof where);

    if (rank != 0) {
        tutti_status_t st = tt_sock_connect(root, deadline, &bs->up_fd);
        if (!st)
            st = tt_hello_send(bs->up_fd, key, rank, nranks, 0, deadline);
        if (st)
            snprintf(err, errlen, "rank %d could not reach the bootstrap root at %s: %s", rank, where,
                     tutti_strerror(st));
        else
            st = await_root(bs, where, deadline, err, errlen);
        if (!st)
            st = start_star(bs, err, errlen);
        if (st)
            tt_bootstrap_close(bs);
        return st;
    }

    bs->rank_fds = malloc(sizeof(int) * (size_t)nranks);
    if (!bs->rank_fds)
        return TUTTI_ERR_NO_MEMORY;
    for (int i = 0; i < nranks; i++)
        bs->rank_fds[i] = -1;
    int listen_fd = take_listener(key);
    if (listen_fd < 0 && nranks > 1) {
        tt_sockaddr_t bind_addr = *root;
        tutti_status_t st = tt_sock_listen(&bind_addr, &listen_fd);
        if (st) {
            snprintf(err, errlen, "rank 0 could not listen on %s for the bootstrap", where);
            tt_bootstrap_close(bs);
            return st;
        }
    }
    tutti_status_t st = nranks > 1 ? root_admit(bs, listen_fd, deadline, err, errlen) : TUTTI_SUCCESS;
    if (listen_fd >= 0)
        close(listen_fd);
    if (!st)
        st = start_star(bs, err, errlen);
    if (st)
        tt_bootstrap_close(bs);
    return st;
}

tutti_status_t tt_bootstrap_adopt(tt_bootstrap_t *bs, int nranks, int rank, const unsigned char *key,
                                  int up_fd, int *rank_fds, int64_t timeout_ms, char *err, size_t errlen)
{
    memset(bs, 0, sizeof *bs);
    bs->rank = rank;
    bs->nranks = nranks;
    bs->timeout_ms = timeout_ms;
    bs->up_fd = up_fd;
    bs->rank_fds = rank_fds;
    memcpy(bs->key, key, TT_KEY_BYTES);
    tutti_status_t st = start_star(bs, err, errlen);
    if (st)
        tt_bootstrap_close(bs);
    return st;
}

/* Hands the joined connections to the star's thread. */
static tutti_status_t start_star(tt_bootstrap_t *bs, char *err, size_t errlen)
{
    if (bs->nranks == 1)
        return TUTTI_SUCCESS;
    bs->star = tt_star_start(bs->rank, bs->nranks, bs->up_fd, bs->rank_fds, bs->timeout_ms);
    if (!bs->star) {
        snprintf(err, errlen, "rank %d: the bootstrap's service did not start", bs->rank);
        return TUTTI_ERR_SYSTEM;
    }
    bs->up_fd = -1; /* the star's now */
    for (int r = 1; bs->rank_fds && r < bs->nranks; r++)
        bs->rank_fds[r] = -1;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_allgather(tt_bootstrap_t *bs, const void *mine, void *all, size_t size)
{
    if (!bs->star) {
        memcpy(all, mine, size);
        return TUTTI_SUCCESS;
    }
    return tt_star_allgather(bs->star, mine, all, size);
}

tutti_status_t tt_bootstrap_barrier(void *arg)
{
    tt_bootstrap_t *bs = arg;
    char token = 1;
    char *all = malloc((size_t)bs->nranks);
    if (!all)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = tt_bootstrap_allgather(bs, &token, all, 1);
    free(all);
    return st;
}

tutti_status_t tt_bootstrap_leave(tt_bootstrap_t *bs, uint64_t ncalls)
{
    return bs->star ? tt_star_leave(bs->star, ncalls) : TUTTI_SUCCESS;
}

void tt_bootstrap_fail(tt_bootstrap_t *bs, tutti_status_t st, const char *why)
{
    tt_star_fail(bs->star, st, why);
}

tutti_status_t tt_bootstrap_watch(void *arg)
{
    tt_bootstrap_t *bs = arg;
    if (!tt_star_has_news(bs->star))
        return TUTTI_SUCCESS;
    tt_star_news_t n;
    tt_star_news(bs->star, &n);
    if (n.died_rank >= 0) {
        TT_ERROR(TT_SUB_INIT, "rank %d died or lost its connection during set-up", n.died_rank);
        return TUTTI_ERR_PEER_FAILED;
    }
    if (n.failed_rank < 0)
        return TUTTI_SUCCESS;
    TT_ERROR(TT_SUB_INIT, "rank %d gave up during set-up (%s): %s", n.failed_rank,
             tutti_status_name(n.failed_status), n.failed_text);
    return n.failed_status == TUTTI_ERR_ABORTED ? TUTTI_ERR_PEER_FAILED : n.failed_status;
}

static void close_fds(tt_bootstrap_t *bs)
{
    if (bs->up_fd >= 0)
        close(bs->up_fd);
    bs->up_fd = -1;
    if (bs->rank_fds) {
        for (int r = 0; r < bs->nranks; r++)
            if (bs->rank_fds[r] >= 0)
                close(bs->rank_fds[r]);
        free(bs->rank_fds);
        bs->rank_fds = NULL;
    }
}

void tt_bootstrap_close(tt_bootstrap_t *bs)
{
    tt_star_stop(bs->star);
    bs->star = NULL;
    close_fds(bs);
}

void tt_bootstrap_forget(tt_bootstrap_t *bs)
{
    tt_star_forget(bs->star);
    bs->star = NULL;
    close_fds(bs);
}
