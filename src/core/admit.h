/* SPDX-License-Identifier: MIT */
/*
 * Admission on a listening socket: many connections are served at once,
 * each must present its keyed hello within a short deadline, and the
 * number waiting is bounded, so connections without the key (silent ones,
 * half-sent hellos, a flood) cannot hold up the ranks that have it.
 */
#ifndef TT_ADMIT_H
#define TT_ADMIT_H

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

typedef struct {
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
} tt_admit_t;

/* Serves listen_fd (made non-blocking) for connections presenting key. */
void tt_admit_init(tt_admit_t *a, int listen_fd, const unsigned char *key, int sub, const char *what);
/*
 * Waits until a connection presents a hello with the key, then hands over
 * its socket (non-blocking) and hello; TUTTI_ERR_TIMEOUT at deadline_ms.
 * A connection that closes, sends a wrong key or no complete hello in
 * time, or is the oldest waiting when TT_ADMIT_PENDING others wait, is
 * closed and logged once (a warning naming its address and why).
 */
tutti_status_t tt_admit_next(tt_admit_t *a, int64_t deadline_ms, int *fd, tt_hello_t *hello);
/* Closes the connections still waiting (not the listening socket). */
void tt_admit_close(tt_admit_t *a);
/* An admission on the heap (it is large), as tt_admit_init makes it, with
 * watch (may be NULL) asked between waits; NULL when out of memory. */
tt_admit_t *tt_admit_new(int listen_fd, const unsigned char *key, int sub, const char *what,
                         tutti_status_t (*watch)(void *arg), void *watch_arg);
/* tt_admit_close, then frees a. */
void tt_admit_free(tt_admit_t *a);

#endif
