/* SPDX-License-Identifier: MIT */
/* The algorithm registry's table, made from TT_ALGORITHM_LIST. */
#include <stddef.h>
#include <string.h>

#include "algorithms/registry.h"

#define TT_ALGORITHM_ENTRY(name) &tt_algo_##name,
const tt_algorithm_t *const tt_algorithms[] = {TT_ALGORITHM_LIST(TT_ALGORITHM_ENTRY)};
const int tt_num_algorithms = sizeof tt_algorithms / sizeof tt_algorithms[0];

const tt_algorithm_t *tt_algo_named(const char *name)
{
    for (int i = 0; i < tt_num_algorithms; i++)
        if (strcmp(tt_algorithms[i]->name, name) == 0)
            return tt_algorithms[i];
    return NULL;
}
