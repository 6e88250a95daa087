/* SPDX-License-Identifier: MIT */
/*
 * How busy the machine's CPUs are right now, for a waiting rank choosing
 * between spinning and sleeping: a spin only pays on a core nobody else
 * wants.
 */
#ifndef TT_LOAD_H
#define TT_LOAD_H

/* Tasks runnable on the machine at this moment, the caller included
 * (/proc/loadavg's running count), read at most every few milliseconds
 * and otherwise remembered; -1 where the kernel does not say. Thread-safe. */
int tt_load_runnable(void);
/* The machine's online CPUs (at least 1). */
int tt_load_cpus(void);

#endif
