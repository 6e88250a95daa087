/* SPDX-License-Identifier: MIT */
/* Order statistics and the stopping rule for repeated measurements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bw_stats.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tt_stats_quantile(const double *sorted, int n, double q)
{
    if (n <= 0)
        return 0;
    double pos = q * (n - 1);
    int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

double tt_stats_median_ci(const double *sorted, int n)
{
    if (n < 6)
        return 1;
    /* The ranks n/2 -/+ 1.96 sqrt(n)/2 bound the median with 95% confidence
     * whatever the distribution (binomial approximation). */
    double half = 0.98 * sqrt((double)n);
    int lo = (int)floor(n / 2.0 - half), hi = (int)ceil(n / 2.0 + half);
    lo = lo < 0 ? 0 : lo;
    hi = hi > n - 1 ? n - 1 : hi;
    double med = tt_stats_quantile(sorted, n, 0.5);
    return med > 0 ? (sorted[hi] - sorted[lo]) / (2 * med) : 1;
}

void tt_stats_compute(double *v, int n, tt_stats_t *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof *v, by_value);
    s->min = v[0];
    s->max = v[n - 1];
    s->median = tt_stats_quantile(v, n, 0.5);
    s->p5 = tt_stats_quantile(v, n, 0.05);
    s->p95 = tt_stats_quantile(v, n, 0.95);
    s->p99 = tt_stats_quantile(v, n, 0.99);
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    s->mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (v[i] - s->mean) * (v[i] - s->mean);
    s->cv = n > 1 && s->mean > 0 ? sqrt(sq / (n - 1)) / s->mean : 0;
    double q1 = tt_stats_quantile(v, n, 0.25), q3 = tt_stats_quantile(v, n, 0.75), iqr = q3 - q1;
    for (int i = 0; i < n; i++)
        s->outliers += v[i] < q1 - 3 * iqr || v[i] > q3 + 3 * iqr;
    s->ci_rel = tt_stats_median_ci(v, n);
}

int tt_stats_enough(const tt_repeat_rule_t *rule, const double *v, int n, double elapsed_s, int *stable)
{
    *stable = 0;
    if (n < rule->min_n)
        return 0;
    double *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return 1;
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, by_value);
    *stable = tt_stats_median_ci(tmp, n) <= rule->tol;
    free(tmp);
    return *stable || n >= rule->max_n || elapsed_s >= rule->budget_s;
}
