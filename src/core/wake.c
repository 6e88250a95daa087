/* SPDX-License-Identifier: MIT */
/* Wake-up descriptors for a thread that sleeps in poll(2): eventfds. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "core/wake.h"

int tt_wake_open(void)
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        TT_WARN(TT_SUB_INIT, "eventfd failed (%s): waits wake up every few milliseconds to look instead",
                strerror(errno));
    return fd;
}

void tt_wake_ring(int fd)
{
    uint64_t one = 1;
    /* Only EAGAIN can fail here (the counter is saturated): then it is
     * readable already, which is all a ring has to achieve. */
    if (fd >= 0 && write(fd, &one, sizeof one) < 0)
        return;
}

void tt_wake_drain(int fd)
{
    uint64_t n;
    if (fd >= 0 && read(fd, &n, sizeof n) < 0)
        return; /* EAGAIN: nothing rang */
}

void tt_wake_close(int fd)
{
    if (fd >= 0)
        close(fd);
}
