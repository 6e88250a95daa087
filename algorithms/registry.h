/* SPDX-License-Identifier: MIT */
/* The algorithm registry: which algorithms exist (algorithms/), by name. */
#ifndef TT_REGISTRY_H
#define TT_REGISTRY_H

#include "sched/schedule.h"

extern const tt_algorithm_t *const tt_algorithms[];
extern const int tt_num_algorithms;

/* The registered algorithm with this name, or NULL. */
const tt_algorithm_t *tt_algo_named(const char *name);

#endif
