/* SPDX-License-Identifier: MIT */
/* The machine's runnable tasks, from /proc/loadavg, sampled sparingly. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/load.h"

#define SAMPLE_EVERY_NS 5000000 /* a read costs a system call: at most one per 5 ms per process */

static int loadavg_fd = -1;
static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static _Atomic int64_t sampled_ns; /* 0: never */
static _Atomic int runnable = -1;

static void open_loadavg(void)
{
    loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
}

/* "0.52 0.58 0.59 3/1021 12345": the fourth field's numerator. */
static int read_runnable(void)
{
    char text[128];
    ssize_t n = pread(loadavg_fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    int running, total;
    return sscanf(text, "%*s %*s %*s %d/%d", &running, &total) == 2 ? running : -1;
}

int tt_load_runnable(void)
{
    int64_t now = tt_now_ns();
    int64_t then = atomic_load_explicit(&sampled_ns, memory_order_relaxed);
    if (now - then < SAMPLE_EVERY_NS)
        return atomic_load_explicit(&runnable, memory_order_relaxed);
    /* One thread samples; the others keep the last value meanwhile. */
    if (!atomic_compare_exchange_strong(&sampled_ns, &then, now))
        return atomic_load_explicit(&runnable, memory_order_relaxed);
    pthread_once(&open_once, open_loadavg);
    int r = loadavg_fd >= 0 ? read_runnable() : -1;
    atomic_store_explicit(&runnable, r, memory_order_relaxed);
    return r;
}

int tt_load_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
