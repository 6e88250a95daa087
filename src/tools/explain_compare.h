/* SPDX-License-Identifier: MIT */
/* tutti-explain --compare: every algorithm of a collective on the cost
 * model beside its textbook formula, and why they differ, term by term. */
#ifndef TT_EXPLAIN_COMPARE_H
#define TT_EXPLAIN_COMPARE_H
#include <stddef.h>

#include "tune/policy.h"

/* Prints the table for args (rank ignored) on a buffer of bytes of
 * elements of elem bytes, nodes hosts; 0. */
int tt_explain_compare(tt_algo_policy_t *policy, const tt_coll_args_t *args, size_t bytes, size_t elem,
                       int nodes);
#endif
