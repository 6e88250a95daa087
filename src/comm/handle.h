/* SPDX-License-Identifier: MIT */
/*
 * The public handles (handle.c): a slot and a generation, never an address;
 * entering and leaving a communicator, interrupting and waking its calls.
 */
#ifndef TT_COMM_HANDLE_H
#define TT_COMM_HANDLE_H

#include "comm/comm.h"

/*
 * Public handles (handle.c). The value a caller holds is a registry slot
 * and a generation, never the communicator's address, so a destroyed
 * handle stays invalid whatever is allocated later. new returns NULL when
 * the registry is full.
 */
tutti_comm_t tt_comm_handle_new(tt_comm_t *comm);

/* Installs the registry's fork handlers (once). A library above with a
 * registry of its own installs its handlers after these, so that fork takes
 * its lock first, the order in which its calls take both. */
void tt_comm_fork_handlers(void);

/* Takes handle out of the registry: the communicator behind it (NULL when
 * it was not live), with its abort flag raised when abort is set. */
tt_comm_t *tt_comm_handle_take(tutti_comm_t handle, int abort, int *forked);

/* The communicator behind handle, NULL when it is not live; *forked (may
 * be NULL) says it was made by a process this one was forked from. */
tt_comm_t *tt_comm_lookup(tutti_comm_t handle, int *forked);

/*
 * A public call that uses a communicator enters before and leaves after:
 * enter gives the communicator behind handle (live, made by this process;
 * else TUTTI_ERR_INVALID_ARG, said under name), and tutti_comm_abort from
 * another thread interrupts its waits and frees it only once it has left.
 */
tutti_status_t tt_comm_enter(tutti_comm_t handle, const char *name, tt_comm_t **out);
void tt_comm_leave(tt_comm_t *comm);

/* Until no more calls are inside comm than *keep says (read as it
 * changes; NULL: until all have left). */
void tt_comm_wait_idle(tt_comm_t *comm, _Atomic int *keep);

/* Raises the flag the engine reads on every poll: whatever waits on comm
 * stops now (abort and revoke both come through here). */
void tt_comm_interrupt(tt_comm_t *comm);

/* Wakes a call of comm that sleeps in the engine waiting for its peers, so
 * that it looks at once at a flag just raised (aborting); without it the
 * call would see the flag only at its next liveness check (ALIVE_CHECK_NS,
 * src/coll/engine.c). Any thread may call it. */
void tt_comm_wake(tt_comm_t *comm);

#endif
