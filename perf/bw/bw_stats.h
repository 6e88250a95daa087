/* SPDX-License-Identifier: MIT */
/*
 * Statistics of repeated measurements, for tutti-bw and tutti-perf: order
 * statistics, the coefficient of variation, outliers by Tukey's fences, and
 * the rule that says when repeating has made the median stable.
 */
#ifndef TT_BW_STATS_H
#define TT_BW_STATS_H

#include <stddef.h>

typedef struct {
    int n; /* samples */
    double median, p5, p95, p99, min, max, mean;
    double cv;     /* standard deviation / mean */
    int outliers;  /* samples beyond Q1 - 3 IQR or Q3 + 3 IQR */
    double ci_rel; /* half-width of the median's 95% confidence interval / median */
    int stable;    /* ci_rel reached the target before the budget ran out */
} tt_stats_t;

/* The q-quantile (0..1) of n sorted values, interpolating between ranks. */
double tt_stats_quantile(const double *sorted, int n, double q);
/* Sorts v (n values) in place and summarises it; stable stays 0. */
void tt_stats_compute(double *v, int n, tt_stats_t *out);
/* Relative half-width of a distribution-free 95% confidence interval of
 * the median of n sorted values (order statistics); 1 when n < 6. */
double tt_stats_median_ci(const double *sorted, int n);

/* When to stop repeating: at least min_n samples, then until the median's
 * confidence interval is within tol (relative), max_n samples or the time
 * budget are reached. */
typedef struct {
    int min_n, max_n;
    double tol;
    double budget_s;
} tt_repeat_rule_t;

/* Whether samples v[0..n) (unsorted; a scratch copy is sorted) taken over
 * elapsed_s seconds are enough under rule; *stable tells why it stopped. */
int tt_stats_enough(const tt_repeat_rule_t *rule, const double *v, int n, double elapsed_s, int *stable);

#endif
