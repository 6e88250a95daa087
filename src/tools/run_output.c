/* SPDX-License-Identifier: MIT */
/* tutti-run's descriptors and the forwarding of its ranks' output (see run_output.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tools/run_output.h"

/* Descriptors tutti-run holds besides the ranks' pipes: stdio, the
 * bootstrap listener, the wake pipe, the epoll set, /proc files it reads. */
#define RUN_SPARE_FDS 16
/* epoll's tag for the wake descriptor; a rank's stream is 2 rank + stream. */
#define WAKE_TAG UINT64_MAX

int tt_run_fd_limit(int n, int tag)
{
    rlim_t need = (rlim_t)(tag ? 2 * (long long)n : 0) + RUN_SPARE_FDS;
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) || lim.rlim_cur >= need)
        return 0;
    if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max >= need) {
        lim.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
            return 0;
    } else if (setrlimit(RLIMIT_NOFILE, &(struct rlimit){need, need}) == 0) {
        return 0; /* root may raise the hard limit too, up to fs.nr_open */
    }
    fprintf(stderr,
            "tutti-run: %d ranks%s need %llu open descriptors, but the limit is %llu (hard limit %llu): "
            "raise it (ulimit -n %llu; as root, nofile in /etc/security/limits.conf, LimitNOFILE= in a "
            "systemd unit, docker run --ulimit nofile=%llu)%s\n",
            n, tag ? " with --tag-output (two pipes a rank)" : "", (unsigned long long)need,
            (unsigned long long)lim.rlim_cur, (unsigned long long)lim.rlim_max, (unsigned long long)need,
            (unsigned long long)need, tag ? ", or run without --tag-output" : "");
    return -1;
}

static int watch(int epfd, int fd, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int tt_run_output_init(tt_run_output_t *o, int n, int tag, int wake_fd)
{
    *o = (tt_run_output_t){.epfd = epoll_create1(EPOLL_CLOEXEC), .wake_fd = wake_fd, .nranks = n};
    if (o->epfd < 0 || watch(o->epfd, wake_fd, WAKE_TAG)) {
        perror("tutti-run: epoll");
        return -1;
    }
    if (tag && !(o->rank = calloc((size_t)n, sizeof *o->rank))) {
        fprintf(stderr, "tutti-run: no memory for the output of %d ranks\n", n);
        return -1;
    }
    for (int r = 0; tag && r < n; r++)
        o->rank[r].fd[0] = o->rank[r].fd[1] = -1;
    return 0;
}

int tt_run_output_pipes(tt_run_output_t *o, int rank, int child[2])
{
    tt_run_pipes_t *p = &o->rank[rank];
    int out[2], err[2];
    /* Close-on-exec, so no rank inherits the others' pipes (rank k would
     * hold 2k descriptors); the child's dup2 onto 1 and 2 keeps its own. */
    if (pipe2(out, O_CLOEXEC))
        goto fail;
    if (pipe2(err, O_CLOEXEC)) {
        close(out[0]);
        close(out[1]);
        goto fail;
    }
    p->fd[0] = out[0];
    p->fd[1] = err[0];
    child[0] = out[1];
    child[1] = err[1];
    return 0;
fail:
    fprintf(stderr, "tutti-run: pipe for rank %d: %s\n", rank, strerror(errno));
    return -1;
}

int tt_run_output_watch(tt_run_output_t *o, int rank, int child[2])
{
    tt_run_pipes_t *p = &o->rank[rank];
    close(child[0]);
    close(child[1]);
    for (int s = 0; s < 2; s++) {
        /* Non-blocking: what is left after the rank ended is drained
         * without waiting for anything it may have left running. */
        fcntl(p->fd[s], F_SETFL, O_NONBLOCK);
        if (watch(o->epfd, p->fd[s], 2 * (uint64_t)rank + (uint64_t)s)) {
            fprintf(stderr, "tutti-run: epoll for rank %d: %s\n", rank, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Prints the whole lines (or everything, at EOF) of one stream with a prefix. */
static void flush_lines(int rank, char *buf, size_t *len, FILE *to, int all)
{
    size_t start = 0;
    for (size_t i = 0; i < *len; i++)
        if (buf[i] == '\n') {
            fprintf(to, "[%d] %.*s\n", rank, (int)(i - start), buf + start);
            start = i + 1;
        }
    if (all && start < *len) {
        fprintf(to, "[%d] %.*s\n", rank, (int)(*len - start), buf + start);
        start = *len;
    }
    if (start == 0 && *len == sizeof((tt_run_pipes_t *)0)->line[0]) { /* an over-long line */
        fprintf(to, "[%d] %.*s\n", rank, (int)*len, buf);
        start = *len;
    }
    memmove(buf, buf + start, *len - start);
    *len -= start;
    fflush(to);
}

/* Reads what one of a rank's pipes holds now and prints its whole lines:
 * how many bytes came (0 at the end, when the pipe is closed; -1 when
 * nothing is there yet). */
static ssize_t pump(tt_run_output_t *o, int rank, int s)
{
    tt_run_pipes_t *p = &o->rank[rank];
    if (p->fd[s] < 0)
        return 0;
    ssize_t n = read(p->fd[s], p->line[s] + p->len[s], sizeof p->line[s] - p->len[s]);
    if (n > 0) {
        p->len[s] += (size_t)n;
        flush_lines(rank, p->line[s], &p->len[s], s ? stderr : stdout, 0);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        flush_lines(rank, p->line[s], &p->len[s], s ? stderr : stdout, 1);
        epoll_ctl(o->epfd, EPOLL_CTL_DEL, p->fd[s], NULL);
        close(p->fd[s]);
        p->fd[s] = -1;
    }
    return n;
}

void tt_run_output_wait(tt_run_output_t *o, int ms)
{
    struct epoll_event ev[64];
    int n = epoll_wait(o->epfd, ev, (int)(sizeof ev / sizeof ev[0]), ms);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == WAKE_TAG) {
            char drain[64];
            while (read(o->wake_fd, drain, sizeof drain) > 0) {
            }
        } else if (o->rank) {
            pump(o, (int)(ev[i].data.u64 / 2), (int)(ev[i].data.u64 % 2));
        }
    }
}

void tt_run_output_finish(tt_run_output_t *o)
{
    /* The ranks' last words can still be in their pipes when the last one
     * is reaped: read them before the partial lines are printed. */
    for (int r = 0; o->rank && r < o->nranks; r++)
        for (int s = 0; s < 2; s++)
            while (o->rank[r].fd[s] >= 0 && pump(o, r, s) > 0) {
            }
    for (int r = 0; o->rank && r < o->nranks; r++)
        for (int s = 0; s < 2; s++)
            if (o->rank[r].fd[s] >= 0) {
                flush_lines(r, o->rank[r].line[s], &o->rank[r].len[s], s ? stderr : stdout, 1);
                close(o->rank[r].fd[s]);
            }
    free(o->rank);
    if (o->epfd >= 0)
        close(o->epfd);
    *o = (tt_run_output_t){.epfd = -1};
}
