/* SPDX-License-Identifier: MIT */
/* What the transports of one host share: keyed shared segments, and telling a dead peer process. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transports/local.h"
#include "core/log.h"

void *tt_local_create(const char *tp, const char *name, size_t bytes)
{
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        TT_ERROR(TT_SUB_NET, "%s: shm_open(%s) failed: %s", tp, name, strerror(errno));
        return NULL;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0)
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        TT_ERROR(TT_SUB_NET, "%s: sizing %s to %zu bytes or mapping it failed: %s", tp, name, bytes,
                 strerror(err));
        shm_unlink(name);
        return NULL;
    }
    return p;
}

void *tt_local_map(const char *tp, const char *name, size_t bytes, int peer)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        TT_ERROR(TT_SUB_NET, "%s: opening rank %d's segment %s failed: %s", tp, peer, name, strerror(errno));
        return NULL;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        TT_ERROR(TT_SUB_NET, "%s: mapping rank %d's segment failed: %s", tp, peer, strerror(err));
        return NULL;
    }
    return p;
}

int tt_local_keyed(uint32_t magic, uint32_t want_magic, const unsigned char *key,
                   const unsigned char want_key[TT_KEY_BYTES])
{
    unsigned diff = magic != want_magic;
    for (int i = 0; i < TT_KEY_BYTES; i++)
        diff |= (unsigned)(key[i] ^ want_key[i]);
    return diff == 0;
}

int tt_local_watch(int pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int tt_local_gone(int pidfd, int pid)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    /* Without a pidfd (older kernels), kill(pid, 0) still sees a process
     * that is gone, though not one that is a zombie yet. */
    return pidfd >= 0 ? poll(&p, 1, 0) > 0 : kill(pid, 0) == -1 && errno == ESRCH;
}
