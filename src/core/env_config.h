/* SPDX-License-Identifier: MIT */
/* Typed access to the TUTTI_* variables of config_table.h. */
#ifndef TT_ENV_CONFIG_H
#define TT_ENV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/config_table.h"
#include "tutti.h"

typedef enum {
#define TT_CFG_ENUM(id, type, def, help) TT_CFG_##id,
    TT_CONFIG_TABLE(TT_CFG_ENUM)
#undef TT_CFG_ENUM
        TT_CFG_COUNT
} tt_config_id_t;

typedef enum { TT_CFG_TYPE_STR, TT_CFG_TYPE_INT, TT_CFG_TYPE_SIZE } tt_config_type_t;

typedef struct {
    const char *name; /* "TUTTI_TIMEOUT" */
    tt_config_type_t type;
    const char *def;
    const char *help;
} tt_config_entry_t;

extern const tt_config_entry_t tt_config_entries[TT_CFG_COUNT];

/* The variable's value from the environment, or its default. */
const char *tt_config_str(tt_config_id_t id);
/* Whether the variable is set in the environment. */
int tt_config_is_set(tt_config_id_t id);
/*
 * Parsed value. A malformed value is logged once and the default is used,
 * so a typo never aborts a job; tt_config_check() reports such typos.
 */
int64_t tt_config_int(tt_config_id_t id);
/* Checks every set variable parses; names the first bad one in msg. */
tutti_status_t tt_config_check(char *msg, size_t msglen);

/* Parsers shared with the tools: "64M" -> 67108864. 0 on success, -1 if malformed. */
int tt_parse_size(const char *text, uint64_t *out);
int tt_parse_int(const char *text, int64_t *out);

#endif
