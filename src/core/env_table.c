/* SPDX-License-Identifier: MIT */
/*
 * The core's table of TUTTI_* variables and reading a variable's text:
 * what the logger reads its own variables with, so nothing here logs
 * (env_config.c parses, checks and warns, through the logger).
 */
#include <stdlib.h>

#include "core/env_config.h"

TT_CONFIG_TABLE_DEFINE(tt_config_core, "core", TT_CONFIG_TABLE, TT_CONFIG_RULES);

const char *tt_config_table_str(const tt_config_table_t *t, int id)
{
    const char *v = getenv(t->entries[id].name);
    return v && *v ? v : t->entries[id].def;
}

int tt_config_table_is_set(const tt_config_table_t *t, int id)
{
    const char *v = getenv(t->entries[id].name);
    return v && *v; /* empty counts as unset, as tt_config_table_str reads it */
}
