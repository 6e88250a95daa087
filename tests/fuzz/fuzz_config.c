/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: TUTTI_* values as the environment gives them. The first
 * byte picks a variable (the core's or a transport's), the rest is its
 * value; every reader of it runs: the typed parsers, the check of every
 * table, the algorithm policy.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/env_config.h"
#include "transports/transport.h"
#include "tune/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    setenv("TUTTI_LOG", "none", 0); /* a bad value is logged each time: keep the output readable */
    const tt_config_table_t *const *more = tt_transport_configs();
    const tt_config_table_t *t = &tt_config_core;
    int id = data[0];
    for (int k = 0; id >= t->count; k++) { /* the core's variables, then each transport's, over and over */
        id -= t->count;
        t = more[k] ? more[k] : (k = -1, &tt_config_core);
    }
    char *value = malloc(size);
    if (!value)
        return 0;
    memcpy(value, data + 1, size - 1);
    value[size - 1] = '\0';
    const char *name = t->entries[id].name;
    if (t == &tt_config_core &&
        (id == TT_CFG_LOG || id == TT_CFG_LOG_SUBSYS || id == TT_CFG_TOPO_FILE || id == TT_CFG_TUNING_FILE)) {
        free(value); /* read once per process, or a path: their own targets */
        return 0;
    }
    setenv(name, value, 1);
    int64_t i;
    uint64_t u;
    tt_parse_int(value, &i);
    tt_parse_size(value, &u);
    (void)tt_config_table_str(t, id);
    if (t->entries[id].type != TT_CFG_TYPE_STR)
        (void)tt_config_table_int(t, id);
    char msg[256];
    tt_config_check(more, msg, sizeof msg);
    tt_algo_policy_t policy;
    char err[256];
    tt_algo_policy_from_env(&policy, err, sizeof err);
    unsetenv(name);
    free(value);
    return 0;
}
