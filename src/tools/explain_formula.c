/* SPDX-License-Identifier: MIT */
/*
 * Textbook costs. Ranks beyond the largest power of two q below p fold into
 * ranks 0..p-q-1 first and get the result back last, which adds one
 * full-size exchange each way to the recursive algorithms.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/registry.h"
#include "tools/explain_formula.h"

typedef struct {
    const tt_algorithm_t *algo; /* by address: a renamed or removed algorithm does not compile here */
    tt_coll_t coll;
    const char *text;
    /* messages (alpha), bytes sent along the critical path (beta), bytes reduced (gamma), per n */
    double (*a)(double p, double q), (*b)(double p, double q), (*g)(double p, double q);
    int fold; /* adds the fold's terms when p is not a power of two */
} formula_t;

static double lg(double x)
{
    return ceil(log2(x) - 1e-9);
}
static double zero(double p, double q)
{
    (void)p, (void)q;
    return 0;
}
static double one(double p, double q)
{
    (void)p, (void)q;
    return 1;
}
static double two_pm1(double p, double q)
{
    (void)q;
    return 2 * (p - 1);
}
static double pm1(double p, double q)
{
    (void)q;
    return p - 1;
}
static double two_pm1_over_p(double p, double q)
{
    (void)q;
    return 2 * (p - 1) / p;
}
static double pm1_over_p(double p, double q)
{
    (void)q;
    return (p - 1) / p;
}
static double lg_p(double p, double q)
{
    (void)q;
    return lg(p);
}
static double two_lg_p(double p, double q)
{
    (void)q;
    return 2 * lg(p);
}
static double lg_q(double p, double q)
{
    (void)p;
    return lg(q);
}
static double two_lg_q(double p, double q)
{
    (void)p;
    return 2 * lg(q);
}
static double two_qm1_over_q(double p, double q)
{
    (void)p;
    return 2 * (q - 1) / q;
}
static double qm1_over_q(double p, double q)
{
    (void)p;
    return (q - 1) / q;
}
static double half(double p, double q)
{
    (void)p, (void)q;
    return 0.5;
}
/* Bruck's all-to-all: each round sends the blocks whose slot has its bit set. */
static double bruck_blocks_over_p(double p, double q)
{
    (void)q;
    int n = (int)p, blocks = 0;
    for (int d = 1; d < n; d *= 2)
        for (int i = 1; i < n; i++)
            blocks += (i / d) & 1;
    return blocks / p;
}
static double lg_p_plus_pm1(double p, double q)
{
    (void)q;
    return lg(p) + p - 1;
}

static const formula_t formulas[] = {
    {&tt_algo_ring, TT_COLL_ALLREDUCE, "2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma", two_pm1,
     two_pm1_over_p, pm1_over_p, 0},
    {&tt_algo_recursive_doubling, TT_COLL_ALLREDUCE, "lg p (alpha + n beta + n gamma)", lg_q, lg_q, lg_q, 1},
    {&tt_algo_rabenseifner, TT_COLL_ALLREDUCE, "2 lg p alpha + 2(p-1)/p n beta + (p-1)/p n gamma", two_lg_q,
     two_qm1_over_q, qm1_over_q, 1},
    {&tt_algo_double_tree, TT_COLL_ALLREDUCE, "2 lg p alpha + n beta + n/2 gamma (two trees, pipelined)",
     two_lg_p, one, half, 0},
    {&tt_algo_direct, TT_COLL_ALLREDUCE, "(p-1) alpha + (p-1) n beta + (p-1) n gamma", pm1, pm1, pm1, 0},
    {&tt_algo_ring, TT_COLL_REDUCE_SCATTER, "(p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma", pm1, pm1_over_p,
     pm1_over_p, 0},
    {&tt_algo_rabenseifner, TT_COLL_REDUCE_SCATTER, "lg p alpha + (p-1)/p n beta + (p-1)/p n gamma", lg_q,
     qm1_over_q, qm1_over_q, 1},
    {&tt_algo_ring, TT_COLL_ALLGATHER, "(p-1) alpha + (p-1)/p n beta", pm1, pm1_over_p, zero, 0},
    {&tt_algo_rabenseifner, TT_COLL_ALLGATHER, "lg p alpha + (p-1)/p n beta", lg_q, qm1_over_q, zero, 1},
    {&tt_algo_bruck, TT_COLL_ALLGATHER, "ceil(lg p) alpha + (p-1)/p n beta", lg_p, pm1_over_p, zero, 0},
    {&tt_algo_binomial, TT_COLL_BROADCAST, "ceil(lg p) (alpha + n beta)", lg_p, lg_p, zero, 0},
    {&tt_algo_chain, TT_COLL_BROADCAST, "(p-1) (alpha + n beta), one slice", pm1, pm1, zero, 0},
    {&tt_algo_scatter_allgather, TT_COLL_BROADCAST, "(ceil(lg p) + p-1) alpha + 2(p-1)/p n beta",
     lg_p_plus_pm1, two_pm1_over_p, zero, 0},
    {&tt_algo_binomial, TT_COLL_REDUCE, "ceil(lg p) (alpha + n beta + n gamma)", lg_p, lg_p, lg_p, 0},
    {&tt_algo_chain, TT_COLL_REDUCE, "(p-1) (alpha + n beta + n gamma), one slice", pm1, pm1, pm1, 0},
    {&tt_algo_pairwise, TT_COLL_ALLTOALL, "(p-1) alpha + (p-1)/p n beta", pm1, pm1_over_p, zero, 0},
    {&tt_algo_bruck, TT_COLL_ALLTOALL, "ceil(lg p) alpha + about ceil(lg p)/2 n beta, packed", lg_p,
     bruck_blocks_over_p, zero, 0},
    {&tt_algo_dissemination, TT_COLL_BARRIER, "ceil(lg p) alpha", lg_p, zero, zero, 0},
};

/* The table's entry for algo's coll, or NULL. */
static const formula_t *formula_of(const tt_algorithm_t *algo, tt_coll_t coll)
{
    for (size_t i = 0; i < sizeof formulas / sizeof formulas[0]; i++)
        if (formulas[i].coll == coll && formulas[i].algo == algo)
            return &formulas[i];
    return NULL;
}

static double power_below(int p)
{
    double q = 1;
    while (q * 2 <= p)
        q *= 2;
    return q;
}

int tt_explain_formula_terms(const tt_algorithm_t *algo, tt_coll_t coll, int p, tt_terms_t *out)
{
    const formula_t *f = formula_of(algo, coll);
    double q = power_below(p);
    if (!f)
        return -1;
    *out = (tt_terms_t){f->a(p, q), f->b(p, q), f->g(p, q)};
    /* the fold and the unfold: the extras' data in, added; the result out */
    if (f->fold && q != p) {
        out->alpha += 2;
        out->beta += coll == TT_COLL_ALLREDUCE ? 2 : 1;
        out->gamma += coll == TT_COLL_ALLGATHER ? 0 : 1;
    }
    return 0;
}

int tt_explain_formula(const tt_algorithm_t *algo, tt_coll_t coll, int p, double n, const tt_link_cost_t *c,
                       char *text, size_t len, double *seconds)
{
    const formula_t *f = formula_of(algo, coll);
    tt_terms_t k;
    if (!f || tt_explain_formula_terms(algo, coll, p, &k)) {
        snprintf(text, len, "no textbook form for %s's %s", algo->name, tt_coll_name(coll));
        *seconds = -1;
        return -1;
    }
    int folds = f->fold && power_below(p) != p;
    snprintf(text, len, "%s%s", f->text,
             folds ? coll == TT_COLL_ALLREDUCE ? " + 2 (alpha + n beta) + n gamma (fold, unfold)"
                                               : " + the fold's 2 alpha + n beta (+ n gamma)"
                   : "");
    *seconds = k.alpha * c->alpha + k.beta * n * c->beta + k.gamma * n * c->gamma;
    return 0;
}
