/* SPDX-License-Identifier: MIT */
/* Logger: one line per message, "tutti[rank] level subsys: text", on stderr,
 * after the time and "host:pid:tid" where TUTTI_LOG_PREFIX asks for them. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/env_config.h"
#include "core/log.h"

static const char *const level_names[] = {"none", "error", "warn", "info", "debug", "trace"};
static const char *const subsys_names[TT_SUB_COUNT] = {"init", "coll", "engine", "net", "config"};

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_level = TT_LOG_WARN;
static unsigned log_subsys_mask = ~0u;
static int log_rank = -1;
/* tt_log_set_fallback's, "" when none */
static char fallback_level[16], fallback_subsys[128], fallback_prefix[64];

/* What TUTTI_LOG_PREFIX puts before each line: logs merged from many hosts
 * and processes are read by these. */
enum { PREFIX_TIME = 1, PREFIX_HOST = 2, PREFIX_PID = 4, PREFIX_TID = 8 };
static unsigned log_prefix;
static char log_host[64];

static unsigned prefix_parse(const char *list)
{
    static const char *const words[] = {"time", "host", "pid", "tid"};
    unsigned mask = 0;
    for (const char *w = list; *w;) {
        size_t n = strcspn(w, ",");
        for (unsigned i = 0; i < sizeof words / sizeof words[0]; i++)
            if (strlen(words[i]) == n && strncmp(w, words[i], n) == 0)
                mask |= 1u << i;
        w += n + (w[n] == ',');
    }
    return mask;
}

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
    const char *prefix = tt_config_str(TT_CFG_LOG_PREFIX);
    if (!tt_config_is_set(TT_CFG_LOG_PREFIX) && fallback_prefix[0])
        prefix = fallback_prefix;
    log_prefix = prefix_parse(prefix);
    if (gethostname(log_host, sizeof log_host) != 0)
        snprintf(log_host, sizeof log_host, "?");
    log_host[sizeof log_host - 1] = '\0';
    pthread_mutex_unlock(&log_lock);
}

void tt_log_init(void)
{
    pthread_once(&log_once, log_read_config);
}

void tt_log_set_fallback(const char *level, const char *subsys, const char *prefix)
{
    tt_log_init();
    pthread_mutex_lock(&log_lock);
    snprintf(fallback_level, sizeof fallback_level, "%s", level ? level : "");
    snprintf(fallback_subsys, sizeof fallback_subsys, "%s", subsys ? subsys : "");
    snprintf(fallback_prefix, sizeof fallback_prefix, "%s", prefix ? prefix : "");
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

/* The time and "host:pid:tid" that TUTTI_LOG_PREFIX asks for, each
 * followed by a space; "" when it asks for none. */
static void log_prefix_text(char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    if (log_prefix & PREFIX_TIME) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        at += strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
        at += (size_t)snprintf(out + at, len - at, ".%06ldZ ", ts.tv_nsec / 1000);
    }
    const char *sep = "";
    if (log_prefix & PREFIX_HOST && at < len)
        at += (size_t)snprintf(out + at, len - at, "%s", log_host), sep = ":";
    if (log_prefix & PREFIX_PID && at < len)
        at += (size_t)snprintf(out + at, len - at, "%s%ld", sep, (long)getpid()), sep = ":";
    if (log_prefix & PREFIX_TID && at < len)
        at += (size_t)snprintf(out + at, len - at, "%s%ld", sep, (long)syscall(SYS_gettid)), sep = ":";
    if (*sep && at < len)
        snprintf(out + at, len - at, " ");
}

static void log_print(tt_log_level_t level, tt_log_subsys_t sub, const char *text)
{
    char prefix[128], line[1024];
    log_prefix_text(prefix, sizeof prefix);
    if (log_rank >= 0)
        snprintf(line, sizeof line - 1, "%stutti[%d] %s %s: %s", prefix, log_rank, level_names[level],
                 subsys_names[sub], text);
    else
        snprintf(line, sizeof line - 1, "%stutti %s %s: %s", prefix, level_names[level], subsys_names[sub],
                 text);
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

void tt_log_fault_adopt(const char *text)
{
    snprintf(last_fault, sizeof last_fault, "%s", text);
}

const char *tt_log_last_fault(void)
{
    return last_fault;
}
