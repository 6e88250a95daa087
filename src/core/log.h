/* SPDX-License-Identifier: MIT */
/* The library's only way to print: leveled, per-subsystem messages on stderr. */
#ifndef TT_LOG_H
#define TT_LOG_H

typedef enum {
    TT_LOG_NONE = 0,
    TT_LOG_ERROR,
    TT_LOG_WARN,
    TT_LOG_INFO,
    TT_LOG_DEBUG,
    TT_LOG_TRACE
} tt_log_level_t;

/* Subsystems, selectable with TUTTI_LOG_SUBSYS=init,net,... */
typedef enum {
    TT_SUB_INIT = 0, /* communicator set-up, bootstrap */
    TT_SUB_COLL,     /* argument checks, collectives */
    TT_SUB_ENGINE,   /* schedule execution */
    TT_SUB_NET,      /* transports */
    TT_SUB_CONFIG,   /* TUTTI_* variables */
    TT_SUB_COUNT
} tt_log_subsys_t;

/* Reads TUTTI_LOG / TUTTI_LOG_SUBSYS once; later calls are cheap. */
void tt_log_init(void);
/*
 * For a front end with variables of its own (libnccl's NCCL_DEBUG): the
 * level, subsystems and line prefix (as TUTTI_LOG, TUTTI_LOG_SUBSYS and
 * TUTTI_LOG_PREFIX spell them; NULL: the defaults) to use where those are
 * not set. Applies at once.
 */
void tt_log_set_fallback(const char *level, const char *subsys, const char *prefix);
/* Rank shown in the prefix of this process's messages (-1: none). */
void tt_log_set_rank(int rank);
int tt_log_enabled(tt_log_level_t level, tt_log_subsys_t sub);
void tt_log_write(tt_log_level_t level, tt_log_subsys_t sub, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define TT_LOG(level, sub, ...)                                                                              \
    do {                                                                                                     \
        if (tt_log_enabled(level, sub))                                                                      \
            tt_log_write(level, sub, __VA_ARGS__);                                                           \
    } while (0)
/*
 * Errors and warnings are faults: the text of the last one reported on this
 * thread is kept, printed or not, so that a layer above can name the cause
 * in its own message without logging the fault a second time.
 */
void tt_log_fault(tt_log_level_t level, tt_log_subsys_t sub, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Forgets the last fault, before a step whose failure is to be explained. */
void tt_log_fault_mark(void);
/* Takes text as this thread's last fault without logging it again: one
 * that a helper thread found and logged, which this thread reports. */
void tt_log_fault_adopt(const char *text);
/* The last fault since the mark; "" when none. */
const char *tt_log_last_fault(void);

#define TT_ERROR(sub, ...) tt_log_fault(TT_LOG_ERROR, sub, __VA_ARGS__)
#define TT_WARN(sub, ...) tt_log_fault(TT_LOG_WARN, sub, __VA_ARGS__)
#define TT_INFO(sub, ...) TT_LOG(TT_LOG_INFO, sub, __VA_ARGS__)
#define TT_DEBUG(sub, ...) TT_LOG(TT_LOG_DEBUG, sub, __VA_ARGS__)
#define TT_TRACE(sub, ...) TT_LOG(TT_LOG_TRACE, sub, __VA_ARGS__)

#endif
