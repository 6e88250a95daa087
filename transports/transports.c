/* SPDX-License-Identifier: MIT */
/* The transports built into this library, in default priority order
 * (TUTTI_TRANSPORTS picks and orders them). */
#include <pthread.h>
#include <stddef.h>

#include "transports/transport.h"

const tt_transport_ops_t *const tt_transports[] = {&tt_cuda_ipc_ops, &tt_shm_ops,
#ifdef TT_HAVE_VERBS
                                                   &tt_verbs_ops,
#endif
                                                   &tt_tcp_ops, NULL};

static const tt_config_table_t *configs[sizeof tt_transports / sizeof tt_transports[0]];
static pthread_once_t configs_once = PTHREAD_ONCE_INIT;

static void gather_configs(void)
{
    int n = 0;
    for (int t = 0; tt_transports[t]; t++)
        if (tt_transports[t]->config)
            configs[n++] = tt_transports[t]->config;
}

const tt_config_table_t *const *tt_transport_configs(void)
{
    pthread_once(&configs_once, gather_configs);
    return configs;
}
