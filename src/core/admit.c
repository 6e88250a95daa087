/* SPDX-License-Identifier: MIT */
/*
 * Admission of keyed connections, many at once: a poll() over the listening
 * socket and every connection still owing its hello. A connection is
 * refused (closed, one warning) when it closes, shows a wrong key, misses
 * its hello deadline, or is the oldest waiting when the waiting room is
 * full; its bytes are read first, so a hello already sent is never lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/admit.h"
#include "core/clock.h"
#include "core/fdlimit.h"
#include "core/log.h"

#define WATCH_EVERY_MS 100
#define ACCEPTS_PER_WAKE 256 /* then the waiting ones are read again */
#define FD_RETRY_MS 100      /* out of descriptors: the listener is left alone this long */

void tt_admit_init(tt_admit_t *a, int listen_fd, const unsigned char *key, int sub, const char *what)
{
    memset(a, 0, sizeof *a);
    a->listen_fd = listen_fd;
    memcpy(a->key, key, TT_KEY_BYTES);
    a->sub = sub;
    a->what = what;
    a->hello_ms = TT_ADMIT_HELLO_MS;
    fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
}

static void refuse(tt_admit_t *a, int i, const char *why)
{
    tt_admit_conn_t *c = &a->pending[i];
    tt_sockaddr_t peer = {.len = sizeof peer.u};
    socklen_t plen = sizeof peer.u;
    char from[80] = "an unknown address";
    if (getpeername(c->fd, &peer.u.sa, &plen) == 0)
        tt_sock_addr_str(&peer, from, sizeof from);
    TT_LOG(TT_LOG_WARN, (tt_log_subsys_t)a->sub, "%s refused the connection from %s: %s", a->what, from, why);
    close(c->fd);
    a->pending[i] = a->pending[--a->npending];
    a->refused++;
}

/* Reads what connection i sent: 1 once its hello is whole and keyed, 0
 * while it is still owed, -1 after refusing it. */
static int read_hello(tt_admit_t *a, int i)
{
    tt_admit_conn_t *c = &a->pending[i];
    while (c->got < sizeof c->hello) {
        ssize_t n = recv(c->fd, (char *)&c->hello + c->got, sizeof c->hello - c->got, MSG_DONTWAIT);
        if (n > 0) {
            c->got += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        refuse(a, i, n == 0 ? "it closed before its hello was complete" : "its socket failed");
        return -1;
    }
    if (!tt_hello_matches(&c->hello, a->key)) {
        tt_hello_t no = {.magic = TT_HELLO_MAGIC, .rank = TT_HELLO_REFUSED_KEY};
        if (a->answer_refusals && c->hello.magic == TT_HELLO_MAGIC &&
            send(c->fd, &no, sizeof no, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
            TT_DEBUG((tt_log_subsys_t)a->sub, "%s: the refusal did not go out: %s", a->what, strerror(errno));
        refuse(a, i, "wrong key");
        return -1;
    }
    return 1;
}

/* Index of a connection whose keyed hello is complete, or -1; refuses
 * the ones that failed or ran out of time on the way. */
static int find_ready(tt_admit_t *a, int64_t now)
{
    for (int i = 0; i < a->npending;) {
        int rc = read_hello(a, i);
        if (rc > 0)
            return i;
        if (rc == 0 && now >= a->pending[i].deadline) {
            char why[96];
            snprintf(why, sizeof why, "no complete hello within %d ms (%zu of %zu bytes)", a->hello_ms,
                     a->pending[i].got, sizeof a->pending[i].hello);
            refuse(a, i, why);
            continue;
        }
        if (rc == 0)
            i++;
    }
    return -1;
}

/* Takes the connections the kernel queued. When the waiting room is full,
 * the oldest connection still owing its hello makes room, unless one is
 * ready: that one is handed over first and the rest wait in the kernel. */
static void accept_some(tt_admit_t *a, int64_t now)
{
    for (int k = 0; k < ACCEPTS_PER_WAKE; k++) {
        if (a->npending == TT_ADMIT_PENDING) {
            if (find_ready(a, now) >= 0)
                return;
            if (a->npending == TT_ADMIT_PENDING) {
                int oldest = 0;
                for (int i = 1; i < a->npending; i++)
                    if (a->pending[i].deadline < a->pending[oldest].deadline)
                        oldest = i;
                char why[96];
                snprintf(why, sizeof why, "%d later connections were waiting for their hello",
                         TT_ADMIT_PENDING);
                refuse(a, oldest, why);
            }
        }
        int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0 && tt_fd_exhausted(errno)) {
            /* The connection stays queued and the listener readable: said
             * once, and not retried at once (that would spin). */
            if (!a->fd_error) {
                char why[320];
                TT_LOG(TT_LOG_ERROR, (tt_log_subsys_t)a->sub, "%s could not accept a connection: %s", a->what,
                       tt_fd_strerror(errno, why, sizeof why));
            }
            a->fd_error = errno;
            a->retry_at = now + FD_RETRY_MS;
            return;
        }
        if (fd < 0)
            return;
        a->pending[a->npending++] = (tt_admit_conn_t){.fd = fd, .deadline = now + a->hello_ms};
    }
}

static tutti_status_t hand_over(tt_admit_t *a, int i, int *fd, tt_hello_t *hello)
{
    *fd = a->pending[i].fd;
    *hello = a->pending[i].hello;
    a->pending[i] = a->pending[--a->npending];
    return TUTTI_SUCCESS;
}

tutti_status_t tt_admit_next(tt_admit_t *a, int64_t deadline_ms, int *fd, tt_hello_t *hello)
{
    struct pollfd pfds[TT_ADMIT_PENDING + 1];
    for (;;) {
        int64_t now = tt_now_ms();
        int i = find_ready(a, now);
        if (i >= 0)
            return hand_over(a, i, fd, hello);
        if (a->watch) {
            tutti_status_t st = a->watch(a->watch_arg);
            if (st)
                return st;
        }
        if (now >= deadline_ms)
            return TUTTI_ERR_TIMEOUT;
        int64_t wake = deadline_ms < now + WATCH_EVERY_MS ? deadline_ms : now + WATCH_EVERY_MS;
        pfds[0] = (struct pollfd){.fd = a->listen_fd, .events = POLLIN};
        for (int k = 0; k < a->npending; k++) {
            pfds[k + 1] = (struct pollfd){.fd = a->pending[k].fd, .events = POLLIN};
            if (a->pending[k].deadline < wake)
                wake = a->pending[k].deadline;
        }
        int rc = poll(pfds, (nfds_t)a->npending + 1, (int)(wake > now ? wake - now : 0));
        if (rc < 0 && errno != EINTR) {
            TT_LOG(TT_LOG_ERROR, (tt_log_subsys_t)a->sub, "%s: poll failed: %s", a->what, strerror(errno));
            return TUTTI_ERR_SYSTEM;
        }
        if (rc > 0 && (pfds[0].revents & POLLIN))
            accept_some(a, tt_now_ms());
        if (a->fd_error)
            return TUTTI_ERR_SYSTEM; /* said in accept_some */
    }
}

int tt_admit_pollfds(const tt_admit_t *a, int64_t now, struct pollfd *fds, int64_t *wake)
{
    int n = 0;
    if (now >= a->retry_at)
        fds[n++] = (struct pollfd){.fd = a->listen_fd, .events = POLLIN};
    else if (a->retry_at < *wake)
        *wake = a->retry_at;
    for (int k = 0; k < a->npending; k++) {
        fds[n++] = (struct pollfd){.fd = a->pending[k].fd, .events = POLLIN};
        if (a->pending[k].deadline < *wake)
            *wake = a->pending[k].deadline;
    }
    return n;
}

int tt_admit_try(tt_admit_t *a, int listen_ready, int *fd, tt_hello_t *hello)
{
    int64_t now = tt_now_ms();
    if (listen_ready && now >= a->retry_at)
        accept_some(a, now);
    int i = find_ready(a, now);
    if (i >= 0) {
        hand_over(a, i, fd, hello);
        return 1;
    }
    return 0;
}

void tt_admit_close(tt_admit_t *a)
{
    for (int i = 0; i < a->npending; i++)
        close(a->pending[i].fd);
    a->npending = 0;
}

tt_admit_t *tt_admit_new(int listen_fd, const unsigned char *key, int sub, const char *what,
                         tutti_status_t (*watch)(void *arg), void *watch_arg)
{
    tt_admit_t *a = malloc(sizeof *a);
    if (!a)
        return NULL;
    tt_admit_init(a, listen_fd, key, sub, what);
    a->watch = watch;
    a->watch_arg = watch_arg;
    return a;
}

void tt_admit_free(tt_admit_t *a)
{
    tt_admit_close(a);
    free(a);
}
