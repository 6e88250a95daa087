/* SPDX-License-Identifier: MIT */
/*
 * The process's descriptor limit: raised to the hard limit before the
 * first communicator connects, and named, with the fix, when a system
 * call fails for want of descriptors (EMFILE, ENFILE).
 */
#ifndef TT_FDLIMIT_H
#define TT_FDLIMIT_H

#include <stddef.h>

/* Raises the soft RLIMIT_NOFILE to the hard one, once per process (a
 * debug line says what it was and is). */
void tt_fd_limit_raise(void);

/* Whether err says the process or the system ran out of descriptors. */
int tt_fd_exhausted(int err);

/* strerror(err), and for EMFILE and ENFILE also the limit in force, how
 * many descriptors are open and how to raise it; into buf. */
const char *tt_fd_strerror(int err, char *buf, size_t len);

#endif
