/* SPDX-License-Identifier: MIT */
/*
 * What the suites that stop a rank in the middle of a verbs pair's set-up
 * share (test_verbs_accept.c stops the asking rank, test_verbs_ask.c the
 * answering one): waiting for a flag the other rank raises and for its
 * stop, what a process holds (its threads and descriptors, from /proc), and
 * a decoy socket that takes a just-closed descriptor's number.
 */
#ifndef TT_TEST_VERBS_STALL_H
#define TT_TEST_VERBS_STALL_H

#include <stddef.h>
#include <sys/types.h>

/* The longest the ranks wait for each other's flags. */
#define TT_STALL_WAIT_MS 15000

/* Until *flag (shared between the ranks) is set, TT_STALL_WAIT_MS at most:
 * its value then. */
int tt_stall_wait_flag(const int *flag);

/* Until the process *pid names stopped itself, once *stopping says it is
 * about to: 0 once it is, -1 when it did not in TT_STALL_WAIT_MS. Both are
 * read afresh each time (the other process fills in its pid). */
int tt_stall_wait_stopped(const int *stopping, const pid_t *pid);

/* This process's threads and descriptors now, each list as ",name,...,"
 * (a descriptor with ":what it is", so that a socket tells from a later one
 * under the same number), less what the process keeps across
 * communicators (the load average's file, core/load.c). */
void tt_stall_holdings(char *fds, size_t fds_len, char *tasks, size_t tasks_len);

/* Whether the process holds no thread and no descriptor that it did not
 * hold when fds and tasks were taken: 0, else 1 after saying what (as rank
 * r; a joined thread may take a moment to leave /proc). */
int tt_stall_nothing_left(int r, const char *fds, const char *tasks);

/* Right after fd was closed: a socket that takes its number, as one
 * another thread opens would; the pair's other end into *peer. 0, or -1
 * when none could be made with that number. */
int tt_stall_decoy(int fd, int *peer);

#endif
