/* SPDX-License-Identifier: MIT */
/* Socket helpers: every blocking wait is a poll() bounded by a deadline. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fdlimit.h"
#include "core/log.h"
#include "core/sock.h"

tutti_status_t tt_sock_pick_addr(const char *ifname, tt_sockaddr_t *addr)
{
    struct ifaddrs *list;
    memset(addr, 0, sizeof *addr);
    if (getifaddrs(&list)) {
        TT_ERROR(TT_SUB_INIT, "getifaddrs failed: %s", strerror(errno));
        return TUTTI_ERR_SYSTEM;
    }
    int found = 0;
    for (struct ifaddrs *ifa = list; ifa && !found; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET || !(ifa->ifa_flags & IFF_UP))
            continue;
        int loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
        if (ifname && *ifname ? strcmp(ifa->ifa_name, ifname) == 0 : !loopback) {
            memcpy(&addr->u.in4, ifa->ifa_addr, sizeof addr->u.in4);
            found = 1;
        }
    }
    freeifaddrs(list);
    if (!found && ifname && *ifname) {
        TT_ERROR(TT_SUB_CONFIG, "TUTTI_SOCKET_IFNAME=%s: no such interface with an IPv4 address that is up",
                 ifname);
        return TUTTI_ERR_CONFIG;
    }
    if (!found) {
        addr->u.in4.sin_family = AF_INET;
        addr->u.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    addr->u.in4.sin_port = 0;
    addr->len = sizeof addr->u.in4;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_sock_parse_addr(const char *text, tt_sockaddr_t *addr)
{
    char host[256];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof host)
        return TUTTI_ERR_INVALID_ARG;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    if (host[0] == '[') { /* [v6]:port */
        memmove(host, host + 1, strlen(host));
        host[strcspn(host, "]")] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc) {
        TT_ERROR(TT_SUB_INIT, "cannot resolve %s: %s", text, gai_strerror(rc));
        return TUTTI_ERR_INVALID_ARG;
    }
    memset(addr, 0, sizeof *addr);
    memcpy(&addr->u, res->ai_addr, res->ai_addrlen);
    addr->len = (uint32_t)res->ai_addrlen;
    freeaddrinfo(res);
    return TUTTI_SUCCESS;
}

void tt_sock_addr_str(const tt_sockaddr_t *addr, char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (addr->u.sa.sa_family != AF_INET && addr->u.sa.sa_family != AF_INET6) {
        snprintf(out, outlen, "a local socket");
        return;
    }
    if (addr->u.sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &addr->u.in6.sin6_addr, host, sizeof host);
        snprintf(out, outlen, "[%s]:%u", host, ntohs(addr->u.in6.sin6_port));
    } else {
        inet_ntop(AF_INET, &addr->u.in4.sin_addr, host, sizeof host);
        snprintf(out, outlen, "%s:%u", host, ntohs(addr->u.in4.sin_port));
    }
}

void tt_sock_set_nonblocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void tt_sock_tune(int fd, int bufbytes)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bufbytes > 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufbytes, sizeof bufbytes);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufbytes, sizeof bufbytes);
    }
}

tutti_status_t tt_sock_listen_quiet(tt_sockaddr_t *addr, int *fd, int *err)
{
    int s = socket(addr->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        *err = errno;
        return TUTTI_ERR_SYSTEM;
    }
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t len = addr->len;
    if (bind(s, &addr->u.sa, len) || listen(s, SOMAXCONN) || getsockname(s, &addr->u.sa, &len)) {
        *err = errno;
        close(s);
        return TUTTI_ERR_SYSTEM;
    }
    addr->len = len;
    *fd = s;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_sock_listen(tt_sockaddr_t *addr, int *fd)
{
    int err = 0;
    tutti_status_t st = tt_sock_listen_quiet(addr, fd, &err);
    if (st) {
        char where[80], why[320];
        tt_sock_addr_str(addr, where, sizeof where);
        TT_ERROR(TT_SUB_INIT, "listen on %s failed: %s", where, tt_fd_strerror(err, why, sizeof why));
    }
    return st;
}

static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - tt_now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (rc > 0)
            return 1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

tutti_status_t tt_sock_connect(const tt_sockaddr_t *addr, int64_t deadline_ms, int *fd)
{
    return tt_sock_connect_watched(addr, deadline_ms, NULL, NULL, fd);
}

/* A dial not answered within this long lost its SYN (the kernel's first
 * retry is at 1 s): a try that failed, after which the watch is asked. */
#define DIAL_TRY_MS 1000

/*
 * One non-blocking dial of s to addr, waited for in slices of 100 ms so that
 * the deadline is heard, and the watch too once the dial is past its first
 * try: a listener whose queue is full drops the SYN, and the kernel's own
 * retries (about two minutes) would outlast both. Returns 0 when connected,
 * else an errno (ETIMEDOUT at the deadline; ECANCELED when the watch said
 * *gone).
 */
static int dial(int s, const tt_sockaddr_t *addr, int64_t deadline_ms, tutti_status_t (*watch)(void *arg),
                void *arg, tutti_status_t *gone)
{
    int64_t tried = tt_now_ms() + DIAL_TRY_MS;
    int err = connect(s, &addr->u.sa, addr->len) == 0 ? 0 : errno;
    while (err == EINPROGRESS || err == EINTR) { /* after EINTR the connection goes on as well */
        if (watch && tt_now_ms() >= tried && (*gone = watch(arg)) != TUTTI_SUCCESS)
            return ECANCELED;
        int64_t left = deadline_ms - tt_now_ms();
        if (left <= 0)
            return ETIMEDOUT;
        struct pollfd p = {.fd = s, .events = POLLOUT};
        int rc = poll(&p, 1, left > 100 ? 100 : (int)left);
        if (rc < 0 && errno != EINTR)
            return errno;
        socklen_t len = sizeof err;
        if (rc > 0 && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len))
            err = errno;
    }
    return err;
}

tutti_status_t tt_sock_connect_watched(const tt_sockaddr_t *addr, int64_t deadline_ms,
                                       tutti_status_t (*watch)(void *arg), void *arg, int *fd)
{
    char where[80];
    tt_sock_addr_str(addr, where, sizeof where);
    int delay_ms = 1;
    for (;;) {
        int s = socket(addr->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0) {
            char why[320];
            TT_ERROR(TT_SUB_INIT, "connecting to %s: socket failed: %s", where,
                     tt_fd_strerror(errno, why, sizeof why));
            return TUTTI_ERR_SYSTEM;
        }
        tutti_status_t gone = TUTTI_SUCCESS;
        int err = dial(s, addr, deadline_ms, watch, arg, &gone);
        if (!err && fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK) == 0) {
            *fd = s; /* blocking, as its users expect */
            return TUTTI_SUCCESS;
        }
        err = err ? err : errno;
        close(s);
        if (gone)
            return gone; /* the set-up failed elsewhere, and the watch said why */
        /* The listener may not exist yet: retry with backoff until the deadline. */
        if (err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN && err != EINTR && err != ENETUNREACH &&
            err != EHOSTUNREACH) {
            TT_ERROR(TT_SUB_INIT, "connect to %s failed: %s", where, strerror(err));
            return TUTTI_ERR_SYSTEM;
        }
        gone = watch ? watch(arg) : TUTTI_SUCCESS;
        if (gone)
            return gone;
        if (tt_now_ms() + delay_ms >= deadline_ms) {
            TT_ERROR(TT_SUB_INIT, "connect to %s timed out: %s", where, strerror(err));
            return TUTTI_ERR_TIMEOUT;
        }
        usleep((useconds_t)delay_ms * 1000);
        if (delay_ms < 100)
            delay_ms *= 2;
    }
}

tutti_status_t tt_sock_connect_once(const tt_sockaddr_t *addr, int64_t deadline_ms, int *fd)
{
    int s = socket(addr->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return TUTTI_ERR_SYSTEM;
    tutti_status_t unused = TUTTI_SUCCESS;
    int err = dial(s, addr, deadline_ms, NULL, NULL, &unused);
    if (!err && fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK))
        err = errno;
    if (err) {
        close(s);
        return err == ETIMEDOUT ? TUTTI_ERR_TIMEOUT : TUTTI_ERR_PEER_FAILED;
    }
    *fd = s;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_sock_accept(int listen_fd, int64_t deadline_ms, int *fd)
{
    for (;;) {
        int rc = wait_fd(listen_fd, POLLIN, deadline_ms);
        if (rc == 0)
            return TUTTI_ERR_TIMEOUT;
        if (rc < 0) {
            TT_ERROR(TT_SUB_INIT, "poll on listening socket failed: %s", strerror(errno));
            return TUTTI_ERR_SYSTEM;
        }
        int s = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (s >= 0) {
            *fd = s;
            return TUTTI_SUCCESS;
        }
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
            char why[320];
            TT_ERROR(TT_SUB_INIT, "accept failed: %s", tt_fd_strerror(errno, why, sizeof why));
            return TUTTI_ERR_SYSTEM;
        }
    }
}

tutti_status_t tt_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return TUTTI_ERR_PEER_FAILED;
        int rc = wait_fd(fd, POLLOUT, deadline_ms);
        if (rc == 0)
            return TUTTI_ERR_TIMEOUT;
        if (rc < 0)
            return TUTTI_ERR_SYSTEM;
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ms)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            return TUTTI_ERR_PEER_FAILED;
        int rc = wait_fd(fd, POLLIN, deadline_ms);
        if (rc == 0)
            return TUTTI_ERR_TIMEOUT;
        if (rc < 0)
            return TUTTI_ERR_SYSTEM;
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_hello_send(int fd, const unsigned char *key, int rank, int nranks, int channel,
                             int64_t deadline_ms)
{
    tt_hello_t h = {.magic = TT_HELLO_MAGIC, .rank = rank, .nranks = nranks, .channel = channel};
    memcpy(h.key, key, TT_KEY_BYTES);
    return tt_sock_send_all(fd, &h, sizeof h, deadline_ms);
}

int tt_hello_matches(const tt_hello_t *h, const unsigned char *key)
{
    unsigned diff = h->magic != TT_HELLO_MAGIC;
    for (int i = 0; i < TT_KEY_BYTES; i++) /* constant time: no early exit */
        diff |= (unsigned)(h->key[i] ^ key[i]);
    return diff == 0;
}

tutti_status_t tt_hello_recv(int fd, const unsigned char *key, int64_t deadline_ms, tt_hello_t *out)
{
    tt_sockaddr_t peer = {.len = sizeof peer.u};
    socklen_t plen = sizeof peer.u;
    char from[80] = "unknown";
    if (getpeername(fd, &peer.u.sa, &plen) == 0)
        tt_sock_addr_str(&peer, from, sizeof from);
    tutti_status_t st = tt_sock_recv_all(fd, out, sizeof *out, deadline_ms);
    if (st != TUTTI_SUCCESS) {
        TT_WARN(TT_SUB_INIT, "refused connection from %s: no complete hello (%s)", from, tutti_strerror(st));
        return TUTTI_ERR_AUTH;
    }
    if (!tt_hello_matches(out, key)) {
        TT_WARN(TT_SUB_INIT, "refused connection from %s: wrong key", from);
        return TUTTI_ERR_AUTH;
    }
    return TUTTI_SUCCESS;
}
