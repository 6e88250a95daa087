/* SPDX-License-Identifier: MIT */
/*
 * Errors recorded where they are found (error.c), for tutti_comm_last_error.
 */
#ifndef TT_COMM_ERROR_H
#define TT_COMM_ERROR_H

#include "comm/comm.h"

/* Records what went wrong for tutti_comm_last_error (comm may be NULL) and
 * logs it: for the place that finds the fault. Returns st so callers can
 * `return tt_comm_error(...)`. */
tutti_status_t tt_comm_error(tt_comm_t *comm, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same, logged under subsystem sub. */
tutti_status_t tt_comm_error_in(tt_comm_t *comm, int sub, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records an error that the code which found it has logged already (a bad
 * TUTTI_* value is logged once per process however often it is checked);
 * logs nothing. */
tutti_status_t tt_comm_error_logged(tt_comm_t *comm, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records context for a fault a lower layer already logged, followed by
 * that fault's text (the last one logged on this thread since
 * tt_log_fault_mark); logs nothing. */
tutti_status_t tt_comm_context(tt_comm_t *comm, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* This thread's last error (error.c), what tutti_comm_last_error says
 * without a communicator. */
const char *tt_comm_thread_error(void);

#endif
