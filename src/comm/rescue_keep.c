/* SPDX-License-Identifier: MIT */
/*
 * The listeners of communicators this process left for a successor. A
 * rank whose grow or shrink of comm made the communicator it went on in
 * keeps comm's listeners once it frees comm, and a thread of the
 * process's own answers there: a rank left behind (its part of the grow
 * or shrink failed, or it was stopped through it) that shrinks comm later
 * hears that comm went on without it, and from whom. Without them it
 * would find every listener of comm refusing, take the ranks that went on
 * for dead, and make a second successor of comm on its own.
 *
 * Every answer is a shrink's message under comm's recovery key, so the
 * rank left behind takes it as it takes any: joining this rank as its
 * coordinator, it is challenged and answered with TUTTI_ERR_REVOKED;
 * leaving this rank out of its own shrink, its verdict is answered on the
 * same connection with a verdict of that status, over its nonce.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "comm/shrink.h"
#include "core/clock.h"
#include "core/log.h"

#define KEPT_MAX 64 /* communicators kept at once: the oldest goes first */
#define ASKS_MAX 64 /* connections being answered at once: the oldest goes first */
#define ASK_MS 1000 /* for a connection to say its part */

typedef struct {
    unsigned char key[TT_KEY_BYTES];                      /* comm's recovery key */
    int n, me;                                            /* comm's size, this rank in it */
    int fd[2];                                            /* its TCP and Unix listeners, -1 where none */
    char path[sizeof((struct sockaddr_un *)0)->sun_path]; /* the Unix one's file, removed when dropped */
    char said[sizeof((tt_comm_t *)0)->succeeded];         /* what comm went on to */
} kept_t;

typedef struct {
    int fd, kept;
    int64_t deadline;
    int challenged; /* its hello was answered: its join is owed */
    size_t got;     /* bytes of the message under way */
    tt_rescue_hdr_t hdr;
    unsigned char *payload;
    unsigned char mine[TT_RESCUE_NONCE];   /* this rank's challenge */
    unsigned char theirs[TT_RESCUE_NONCE]; /* the hello's */
} ask_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static int running;            /* the thread serves; 0 again in a forked child, which has none */
static int wake[2] = {-1, -1}; /* a communicator kept: the thread polls its listeners too */
static kept_t kept[KEPT_MAX];
static int nkept;
static ask_t asks[ASKS_MAX]; /* under the lock, as the entries they reached */
static int nasks;

static void before_fork(void)
{
    pthread_mutex_lock(&lock);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

/* The child has no thread to answer: its copies would only keep the
 * parent's listeners open after the parent ended, so it closes them (the
 * files stay the parent's). */
static void after_fork_child(void)
{
    for (int i = 0; i < nkept; i++)
        for (int l = 0; l < 2; l++)
            if (kept[i].fd[l] >= 0)
                close(kept[i].fd[l]);
    for (int i = 0; i < nasks; i++) {
        close(asks[i].fd);
        free(asks[i].payload);
    }
    nkept = nasks = running = 0;
    for (int i = 0; i < 2; i++)
        if (wake[i] >= 0)
            close(wake[i]);
    wake[0] = wake[1] = -1;
    pthread_mutex_unlock(&lock);
}

/* The listeners end with the process; their files need not outlive it. */
static void at_exit(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nkept; i++)
        if (kept[i].path[0])
            unlink(kept[i].path);
    pthread_mutex_unlock(&lock);
}

static void register_handlers(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    atexit(at_exit);
}

static void forget(int i)
{
    close(asks[i].fd);
    free(asks[i].payload);
    asks[i] = asks[--nasks];
}

/* The answer: comm went on without the asker, said by this rank. */
static tt_rescue_decision_t refusal(const kept_t *k, const tt_rescue_hdr_t *hdr)
{
    tt_rescue_decision_t d = {.status = TUTTI_ERR_REVOKED, .newrank = -1};
    char told[48] = "";
    if (hdr->kind != TT_RESCUE_VERDICT) /* a verdict's reader adds who told it */
        snprintf(told, sizeof told, " (told by rank %d)", k->me);
    snprintf(d.why, sizeof d.why,
             "tutti_comm_shrink: rank %d was left behind: this communicator was succeeded %s, and the ranks "
             "that went on have left it%s",
             hdr->rank, k->said, told);
    return d;
}

/* What k's rank would be in comm's shrink number no, to send and check messages as. */
static tt_shrink_t as_rank(const kept_t *k, unsigned no)
{
    tt_shrink_t sh = {.n = k->n, .me = k->me, .no = no};
    memcpy(sh.key, k->key, sizeof sh.key);
    return sh;
}

/* Answers a whole message; 1 when the connection is done with. */
static int answer(ask_t *a, const kept_t *k)
{
    tt_shrink_t sh = as_rank(k, a->hdr.no);
    unsigned char *none = calloc((size_t)k->n, 1);
    int64_t until = tt_now_ms() + ASK_MS;
    int done = 1;
    if (!none)
        return 1;
    if (a->hdr.kind == TT_RESCUE_HELLO) {
        memcpy(a->theirs, a->hdr.nonce, TT_RESCUE_NONCE);
        tt_rescue_nonce(a->mine);
        done = tt_rescue_send(&sh, a->fd, TT_RESCUE_CHALLENGE, a->hdr.rank, a->mine, a->theirs, NULL, 0, NULL,
                              until) != TUTTI_SUCCESS;
        a->challenged = 1;
        a->got = 0;
        a->deadline = until;
    } else if (tt_rescue_check(&sh, &a->hdr, a->payload, a->challenged ? a->mine : NULL)) {
        tt_rescue_decision_t d = refusal(k, &a->hdr);
        int join = a->hdr.kind == TT_RESCUE_JOIN;
        unsigned char fresh[TT_RESCUE_NONCE];
        tt_rescue_nonce(fresh);
        /* A join is answered over its hello's nonce, a verdict over its own. */
        tt_rescue_send(&sh, a->fd, join ? TT_RESCUE_ANSWER : TT_RESCUE_VERDICT, a->hdr.rank,
                       join ? a->mine : fresh, join ? a->theirs : a->hdr.nonce, &d, sizeof d, none, until);
        TT_DEBUG(TT_SUB_INIT, "rank %d of a communicator it left told rank %d it was left behind", k->me,
                 a->hdr.rank);
    }
    free(a->payload);
    a->payload = NULL;
    free(none);
    return done;
}

/* Reads what ask i sent; 1 when it is done with (answered, closed or not a shrink's). */
static int progress(int i)
{
    ask_t *a = &asks[i];
    const kept_t *k = &kept[a->kept];
    for (;;) {
        size_t hsz = sizeof a->hdr, want = a->got < hsz ? hsz : hsz + a->hdr.len;
        char *dst = a->got < hsz ? (char *)&a->hdr + a->got : (char *)a->payload + (a->got - hsz);
        ssize_t n = a->got < want ? recv(a->fd, dst, want - a->got, MSG_DONTWAIT) : 0;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (a->got < want && n <= 0)
            return 1;
        a->got += (size_t)n;
        if (a->got == hsz && !a->payload) {
            tt_shrink_t sh = as_rank(k, a->hdr.no);
            tt_rescue_kind_t kind = a->challenged                      ? TT_RESCUE_JOIN
                                    : a->hdr.kind == TT_RESCUE_VERDICT ? TT_RESCUE_VERDICT
                                                                       : TT_RESCUE_HELLO;
            if (!tt_rescue_hdr_ok(&sh, &a->hdr, kind, -1) ||
                (a->hdr.len && !(a->payload = malloc(a->hdr.len))))
                return 1;
        }
        if (a->got < hsz || a->got < hsz + a->hdr.len)
            continue;
        if (answer(a, k))
            return 1;
    }
}

/* Takes the connections queued at kept listener l of entry i. */
static void accept_some(int i, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (nasks == ASKS_MAX)
            forget(0);
        asks[nasks++] = (ask_t){.fd = fd, .kept = i, .deadline = tt_now_ms() + ASK_MS};
        if (progress(nasks - 1))
            forget(nasks - 1);
    }
}

static void serve_once(void)
{
    struct pollfd p[1 + 2 * KEPT_MAX + ASKS_MAX];
    int owner[2 * KEPT_MAX], np = 0;
    int64_t now = tt_now_ms(), wake_at = now + 1000;
    pthread_mutex_lock(&lock);
    p[np++] = (struct pollfd){.fd = wake[0], .events = POLLIN};
    for (int i = 0; i < nkept; i++)
        for (int l = 0; l < 2; l++)
            if (kept[i].fd[l] >= 0) {
                owner[np - 1] = i;
                p[np++] = (struct pollfd){.fd = kept[i].fd[l], .events = POLLIN};
            }
    int nlisten = np;
    for (int i = 0; i < nasks; i++) {
        p[np++] = (struct pollfd){.fd = asks[i].fd, .events = POLLIN};
        wake_at = asks[i].deadline < wake_at ? asks[i].deadline : wake_at;
    }
    pthread_mutex_unlock(&lock);
    if (poll(p, (nfds_t)np, (int)(wake_at > now ? wake_at - now : 0)) < 0 && errno != EINTR)
        usleep(10000);
    char b[64];
    while (read(wake[0], b, sizeof b) > 0) {
    }
    pthread_mutex_lock(&lock);
    for (int j = 1; j < nlisten; j++) /* an entry dropped meanwhile moved another into its place */
        if (p[j].revents && owner[j - 1] < nkept &&
            (kept[owner[j - 1]].fd[0] == p[j].fd || kept[owner[j - 1]].fd[1] == p[j].fd))
            accept_some(owner[j - 1], p[j].fd);
    now = tt_now_ms();
    for (int i = 0; i < nasks;) {
        if (progress(i) || now >= asks[i].deadline)
            forget(i);
        else
            i++;
    }
    pthread_mutex_unlock(&lock);
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;)
        serve_once();
    return NULL;
}

/* Drops entry i: its listeners closed, its file removed, and what waited on them. */
static void drop(int i)
{
    for (int a = 0; a < nasks;) {
        if (asks[a].kept == i) {
            forget(a);
            continue;
        }
        if (asks[a].kept == nkept - 1)
            asks[a].kept = i; /* moves into i's place below */
        a++;
    }
    for (int l = 0; l < 2; l++)
        if (kept[i].fd[l] >= 0)
            close(kept[i].fd[l]);
    if (kept[i].path[0])
        unlink(kept[i].path);
    kept[i] = kept[--nkept];
}

/* Starts the thread once; 0 when it cannot run. */
static int start(void)
{
    if (running)
        return 1;
    pthread_t t;
    pthread_attr_t attr;
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK)) {
        wake[0] = wake[1] = -1;
        return 0;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    running = pthread_create(&t, &attr, serve, NULL) == 0;
    pthread_attr_destroy(&attr);
    if (!running) {
        close(wake[0]);
        close(wake[1]);
        wake[0] = wake[1] = -1;
    }
    return running;
}

void tt_rescue_keep(const unsigned char *key, int n, int me, int tcp_fd, int unix_fd, const char *path,
                    const char *said)
{
    pthread_once(&handlers_once, register_handlers);
    pthread_mutex_lock(&lock);
    if (!start()) {
        pthread_mutex_unlock(&lock);
        TT_WARN(TT_SUB_INIT,
                "rank %d: no thread to answer for a communicator it left: a rank left behind there "
                "will find it gone",
                me);
        if (tcp_fd >= 0)
            close(tcp_fd);
        if (unix_fd >= 0)
            close(unix_fd);
        if (path)
            unlink(path);
        return;
    }
    if (nkept == KEPT_MAX)
        drop(0);
    kept_t *k = &kept[nkept++];
    *k = (kept_t){.n = n, .me = me, .fd = {tcp_fd, unix_fd}};
    memcpy(k->key, key, sizeof k->key);
    snprintf(k->path, sizeof k->path, "%s", path ? path : "");
    snprintf(k->said, sizeof k->said, "%s", said);
    for (int l = 0; l < 2; l++)
        if (k->fd[l] >= 0)
            tt_sock_set_nonblocking(k->fd[l]);
    if (write(wake[1], "k", 1) < 0) { /* full: the thread wakes anyway */
    }
    pthread_mutex_unlock(&lock);
    TT_DEBUG(TT_SUB_INIT, "rank %d keeps the listeners of a communicator of %d ranks it left: %s", me, n,
             said);
}
