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

/* The CLOCK_REALTIME instant ns from now, as pthread_cond_timedwait takes
 * it (its condition variables keep their default clock). */
static inline struct timespec tt_realtime_in_ns(int64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec += ns % 1000000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

#endif
