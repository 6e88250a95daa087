/* SPDX-License-Identifier: MIT */
/*
 * Admission on a listening socket: many connections are served at once,
 * each must present its keyed hello within a short deadline, and the
 * number waiting is bounded, so connections without the key (silent ones,
 * half-sent hellos, a flood) cannot hold up the ranks that have it.
 */
#ifndef TT_ADMIT_H
#define TT_ADMIT_H

#include <poll.h>
#include <stdint.h>

#include "core/sock.h"
#include "tutti.h"

#define TT_ADMIT_HELLO_MS 2000 /* a connection's hello must be complete this soon */
#define TT_ADMIT_PENDING 64    /* connections waiting for their hello at once */

typedef struct {
    int fd;
    size_t got; /* bytes of the hello received */
    int64_t deadline;
    tt_hello_t hello;
} tt_admit_conn_t;

typedef struct tt_admit {
    int listen_fd;
    unsigned char key[TT_KEY_BYTES];
    int sub;          /* the log subsystem of refusals */
    const char *what; /* "bootstrap root", "tcp": who refuses, in the log */
    /* Asked between waits (at least every 100 ms); non-zero stops
     * admission with that status (the set-up failed elsewhere). */
    tutti_status_t (*watch)(void *arg);
    void *watch_arg;
    int answer_refusals; /* a whole hello with another key is told so before it is closed */
    int npending;
    tt_admit_conn_t pending[TT_ADMIT_PENDING];
    uint64_t refused;
    int hello_ms;     /* how soon a hello must be complete (TT_ADMIT_HELLO_MS unless set) */
    int fd_error;     /* accept failed for want of descriptors (EMFILE, ENFILE), said once */
    int64_t retry_at; /* ... and the listener is not read again before then */
} tt_admit_t;

/* Serves listen_fd (made non-blocking) for connections presenting key. */
void tt_admit_init(tt_admit_t *a, int listen_fd, const unsigned char *key, int sub, const char *what);
/*
 * Waits until a connection presents a hello with the key, then hands over
 * its socket (non-blocking) and hello; TUTTI_ERR_TIMEOUT at deadline_ms.
 * A connection that closes, sends a wrong key or no complete hello in
 * time, or is the oldest waiting when TT_ADMIT_PENDING others wait, is
 * closed and logged once (a warning naming its address and why). Running
 * out of descriptors ends it at once with TUTTI_ERR_SYSTEM (said, with
 * the limit and how to raise it).
 */
tutti_status_t tt_admit_next(tt_admit_t *a, int64_t deadline_ms, int *fd, tt_hello_t *hello);
/* For a caller with a poll loop of its own (the star's thread): the
 * descriptors to poll into fds (room for TT_ADMIT_PENDING + 1: the
 * listener, unless it is resting after running out of descriptors, then
 * each connection owing its hello); *wake is lowered to the next deadline.
 * Returns how many. */
int tt_admit_pollfds(const tt_admit_t *a, int64_t now, struct pollfd *fds, int64_t *wake);
/* Takes what the listener queued (listen_ready: poll said so) and hands
 * over one connection whose keyed hello is complete: 1 and *fd, *hello;
 * else 0. Never blocks. Running out of descriptors is said once and
 * rests the listener a moment (fd_error). */
int tt_admit_try(tt_admit_t *a, int listen_ready, int *fd, tt_hello_t *hello);
/* Closes the connections still waiting (not the listening socket). */
void tt_admit_close(tt_admit_t *a);
/* An admission on the heap (it is large), as tt_admit_init makes it, with
 * watch (may be NULL) asked between waits; NULL when out of memory. */
tt_admit_t *tt_admit_new(int listen_fd, const unsigned char *key, int sub, const char *what,
                         tutti_status_t (*watch)(void *arg), void *watch_arg);
/* tt_admit_close, then frees a. */
void tt_admit_free(tt_admit_t *a);

#endif
