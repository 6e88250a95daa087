/* SPDX-License-Identifier: MIT */
/*
 * The textbook alpha-beta-gamma cost of each algorithm (as Thakur,
 * Rabenseifner and Gropp, and Chan et al. write them), for tutti-explain to
 * print beside the cost model's prediction: alpha per message, beta per
 * byte sent, gamma per byte reduced, n the bytes of the whole vector, one
 * slice, no crowding.
 */
#ifndef TT_EXPLAIN_FORMULA_H
#define TT_EXPLAIN_FORMULA_H

#include <stddef.h>

#include "tune/cost.h"

/* A cost's coefficients: messages in sequence (times alpha), multiples of
 * n sent on the critical path (times n beta) and reduced (times n gamma). */
typedef struct {
    double alpha, beta, gamma;
} tt_terms_t;

/* The formula of algo for coll on p ranks ("2(p-1) a + 2(p-1)/p n b + ...")
 * and its value in seconds for n bytes on link c. 0, or -1 when there is
 * no textbook form (then text says so). */
int tt_explain_formula(const tt_algorithm_t *algo, tt_coll_t coll, int p, double n, const tt_link_cost_t *c,
                       char *text, size_t len, double *seconds);
/* The textbook formula's coefficients for algo's coll on p ranks (the
 * fold's included). 0, or -1 when there is no textbook form. */
int tt_explain_formula_terms(const tt_algorithm_t *algo, tt_coll_t coll, int p, tt_terms_t *out);

#endif
