/* SPDX-License-Identifier: MIT */
/*
 * An LD_PRELOAD library for perf/scale/scale-bench: counts the bytes a
 * process sends and receives on its sockets (TCP and Unix, any thread),
 * from the first call until the process calls sockcount_mark(), found
 * with dlsym(RTLD_DEFAULT) by the probes once their communicator is made
 * and has run its first collective. It wraps the C library's calls that
 * move bytes through a descriptor (read, write, readv, writev, send,
 * sendto, sendmsg, sendmmsg, recv, recvfrom, recvmsg, recvmmsg and the
 * fortified __read_chk, __recv_chk, __recvfrom_chk) and counts only what
 * they moved on sockets (fstat: S_ISSOCK), so the figure does not depend on
 * any library's own accounting. After the mark every call goes straight
 * through. Bytes moved by raw system calls, io_uring or shared memory are
 * not seen.
 *
 *     cc -shared -fPIC -O2 -o libsockcount.so perf/scale/sockcount.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* What sockcount_mark() hands back. */
typedef struct {
    unsigned long long sent, received;         /* bytes */
    unsigned long long send_calls, recv_calls; /* calls that moved at least a byte */
} sockcount_t;

static _Atomic unsigned long long sent, received, send_calls, recv_calls;
static atomic_int marked;

sockcount_t sockcount_mark(void);

sockcount_t sockcount_mark(void)
{
    atomic_store(&marked, 1);
    return (sockcount_t){atomic_load(&sent), atomic_load(&received), atomic_load(&send_calls),
                         atomic_load(&recv_calls)};
}

static int is_socket(int fd)
{
    int saved = errno;
    struct stat st;
    int sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    errno = saved;
    return sock;
}

/* Counts n bytes moved on fd, one way or the other. */
static void count(int fd, ssize_t n, int out)
{
    if (n <= 0 || atomic_load_explicit(&marked, memory_order_relaxed) || !is_socket(fd))
        return;
    atomic_fetch_add(out ? &sent : &received, (unsigned long long)n);
    atomic_fetch_add(out ? &send_calls : &recv_calls, 1);
}

/* The next definition of name (the C library's). */
#define REAL(name)                                                                                           \
    static __typeof__(name) *real;                                                                           \
    if (!real)                                                                                               \
    real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

ssize_t read(int fd, void *buf, size_t len)
{
    REAL(read);
    ssize_t n = real(fd, buf, len);
    count(fd, n, 0);
    return n;
}

ssize_t write(int fd, const void *buf, size_t len)
{
    REAL(write);
    ssize_t n = real(fd, buf, len);
    count(fd, n, 1);
    return n;
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    REAL(readv);
    ssize_t n = real(fd, iov, iovcnt);
    count(fd, n, 0);
    return n;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    REAL(writev);
    ssize_t n = real(fd, iov, iovcnt);
    count(fd, n, 1);
    return n;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    REAL(send);
    ssize_t n = real(fd, buf, len, flags);
    count(fd, n, 1);
    return n;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
    REAL(sendto);
    ssize_t n = real(fd, buf, len, flags, to, tolen);
    count(fd, n, 1);
    return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    REAL(sendmsg);
    ssize_t n = real(fd, msg, flags);
    count(fd, n, 1);
    return n;
}

int sendmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags)
{
    REAL(sendmmsg);
    int n = real(fd, msgs, vlen, flags);
    for (int i = 0; i < n; i++)
        count(fd, (ssize_t)msgs[i].msg_len, 1);
    return n;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    REAL(recv);
    ssize_t n = real(fd, buf, len, flags);
    count(fd, n, 0);
    return n;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
    REAL(recvfrom);
    ssize_t n = real(fd, buf, len, flags, from, fromlen);
    count(fd, n, 0);
    return n;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    REAL(recvmsg);
    ssize_t n = real(fd, msg, flags);
    count(fd, n, 0);
    return n;
}

int recvmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags, struct timespec *timeout)
{
    REAL(recvmmsg);
    int n = real(fd, msgs, vlen, flags, timeout);
    for (int i = 0; i < n; i++)
        count(fd, (ssize_t)msgs[i].msg_len, 0);
    return n;
}

/* The fortified forms (_FORTIFY_SOURCE) check the length, then read. */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
    REAL(__read_chk);
    ssize_t n = real(fd, buf, len, buflen);
    count(fd, n, 0);
    return n;
}

ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
    REAL(__recv_chk);
    ssize_t n = real(fd, buf, len, buflen, flags);
    count(fd, n, 0);
    return n;
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *from,
                       socklen_t *fromlen);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *from,
                       socklen_t *fromlen)
{
    REAL(__recvfrom_chk);
    ssize_t n = real(fd, buf, len, buflen, flags, from, fromlen);
    count(fd, n, 0);
    return n;
}
