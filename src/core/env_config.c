/* SPDX-License-Identifier: MIT */
/* The table of TUTTI_* variables and their parsers; the only getenv() of TUTTI_*. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env_config.h"
#include "core/log.h"

const tt_config_entry_t tt_config_entries[TT_CFG_COUNT] = {
#define TT_CFG_ENTRY(id, type, def, help) [TT_CFG_##id] = {"TUTTI_" #id, TT_CFG_TYPE_##type, def, help},
    TT_CONFIG_TABLE(TT_CFG_ENTRY)
#undef TT_CFG_ENTRY
};

int tt_parse_int(const char *text, int64_t *out)
{
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int tt_parse_size(const char *text, uint64_t *out)
{
    if (!text || !*text || *text == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

const char *tt_config_str(tt_config_id_t id)
{
    const char *v = getenv(tt_config_entries[id].name);
    return v ? v : tt_config_entries[id].def;
}

int tt_config_is_set(tt_config_id_t id)
{
    return getenv(tt_config_entries[id].name) != NULL;
}

static int config_parse(tt_config_id_t id, const char *text, int64_t *out)
{
    uint64_t size;
    switch (tt_config_entries[id].type) {
    case TT_CFG_TYPE_SIZE:
        if (tt_parse_size(text, &size) || size > INT64_MAX)
            return -1;
        *out = (int64_t)size;
        return 0;
    case TT_CFG_TYPE_INT: return tt_parse_int(text, out);
    default: return -1;
    }
}

int64_t tt_config_int(tt_config_id_t id)
{
    int64_t v = 0;
    const char *text = tt_config_str(id);
    if (config_parse(id, text, &v) == 0)
        return v;
    TT_WARN(TT_SUB_CONFIG, "%s=%s is malformed; using the default %s", tt_config_entries[id].name, text,
            tt_config_entries[id].def);
    config_parse(id, tt_config_entries[id].def, &v);
    return v;
}

tutti_status_t tt_config_check(char *msg, size_t msglen)
{
    for (int id = 0; id < TT_CFG_COUNT; id++) {
        const char *text = getenv(tt_config_entries[id].name);
        int64_t v;
        if (!text || tt_config_entries[id].type == TT_CFG_TYPE_STR)
            continue;
        if (config_parse(id, text, &v)) {
            snprintf(msg, msglen, "%s=%s is not a valid %s", tt_config_entries[id].name, text,
                     tt_config_entries[id].type == TT_CFG_TYPE_SIZE ? "size" : "number");
            return TUTTI_ERR_CONFIG;
        }
    }
    return TUTTI_SUCCESS;
}
