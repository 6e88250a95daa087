/* SPDX-License-Identifier: MIT */
/* The algorithm registry: every algorithm of algorithms/, by name, read by
 * the tuner, the runner, the tools and the simulator. */
#ifndef TT_REGISTRY_H
#define TT_REGISTRY_H

#include "sched/schedule.h"

/* Every algorithm, one line each: X(name) registers the
 * `const tt_algorithm_t tt_algo_<name>` of algorithms/<name>.c. The order
 * is the fallback preference per collective (the tuner's reference is the
 * first one that serves a call). Adding an algorithm is its file and one
 * line here (and the file in algorithms/Makefile.include, as every source);
 * test-explain fails for a built algorithm file that is not listed. */
#define TT_ALGORITHM_LIST(X)                                                                                 \
    X(ring)                                                                                                  \
    X(recursive_doubling)                                                                                    \
    X(rabenseifner)                                                                                          \
    X(double_tree)                                                                                           \
    X(direct)                                                                                                \
    X(chain)                                                                                                 \
    X(binomial)                                                                                              \
    X(scatter_allgather)                                                                                     \
    X(pairwise)                                                                                              \
    X(bruck)                                                                                                 \
    X(dissemination)                                                                                         \
    X(p2p)                                                                                                   \
    X(hierarchical)                                                                                          \
    X(ordered)

#define TT_ALGORITHM_DECLARE(name) extern const tt_algorithm_t tt_algo_##name;
TT_ALGORITHM_LIST(TT_ALGORITHM_DECLARE)
#undef TT_ALGORITHM_DECLARE

extern const tt_algorithm_t *const tt_algorithms[];
extern const int tt_num_algorithms;

/* The registered algorithm with this name, or NULL. */
const tt_algorithm_t *tt_algo_named(const char *name);

#endif
