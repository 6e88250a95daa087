/* SPDX-License-Identifier: MIT */
/* tutti-explain --html: the interactive page of every algorithm of a
 * collective, at several rank counts and sizes, from one file. */
#ifndef TT_EXPLAIN_PAGE_H
#define TT_EXPLAIN_PAGE_H
#include <stddef.h>

#include "tune/policy.h"

typedef struct {
    tt_coll_t coll;
    const tt_algorithm_t *algo; /* shown first; NULL: the collective's first */
    int first_ranks, max_ranks; /* shown first; the most the page offers */
    int nodes, root;
    size_t first_bytes, elem;
} tt_page_opts_t;

/* Writes the page to path. 0, or 1 with a message on stderr. */
int tt_explain_page(const char *path, const tt_page_opts_t *o, const tt_algo_policy_t *policy);
#endif
