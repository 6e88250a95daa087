/* SPDX-License-Identifier: MIT */
/*
 * The listeners a shrink runs over. Every rank of a communicator of two or
 * more keeps one for the communicator's whole life: the survivors find
 * each other through them however many ranks died, rank 0 included, and a
 * coordinator leaves its verdict in the listener of every rank it leaves
 * out, where that rank finds it even if it was stopped meanwhile. So the
 * listener is bound as narrowly as the ranks allow: a Unix socket in a
 * directory of this user's own (mode 0700) for the ranks of this host,
 * which no other user can reach or take over, and a TCP socket on
 * TUTTI_SOCKET_IFNAME's address only while some rank is on another host.
 * A refused connection means no process holds the communicator there: a
 * rank that went on in a successor of it hands its listeners, when it
 * frees it, to rescue_keep.c, which answers there for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "comm/error.h"
#include "comm/rescue.h"
#include "comm/shrink.h"
#include "comm/stuck.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "core/log.h"

/* Rank r's Unix socket: $TMPDIR/tutti-UID/KEYTAG.r; 0 when the directory
 * is not this user's alone or the path does not fit. */
static int local_path(const tt_comm_t *comm, int r, int make_dir, struct sockaddr_un *out)
{
    const char *tmp = getenv("TMPDIR");
    char dir[sizeof out->sun_path];
    if (!tmp || !*tmp)
        tmp = "/tmp";
    int n = snprintf(dir, sizeof dir, "%s/tutti-%u", tmp, (unsigned)geteuid());
    if (n < 0 || (size_t)n >= sizeof dir)
        return 0;
    if (make_dir && mkdir(dir, 0700) && errno != EEXIST)
        return 0;
    struct stat st;
    if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return 0;
    memset(out, 0, sizeof *out);
    out->sun_family = AF_UNIX;
    n = snprintf(out->sun_path, sizeof out->sun_path, "%s/%016llx.%d", dir,
                 (unsigned long long)comm->env.key_tag, r);
    return n > 0 && (size_t)n < sizeof out->sun_path;
}

static void open_local(tt_comm_t *comm)
{
    struct sockaddr_un un;
    if (!local_path(comm, comm->rank, 1, &un)) {
        TT_DEBUG(TT_SUB_INIT, "rank %d: no private directory for a Unix listener; TCP only", comm->rank);
        return;
    }
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(un.sun_path); /* names are per communicator key: nothing live can own it */
    if (s >= 0 && bind(s, (struct sockaddr *)&un, sizeof un) == 0 && listen(s, SOMAXCONN) == 0) {
        comm->rescue_local_fd = s;
        return;
    }
    TT_DEBUG(TT_SUB_INIT, "rank %d: no Unix listener at %s: %s", comm->rank, un.sun_path, strerror(errno));
    if (s >= 0)
        close(s);
    unlink(un.sun_path);
}

tutti_status_t tt_rescue_open(tt_comm_t *comm, tt_sockaddr_t *addr)
{
    comm->rescue = calloc((size_t)comm->nranks, sizeof *comm->rescue);
    if (!comm->rescue)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d listeners' addresses",
                             comm->rank, comm->nranks);
    tutti_status_t st = tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), addr);
    if (!st)
        st = tt_sock_listen(addr, &comm->rescue_fd); /* logs why it failed */
    if (st)
        return tt_comm_context(NULL, st, "rank %d: could not open the listener a later shrink needs",
                               comm->rank);
    open_local(comm);
    return TUTTI_SUCCESS;
}

/* Whether rank r is reached over its Unix socket: on this host, and the socket is there. */
static int reached_locally(tt_comm_t *comm, int r, struct sockaddr_un *un)
{
    struct stat st;
    return comm->endpoints[r].host_id == comm->endpoints[comm->rank].host_id && local_path(comm, r, 0, un) &&
           stat(un->sun_path, &st) == 0 && S_ISSOCK(st.st_mode);
}

void tt_rescue_narrow(tt_comm_t *comm)
{
    struct sockaddr_un un;
    if (comm->rescue_local_fd < 0 || comm->rescue_fd < 0)
        return;
    for (int r = 0; r < comm->nranks; r++)
        if (!reached_locally(comm, r, &un))
            return; /* another host, or a rank without a Unix socket: TCP stays */
    close(comm->rescue_fd);
    comm->rescue_fd = -1;
    TT_DEBUG(TT_SUB_INIT, "rank %d: every rank is on this host; the shrink listener is a Unix socket only",
             comm->rank);
}

void tt_rescue_key(tt_comm_t *comm, unsigned char key[TT_KEY_BYTES])
{
    static const unsigned char label[16] = "tutti shrink";
    tt_mac(comm->env.key, label, sizeof label, key);
}

void tt_rescue_close(tt_comm_t *comm, int local_only)
{
    struct sockaddr_un un;
    if (!local_only && comm->succeeded[0] && (comm->rescue_fd >= 0 || comm->rescue_local_fd >= 0)) {
        /* A rank left behind may shrink comm yet: this process answers it. */
        unsigned char key[TT_KEY_BYTES];
        int named = comm->rescue_local_fd >= 0 && local_path(comm, comm->rank, 0, &un);
        tt_rescue_key(comm, key);
        tt_rescue_keep(key, comm->nranks, comm->rank, comm->rescue_fd, comm->rescue_local_fd,
                       named ? un.sun_path : NULL, comm->succeeded);
        comm->rescue_fd = comm->rescue_local_fd = -1;
    }
    if (comm->rescue_fd >= 0)
        close(comm->rescue_fd);
    if (comm->rescue_local_fd >= 0) {
        close(comm->rescue_local_fd);
        if (!local_only && local_path(comm, comm->rank, 0, &un)) /* a forked child's copy is not the owner */
            unlink(un.sun_path);
    }
    comm->rescue_fd = comm->rescue_local_fd = -1;
    tt_rescue_held_free(comm);
    free(comm->rescue);
    comm->rescue = NULL;
}

/* A non-blocking connect to addr, finished by deadline_ms. */
static int connect_by(int family, const struct sockaddr *addr, socklen_t len, int64_t deadline_ms, int *fd)
{
    int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return errno;
    int err = connect(s, addr, len) == 0 ? 0 : errno;
    /* A Unix socket whose backlog is full says EAGAIN: try again, as TCP's SYN would. */
    while (err == EAGAIN && family == AF_UNIX && tt_now_ms() < deadline_ms) {
        usleep(2000);
        err = connect(s, addr, len) == 0 ? 0 : errno;
    }
    while (err == EINPROGRESS || err == EINTR) {
        int64_t left = deadline_ms - tt_now_ms();
        struct pollfd p = {.fd = s, .events = POLLOUT};
        if (left <= 0) {
            err = ETIMEDOUT;
            break;
        }
        if (poll(&p, 1, left > 100 ? 100 : (int)left) <= 0)
            continue;
        socklen_t elen = sizeof err;
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &elen))
            err = errno;
    }
    if (err == EAGAIN)
        err = ETIMEDOUT;
    if (err)
        close(s);
    else
        *fd = s;
    return err;
}

tutti_status_t tt_rescue_connect(tt_comm_t *comm, int rank, int64_t deadline_ms, int *fd)
{
    struct sockaddr_un un;
    int err = ENOENT;
    if (reached_locally(comm, rank, &un)) {
        err = connect_by(AF_UNIX, (struct sockaddr *)&un, sizeof un, deadline_ms, fd);
        if (err == ECONNREFUSED)
            unlink(un.sun_path); /* its owner is gone: a killed rank's leftover */
    }
    if (err == ENOENT) {
        const tt_sockaddr_t *a = &comm->rescue[rank];
        err = a->len ? connect_by(a->u.sa.sa_family, &a->u.sa, a->len, deadline_ms, fd) : ECONNREFUSED;
    }
    return !err                  ? TUTTI_SUCCESS
           : err == ECONNREFUSED ? TUTTI_ERR_PEER_FAILED
           : err == ETIMEDOUT    ? TUTTI_ERR_TIMEOUT
                                 : TUTTI_ERR_SYSTEM;
}

#define PROBE_MS 200 /* a listener on a live host answers well within this */

int tt_rescue_gone(const tt_shrink_t *sh, int rank)
{
    int fd;
    tutti_status_t st = tt_rescue_connect(sh->comm, rank, tt_now_ms() + PROBE_MS, &fd);
    if (st == TUTTI_SUCCESS)
        close(fd); /* its owner drops a connection that says nothing, quietly */
    return st == TUTTI_ERR_PEER_FAILED;
}

/* Only where the ranks share a host name (so also a process id space, as
 * tutti-run's simulated hosts do); the state letter comes from /proc. */
int tt_rescue_stopped(tt_comm_t *comm, int rank)
{
    const tt_endpoint_t *ep = comm->endpoints;
    if (strcmp(ep[rank].hostname, ep[comm->rank].hostname) != 0)
        return 0;
    int state = tt_stuck_proc_state(ep[rank].pid);
    return state == 'T' || state == 't';
}

/* The same hosts; no such process, or a zombie (it ended, not yet reaped). */
int tt_rescue_ended(tt_comm_t *comm, int rank)
{
    const tt_endpoint_t *ep = comm->endpoints;
    if (strcmp(ep[rank].hostname, ep[comm->rank].hostname) != 0)
        return 0;
    if (kill(ep[rank].pid, 0) == -1)
        return errno == ESRCH;
    int state = tt_stuck_proc_state(ep[rank].pid);
    return state == 'Z' || state == 'X';
}

int tt_rescue_alive(tt_comm_t *comm, int rank)
{
    const tt_endpoint_t *ep = comm->endpoints;
    return strcmp(ep[rank].hostname, ep[comm->rank].hostname) == 0 && kill(ep[rank].pid, 0) == 0 &&
           !tt_rescue_ended(comm, rank);
}
