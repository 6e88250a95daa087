/* SPDX-License-Identifier: MIT */
/*
 * Errors recorded where they are found: the communicator's last error
 * (tutti_comm_last_error, in handle.c) and this thread's, for calls that
 * have no communicator yet; logged, or not where a lower layer logged the
 * fault already.
 */
#include <stdarg.h>
#include <stdio.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "core/log.h"

static _Thread_local char thread_error[TT_COMM_ERROR_BYTES];

const char *tt_comm_thread_error(void)
{
    return thread_error;
}

static void record(tt_comm_t *comm, const char *text)
{
    if (comm)
        snprintf(comm->last_error, sizeof comm->last_error, "%s", text);
    snprintf(thread_error, sizeof thread_error, "%s", text);
}

static tutti_status_t report(tt_comm_t *comm, int sub, tutti_status_t st, const char *fmt, va_list ap)
{
    char text[TT_COMM_ERROR_BYTES];
    vsnprintf(text, sizeof text, fmt, ap);
    record(comm, text);
    TT_LOG(TT_LOG_WARN, (tt_log_subsys_t)sub, "%s", text);
    return st;
}

tutti_status_t tt_comm_error(tt_comm_t *comm, tutti_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(comm, TT_SUB_COLL, st, fmt, ap);
    va_end(ap);
    return st;
}

tutti_status_t tt_comm_error_in(tt_comm_t *comm, int sub, tutti_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(comm, sub, st, fmt, ap);
    va_end(ap);
    return st;
}

tutti_status_t tt_comm_error_logged(tt_comm_t *comm, tutti_status_t st, const char *fmt, ...)
{
    char text[TT_COMM_ERROR_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    record(comm, text);
    return st;
}

tutti_status_t tt_comm_context(tt_comm_t *comm, tutti_status_t st, const char *fmt, ...)
{
    char text[TT_COMM_ERROR_BYTES];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    const char *cause = tt_log_last_fault();
    if (*cause && n >= 0 && (size_t)n < sizeof text)
        snprintf(text + n, sizeof text - (size_t)n, ": %s", cause);
    record(comm, text);
    return st;
}
