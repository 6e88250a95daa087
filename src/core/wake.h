/* SPDX-License-Identifier: MIT */
/*
 * A thread's wake-up call: an eventfd that another thread of the process
 * writes when the sleeper must look again (abort, news from the other
 * ranks). It is level-triggered: a call made before the sleep began is
 * not lost, because the sleeper polls it and drains it only after waking.
 */
#ifndef TT_WAKE_H
#define TT_WAKE_H

/* A new wake-up descriptor (non-blocking, close-on-exec), or -1 after
 * logging why; callers then fall back on sleeps of bounded length. */
int tt_wake_open(void);
/* Wakes whoever sleeps on fd (or the next to sleep); fd < 0: nothing. */
void tt_wake_ring(int fd);
/* Clears what rang, after the sleep. */
void tt_wake_drain(int fd);
void tt_wake_close(int fd);

#endif
