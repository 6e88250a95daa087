/* SPDX-License-Identifier: MIT */
/*
 * tutti-run's side of its ranks' output: the descriptors it needs (two
 * pipes a rank with --tag-output), and the forwarding of every rank's
 * stdout and stderr, line by line behind "[rank] ", through one epoll set
 * so that any number of ranks costs only the pipes that have something.
 */
#ifndef TT_RUN_OUTPUT_H
#define TT_RUN_OUTPUT_H

#include <stddef.h>

/* A rank's two pipes: [0] its stdout, [1] its stderr. */
typedef struct {
    int fd[2];          /* read ends; -1 once closed */
    char line[2][4096]; /* what came of each stream's current line */
    size_t len[2];
} tt_run_pipes_t;

typedef struct {
    int epfd;
    int wake_fd;          /* also waited on, and drained, each time it is ready */
    tt_run_pipes_t *rank; /* [nranks] when output is tagged, else NULL */
    int nranks;
} tt_run_output_t;

/*
 * Makes sure tutti-run may hold the descriptors n ranks need (2 per rank
 * with tagged output, a few besides), raising the soft limit towards the
 * hard one where it is lower. Returns 0, or -1 after saying on stderr what
 * the limit is and how to raise it.
 */
int tt_run_fd_limit(int n, int tag);
/* Sets o up for n ranks (tagged output: tag != 0), waking on wake_fd too. 0, or -1. */
int tt_run_output_init(tt_run_output_t *o, int n, int tag, int wake_fd);
/* Opens rank's two pipes, close-on-exec; child[0] and child[1] get the
 * write ends, for the child to put on its stdout and stderr. 0, or -1. */
int tt_run_output_pipes(tt_run_output_t *o, int rank, int child[2]);
/* After the fork: closes the write ends here and starts reading rank's pipes. 0, or -1. */
int tt_run_output_watch(tt_run_output_t *o, int rank, int child[2]);
/* Waits up to ms for output or the wake descriptor, and prints every whole line that came. */
void tt_run_output_wait(tt_run_output_t *o, int ms);
/* Once every rank has ended: prints what is left in the pipes, partial lines too, and frees o. */
void tt_run_output_finish(tt_run_output_t *o);

#endif
