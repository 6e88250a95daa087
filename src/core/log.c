/* SPDX-License-Identifier: MIT */
/* Logger: one line per message, "tutti[rank] level subsys: text", on stderr. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/env_config.h"
#include "core/log.h"

static const char *const level_names[] = {"none", "error", "warn", "info", "debug", "trace"};
static const char *const subsys_names[TT_SUB_COUNT] = {"init", "coll", "engine", "net", "config"};

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_level = TT_LOG_WARN;
static unsigned log_subsys_mask = ~0u;
static int log_rank = -1;
static char fallback_level[16], fallback_subsys[128]; /* tt_log_set_fallback's, "" when none */

static void log_read_config(void)
{
    pthread_mutex_lock(&log_lock);
    const char *level = tt_config_str(TT_CFG_LOG);
    if (!tt_config_is_set(TT_CFG_LOG) && fallback_level[0])
        level = fallback_level;
    log_level = TT_LOG_WARN; /* where the name is unknown */
    for (int i = 0; i <= TT_LOG_TRACE; i++)
        if (strcmp(level, level_names[i]) == 0)
            log_level = i;

    const char *subsys = tt_config_str(TT_CFG_LOG_SUBSYS);
    if (!tt_config_is_set(TT_CFG_LOG_SUBSYS) && fallback_subsys[0])
        subsys = fallback_subsys;
    log_subsys_mask = ~0u;
    if (strcmp(subsys, "all") != 0 && subsys[0] != '\0') {
        log_subsys_mask = 0;
        char list[256];
        snprintf(list, sizeof list, "%s", subsys);
        char *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            for (int i = 0; i < TT_SUB_COUNT; i++)
                if (strcmp(tok, subsys_names[i]) == 0)
                    log_subsys_mask |= 1u << i;
    }
    pthread_mutex_unlock(&log_lock);
}

void tt_log_init(void)
{
    pthread_once(&log_once, log_read_config);
}

void tt_log_set_fallback(const char *level, const char *subsys)
{
    tt_log_init();
    pthread_mutex_lock(&log_lock);
    snprintf(fallback_level, sizeof fallback_level, "%s", level ? level : "");
    snprintf(fallback_subsys, sizeof fallback_subsys, "%s", subsys ? subsys : "");
    pthread_mutex_unlock(&log_lock);
    log_read_config();
}

void tt_log_set_rank(int rank)
{
    log_rank = rank;
}

int tt_log_enabled(tt_log_level_t level, tt_log_subsys_t sub)
{
    tt_log_init();
    return (int)level <= log_level && (log_subsys_mask & (1u << sub));
}

static void log_print(tt_log_level_t level, tt_log_subsys_t sub, const char *text)
{
    char line[1024];
    if (log_rank >= 0)
        snprintf(line, sizeof line - 1, "tutti[%d] %s %s: %s", log_rank, level_names[level],
                 subsys_names[sub], text);
    else
        snprintf(line, sizeof line - 1, "tutti %s %s: %s", level_names[level], subsys_names[sub], text);
    /* One fputs of a whole line keeps lines of concurrent ranks unmixed. */
    size_t len = strlen(line);
    line[len] = '\n';
    line[len + 1] = '\0';
    fputs(line, stderr);
}

void tt_log_write(tt_log_level_t level, tt_log_subsys_t sub, const char *fmt, ...)
{
    char text[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_print(level, sub, text);
}

static _Thread_local char last_fault[512];

void tt_log_fault(tt_log_level_t level, tt_log_subsys_t sub, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_fault, sizeof last_fault, fmt, ap);
    va_end(ap);
    if (tt_log_enabled(level, sub))
        log_print(level, sub, last_fault);
}

void tt_log_fault_mark(void)
{
    last_fault[0] = '\0';
}

const char *tt_log_last_fault(void)
{
    return last_fault;
}
