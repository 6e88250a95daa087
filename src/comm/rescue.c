/* SPDX-License-Identifier: MIT */
/*
 * The listeners a shrink runs over. Every rank of a communicator of two or
 * more opens one when the communicator is made and publishes its address
 * with its set-up record, so the survivors can find each other however
 * many ranks died, rank 0 included. Nobody accepts on it until a shrink
 * makes this rank the coordinator; meanwhile the kernel completes
 * connections into its backlog, so a refused connection means the
 * process is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/shrink.h"
#include "comm/stuck.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "core/log.h"

tutti_status_t tt_rescue_open(tutti_comm_t comm, tt_sockaddr_t *addr)
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
    return TUTTI_SUCCESS;
}

void tt_rescue_close(tutti_comm_t comm)
{
    if (comm->rescue_fd >= 0)
        close(comm->rescue_fd);
    comm->rescue_fd = -1;
    free(comm->rescue);
    comm->rescue = NULL;
}

tutti_status_t tt_rescue_connect(const tt_sockaddr_t *addr, int64_t deadline_ms, int *fd)
{
    int s = socket(addr->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return TUTTI_ERR_SYSTEM;
    int err = connect(s, &addr->u.sa, addr->len) == 0 ? 0 : errno;
    while (err == EINPROGRESS || err == EINTR) {
        int64_t left = deadline_ms - tt_now_ms();
        struct pollfd p = {.fd = s, .events = POLLOUT};
        if (left <= 0) {
            err = ETIMEDOUT;
            break;
        }
        if (poll(&p, 1, left > 100 ? 100 : (int)left) <= 0)
            continue;
        socklen_t len = sizeof err;
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len))
            err = errno;
    }
    if (!err) {
        *fd = s;
        return TUTTI_SUCCESS;
    }
    close(s);
    return err == ECONNREFUSED ? TUTTI_ERR_PEER_FAILED
           : err == ETIMEDOUT  ? TUTTI_ERR_TIMEOUT
                               : TUTTI_ERR_SYSTEM;
}

#define PROBE_MS 200 /* a listener on a live host answers well within this */

int tt_rescue_gone(const tt_shrink_t *sh, int rank)
{
    int fd;
    tutti_status_t st = tt_rescue_connect(&sh->comm->rescue[rank], tt_now_ms() + PROBE_MS, &fd);
    if (st == TUTTI_SUCCESS) {
        tt_hello_send(fd, sh->key, -1, sh->n, 0, tt_now_ms() + PROBE_MS);
        close(fd);
    }
    return st == TUTTI_ERR_PEER_FAILED;
}

/* Only where the ranks share a host name (so also a process id space, as
 * tutti-run's simulated hosts do); the state letter comes from /proc. */
int tt_rescue_stopped(tutti_comm_t comm, int rank)
{
    const tt_endpoint_t *ep = comm->endpoints;
    if (strcmp(ep[rank].hostname, ep[comm->rank].hostname) != 0)
        return 0;
    int state = tt_stuck_proc_state(ep[rank].pid);
    return state == 'T' || state == 't';
}
