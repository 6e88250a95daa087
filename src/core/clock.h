/* SPDX-License-Identifier: MIT */
/* Monotonic time in milliseconds and nanoseconds, for deadlines. */
#ifndef TT_CLOCK_H
#define TT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t tt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The same to within a clock tick (a few ms), and cheaper: for stamps taken
 * on every call that only reports read. */
static inline int64_t tt_now_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t tt_now_ms(void)
{
    return tt_now_ns() / 1000000;
}

#endif
