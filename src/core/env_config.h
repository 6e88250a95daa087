/* SPDX-License-Identifier: MIT */
/* Typed access to the TUTTI_* variables: the core's (config_table.h) and
 * the transports' own tables. */
#ifndef TT_ENV_CONFIG_H
#define TT_ENV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/config_table.h"
#include "tutti.h"

/* A table of variables is made from two lists: rows X(id, type, default,
 * help) and rules R(id, ...) (the fields of a tt_config_rule_t). These turn
 * them into ids (TT_CFG_<id>), entries and rules. */
#define TT_CONFIG_ID(id, type, def, help) TT_CFG_##id,
#define TT_CONFIG_ENTRY(id, type, def, help) [TT_CFG_##id] = {"TUTTI_" #id, TT_CFG_TYPE_##type, def, help},
#define TT_CONFIG_RULE(id, ...) [TT_CFG_##id] = {.set = 1, __VA_ARGS__},

/* The core's variables, by id. */
typedef enum { TT_CONFIG_TABLE(TT_CONFIG_ID) TT_CFG_COUNT } tt_config_id_t;

typedef enum { TT_CFG_TYPE_STR, TT_CFG_TYPE_INT, TT_CFG_TYPE_SIZE } tt_config_type_t;

typedef struct {
    const char *name; /* "TUTTI_TIMEOUT" */
    tt_config_type_t type;
    const char *def;
    const char *help;
} tt_config_entry_t;

/* Ranks must set the variable alike: every rank of the job, or every rank
 * of each host (what the host's ranks share in memory). */
enum { TT_CFG_AGREE_JOB = 1, TT_CFG_AGREE_HOST };

/* What a variable allows beyond its type (TT_CONFIG_RULES in config_table.h). */
typedef struct {
    int set; /* the variable has a rule */
    int64_t min, max;
    int zero_ok;
    int64_t multiple;
    const char *words;
    int list, hex, hostport;
    int agreed; /* TT_CFG_AGREE_*, or 0 */
} tt_config_rule_t;

/*
 * A table of variables: the core's (config_table.h), or one a transport
 * brings in its ops (transports/<name>/). Together they are the one list of
 * TUTTI_* variables, which tutti-info -e prints and tutti(7) documents.
 */
typedef struct {
    const char *owner; /* "core", or the transport's name */
    const tt_config_entry_t *entries;
    const tt_config_rule_t *rules;
    int count;
} tt_config_table_t;

/* Defines table name from the lists LIST (rows) and RULES. */
#define TT_CONFIG_TABLE_DEFINE(name, owner_name, LIST, RULES)                                                \
    static const tt_config_entry_t name##_entries[] = {LIST(TT_CONFIG_ENTRY)};                               \
    static const tt_config_rule_t name##_rules[sizeof name##_entries / sizeof name##_entries[0]] = {         \
        RULES(TT_CONFIG_RULE)};                                                                              \
    const tt_config_table_t name = {owner_name, name##_entries, name##_rules,                                \
                                    (int)(sizeof name##_entries / sizeof name##_entries[0])}

extern const tt_config_table_t tt_config_core;

/* The variable's value from the environment, or its default when it is
 * unset or empty. */
const char *tt_config_table_str(const tt_config_table_t *t, int id);
/* Whether the variable is set in the environment. */
int tt_config_table_is_set(const tt_config_table_t *t, int id);
/*
 * Parsed value. A value that does not parse or breaks the variable's rule
 * is warned about once and the default is used, so reading never aborts a
 * job; tt_config_check() is what turns such values into an error.
 */
int64_t tt_config_table_int(const tt_config_table_t *t, int id);
/* Whether text is a valid value of the variable (0) or not (-1). */
int tt_config_table_valid(const tt_config_table_t *t, int id, const char *text);
/* What the variable allows, as a phrase: "an integer from 1 to 16". */
void tt_config_table_allowed(const tt_config_table_t *t, int id, char *out, size_t outlen);

/* The same for the core's variables. */
static inline const char *tt_config_str(tt_config_id_t id)
{
    return tt_config_table_str(&tt_config_core, (int)id);
}
static inline int tt_config_is_set(tt_config_id_t id)
{
    return tt_config_table_is_set(&tt_config_core, (int)id);
}
static inline int64_t tt_config_int(tt_config_id_t id)
{
    return tt_config_table_int(&tt_config_core, (int)id);
}
static inline int tt_config_valid(tt_config_id_t id, const char *text)
{
    return tt_config_table_valid(&tt_config_core, (int)id, text);
}
static inline void tt_config_allowed(tt_config_id_t id, char *out, size_t outlen)
{
    tt_config_table_allowed(&tt_config_core, (int)id, out, outlen);
}

/*
 * Checks every TUTTI_* variable set in the environment, the core's and
 * those of the tables in more (NULL-terminated; NULL for none): each
 * invalid value is logged (subsystem config) once per process and value,
 * naming the variable, its value and what is allowed, and gives
 * TUTTI_ERR_CONFIG with the first in msg; a TUTTI_* name that is no
 * variable is warned about once.
 */
tutti_status_t tt_config_check(const tt_config_table_t *const *more, char *msg, size_t msglen);

/* Parsers shared with the tools: "64M" -> 67108864. 0 on success, -1 if malformed. */
int tt_parse_size(const char *text, uint64_t *out);
int tt_parse_int(const char *text, int64_t *out);

#endif
