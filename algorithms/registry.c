/* SPDX-License-Identifier: MIT */
/* The algorithm registry: every algorithm tutti has, by name. */
#include <stddef.h>
#include <string.h>

#include "algorithms/registry.h"

/* Registration order is the fallback preference per collective. */
const tt_algorithm_t *const tt_algorithms[] = {&tt_algo_ring,
                                               &tt_algo_recursive_doubling,
                                               &tt_algo_rabenseifner,
                                               &tt_algo_double_tree,
                                               &tt_algo_direct,
                                               &tt_algo_bruck,
                                               &tt_algo_chain,
                                               &tt_algo_binomial,
                                               &tt_algo_scatter_allgather,
                                               &tt_algo_pairwise,
                                               &tt_algo_dissemination,
                                               &tt_algo_p2p,
                                               &tt_algo_hierarchical,
                                               &tt_algo_ordered};
const int tt_num_algorithms = sizeof tt_algorithms / sizeof tt_algorithms[0];

const tt_algorithm_t *tt_algo_named(const char *name)
{
    for (int i = 0; i < tt_num_algorithms; i++)
        if (strcmp(tt_algorithms[i]->name, name) == 0)
            return tt_algorithms[i];
    return NULL;
}
