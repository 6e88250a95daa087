/* SPDX-License-Identifier: MIT */
/* tutti-explain's algorithm names: found in any case, and listed on a typo. */
#ifndef TT_EXPLAIN_NAMES_H
#define TT_EXPLAIN_NAMES_H
#include <stdio.h>

#include "sched/schedule.h"

/* The registered algorithm of this name in any case, "_" and "-" not
 * counting (Ring, double-tree); NULL if none. */
const tt_algorithm_t *tt_explain_algo_find(const char *name);
/* Tells f that typed names no algorithm of coll, suggests the algorithms
 * whose name or summary holds the typed words, and lists those of coll. */
void tt_explain_algo_help(FILE *f, const char *typed, tt_coll_t coll);
#endif
