/* SPDX-License-Identifier: MIT */
/*
 * NCCL_DEBUG and NCCL_DEBUG_SUBSYS, read as tutti's TUTTI_LOG and
 * TUTTI_LOG_SUBSYS (which win where set), and the line that says this
 * libnccl.so.2 is tutti's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "nccl/nccl_int.h"

/* NCCL's subsystem names and the tutti subsystem each falls under. */
static const struct {
    const char *nccl, *tutti;
} subsystems[] = {
    {"INIT", "init"},  {"BOOTSTRAP", "init"}, {"COLL", "coll"},  {"CALL", "coll"},   {"TUNING", "coll"},
    {"P2P", "engine"}, {"PROXY", "engine"},   {"NET", "net"},    {"SHM", "net"},     {"ALLOC", "net"},
    {"REG", "net"},    {"ENV", "config"},     {"GRAPH", "init"}, {"NVLS", "engine"}, {"RAS", "init"},
};
static const char *const tutti_subsystems[] = {"init", "coll", "engine", "net", "config"};
#define NSUB (sizeof tutti_subsystems / sizeof tutti_subsystems[0])

/* NCCL_DEBUG -> a TUTTI_LOG level; NULL: unset or unknown. VERSION
 * only prints the version line; ABORT logs warnings (tutti never aborts
 * the process). */
static const char *level_of(const char *v, int *version_only)
{
    *version_only = 0;
    if (!v)
        return NULL;
    if (!strcasecmp(v, "VERSION")) {
        *version_only = 1;
        return "warn";
    }
    if (!strcasecmp(v, "NONE"))
        return "none";
    if (!strcasecmp(v, "WARN") || !strcasecmp(v, "ABORT"))
        return "warn";
    if (!strcasecmp(v, "INFO"))
        return "info";
    if (!strcasecmp(v, "TRACE"))
        return "trace";
    return NULL;
}

/* NCCL_DEBUG_SUBSYS ("INIT,NET", "^COLL", "ALL") -> "init,net". */
static void subsys_of(const char *v, char *out, size_t len)
{
    int negate = v[0] == '^', chosen[NSUB] = {0};
    char list[256];
    snprintf(list, sizeof list, "%s", v + negate);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < sizeof subsystems / sizeof subsystems[0]; i++)
            for (size_t t = 0; t < NSUB; t++)
                chosen[t] |= !strcasecmp(tok, "ALL") || (!strcasecmp(tok, subsystems[i].nccl) &&
                                                         !strcmp(subsystems[i].tutti, tutti_subsystems[t]));
    out[0] = '\0';
    for (size_t t = 0; t < NSUB; t++)
        if (chosen[t] != negate) {
            size_t used = strlen(out);
            snprintf(out + used, len - used, "%s%s", used ? "," : "", tutti_subsystems[t]);
        }
    if (!out[0]) /* nothing: a name tutti does not know */
        snprintf(out, len, "none");
}

static void apply(void)
{
    int version_only;
    const char *level = level_of(getenv("NCCL_DEBUG"), &version_only);
    const char *subsys_env = getenv("NCCL_DEBUG_SUBSYS");
    char subsys[128] = "";
    if (subsys_env && *subsys_env)
        subsys_of(subsys_env, subsys, sizeof subsys);
    /* NCCL's own lines start "host:pid:tid", which its users' tools split on */
    tt_log_set_fallback(level, subsys[0] ? subsys : NULL, level ? "host,pid,tid" : NULL);
    int major, minor, patch;
    tutti_get_version(&major, &minor, &patch);
    const char *line = "libnccl.so.2 from tutti %d.%d.%d (NCCL API %d.%d.%d): host and device buffers";
    if (version_only)
        tt_log_write(TT_LOG_INFO, TT_SUB_INIT, line, major, minor, patch, TT_NCCL_MAJOR, TT_NCCL_MINOR,
                     TT_NCCL_PATCH);
    else
        TT_INFO(TT_SUB_INIT, line, major, minor, patch, TT_NCCL_MAJOR, TT_NCCL_MINOR, TT_NCCL_PATCH);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

void tt_nccl_once(void)
{
    pthread_once(&once, apply);
}

TT_NCCL_EXPORT void pncclResetDebugInit(void)
{
    tt_nccl_once();
    apply();
}
TT_NCCL_ALIAS(ncclResetDebugInit)

TT_NCCL_EXPORT void pncclResetDebugInitInternal(void)
{
    pncclResetDebugInit();
}
TT_NCCL_ALIAS(ncclResetDebugInitInternal)
