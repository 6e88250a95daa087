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

/* What a variable allows beyond its type (TT_CONFIG_RULES in config_table.h). */
typedef struct {
    int set; /* the variable has a rule */
    int64_t min, max;
    int zero_ok;
    int64_t multiple;
    const char *words;
    int list, hex, hostport;
} tt_config_rule_t;

extern const tt_config_rule_t tt_config_rules[TT_CFG_COUNT];

/* The variable's value from the environment, or its default when it is
 * unset or empty. */
const char *tt_config_str(tt_config_id_t id);
/* Whether the variable is set in the environment. */
int tt_config_is_set(tt_config_id_t id);
/*
 * Parsed value. A value that does not parse or breaks the variable's rule
 * is warned about once and the default is used, so reading never aborts a
 * job; tt_config_check() is what turns such values into an error.
 */
int64_t tt_config_int(tt_config_id_t id);
/* Whether text is a valid value of the variable (0) or not (-1). */
int tt_config_valid(tt_config_id_t id, const char *text);
/* What the variable allows, as a phrase: "an integer from 1 to 16". */
void tt_config_allowed(tt_config_id_t id, char *out, size_t outlen);
/*
 * Checks every TUTTI_* variable set in the environment: each invalid value
 * is logged (subsystem config) once per process and value, naming the
 * variable, its value and what is allowed, and gives TUTTI_ERR_CONFIG with
 * the first in msg; a TUTTI_* name that is no variable is warned about once.
 */
tutti_status_t tt_config_check(char *msg, size_t msglen);

/* Parsers shared with the tools: "64M" -> 67108864. 0 on success, -1 if malformed. */
int tt_parse_size(const char *text, uint64_t *out);
int tt_parse_int(const char *text, int64_t *out);

#endif
