/* SPDX-License-Identifier: MIT */
/*
 * All-pairs matrices of one transport, laid out as p2pBandwidthLatencyTest
 * and nvbandwidth print theirs (rows send, columns receive): one-way and
 * two-way bandwidth and latency, the link class of each pair, and the ranks
 * whose links run well below their class's median (stragglers).
 */
#include <stdlib.h>
#include <string.h>

#include "bw.h"

static const char *const kind_names[TT_BW_KINDS] = {"uni", "bi", "lat"};
static const char *const kind_titles[TT_BW_KINDS] = {
    "Unidirectional bandwidth (GB/s), row sends to column",
    "Bidirectional bandwidth (GB/s each way), both send at once", "Latency (us, one way, half a ping-pong)"};

typedef struct {
    tt_bw_result_t *res; /* [a * n + b] */
    int *valid;
} matrix_t;

/* A cell's mark: ~ the budget ran out before the median was stable, ! outliers. */
static char mark(const tt_bw_result_t *r)
{
    return r->stats.outliers ? '!' : r->stats.stable ? ' ' : '~';
}

static void print_matrix(const tt_bw_tp_t *tp, tt_bw_kind_t kind, const matrix_t *m, size_t bytes)
{
    int n = tp->n;
    char sz[32];
    tt_bw_format_bytes(bytes, sz, sizeof sz);
    printf("\n%s; %s, %s messages, median of repeats\n", kind_titles[kind], tp->name, sz);
    printf("   D\\D");
    for (int b = 0; b < n; b++)
        printf(" %8d", b);
    printf("\n");
    for (int a = 0; a < n; a++) {
        printf("%6d", a);
        for (int b = 0; b < n; b++) {
            int i = kind == TT_BW_UNI || a < b ? a * n + b : b * n + a;
            if (a == b || !m->valid[i])
                printf(" %8s", a == b ? "X" : "-");
            else
                printf(" %7.2f%c", m->res[i].stats.median, mark(&m->res[i]));
        }
        printf("\n");
    }
}

static void print_classes(const tt_bw_tp_t *tp)
{
    printf("\nLink class of each pair over %s (X self, NODE same NUMA node, SYS other NUMA node, "
           "NET other host; - not served by %s)\n   D\\D",
           tp->name, tp->name);
    for (int b = 0; b < tp->n; b++)
        printf(" %8d", b);
    printf("\n");
    for (int a = 0; a < tp->n; a++) {
        printf("%6d", a);
        for (int b = 0; b < tp->n; b++)
            printf(" %8s", a == b || tp->uses[a * tp->n + b] ? tp->cls[a * tp->n + b] : "-");
        printf("\n");
    }
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/*
 * A straggler: a rank whose cells' median is below 0.8 of its link class's
 * median (bandwidth) or above 1.25 of it (latency). Each cell is compared
 * with its class's median; a rank's score is the median of its cells' ratios.
 */
static void stragglers(tt_bw_job_t *job, const tt_bw_tp_t *tp, tt_bw_kind_t kind, const matrix_t *m)
{
    int n = tp->n;
    double *ratio = calloc((size_t)n * n, sizeof *ratio), *tmp = calloc((size_t)n * n, sizeof *tmp);
    if (!ratio || !tmp)
        goto out;
    for (int i = 0; i < n * n; i++) {
        if (!m->valid[i])
            continue;
        int k = 0;
        for (int j = 0; j < n * n; j++)
            if (m->valid[j] && strcmp(tp->cls[i], tp->cls[j]) == 0)
                tmp[k++] = m->res[j].stats.median;
        double med = median_of(tmp, k);
        ratio[i] = med > 0 ? m->res[i].stats.median / med : 1;
    }
    for (int r = 0; r < n; r++) {
        int k = 0;
        for (int q = 0; q < n; q++) {
            if (m->valid[r * n + q])
                tmp[k++] = ratio[r * n + q];
            if (m->valid[q * n + r])
                tmp[k++] = ratio[q * n + r];
        }
        if (k == 0)
            continue;
        double score = median_of(tmp, k);
        int slow = kind == TT_BW_LAT ? score > 1.25 : score < 0.8;
        if (!slow)
            continue;
        if (job->text)
            printf("straggler: rank %d: its %s links run at %.2f of their class's median %s\n", r, tp->name,
                   score, kind == TT_BW_LAT ? "latency" : "bandwidth");
        if (job->rank == 0 && job->o->json) {
            tt_json_obj(&job->json, NULL);
            tt_json_int(&job->json, "rank", r);
            tt_json_str(&job->json, "matrix", kind_names[kind]);
            tt_json_num(&job->json, "ratio", score);
            tt_json_end(&job->json);
        }
    }
out:
    free(ratio);
    free(tmp);
}

static void emit_cells(tt_bw_job_t *job, const tt_bw_tp_t *tp, tt_bw_kind_t kind, const matrix_t *m,
                       size_t bytes)
{
    int n = tp->n;
    for (int i = 0; i < n * n; i++) {
        if (!m->valid[i])
            continue;
        const tt_stats_t *s = &m->res[i].stats;
        if (job->o->csv)
            printf("matrix,%s,%s,%d,%d,%s,%zu,%.6g,%.6g,%.6g,%.6g,%.4f,%d,%d,%d,%.6g\n", tp->name,
                   kind_names[kind], i / n, i % n, tp->cls[i], bytes, s->median, s->p5, s->p95, s->p99, s->cv,
                   s->n, s->outliers, s->stable, m->res[i].msg_rate);
        if (job->o->json) {
            tt_json_t *j = &job->json;
            tt_json_obj(j, NULL);
            tt_json_int(j, "a", i / n);
            tt_json_int(j, "b", i % n);
            tt_json_str(j, "class", tp->cls[i]);
            tt_json_num(j, "median", s->median);
            tt_json_num(j, "p5", s->p5);
            tt_json_num(j, "p95", s->p95);
            tt_json_num(j, "p99", s->p99);
            tt_json_num(j, "min", s->min);
            tt_json_num(j, "max", s->max);
            tt_json_num(j, "cv", s->cv);
            tt_json_int(j, "samples", s->n);
            tt_json_int(j, "outliers", s->outliers);
            tt_json_bool(j, "stable", s->stable);
            if (kind == TT_BW_UNI)
                tt_json_num(j, "msg_rate", m->res[i].msg_rate);
            tt_json_end(j);
        }
    }
}

/* Per link class: its median one-way cell (the lower of the two middle
 * ones), a figure the matrix shows. */
static void class_medians(const tt_bw_tp_t *tp, const matrix_t *m, tt_bw_reached_t *reached, int *nreached,
                          size_t bytes)
{
    int as[TT_BW_MAX_CLASSES], bs[TT_BW_MAX_CLASSES], n = tp->n;
    int count = tt_bw_class_pairs(tp, as, bs, TT_BW_MAX_CLASSES);
    double *tmp = calloc((size_t)n * n, sizeof *tmp);
    *nreached = 0;
    for (int c = 0; c < count && tmp; c++) {
        const char *cls = tp->cls[as[c] * n + bs[c]];
        int k = 0;
        for (int i = 0; i < n * n; i++)
            if (m->valid[i] && strcmp(tp->cls[i], cls) == 0)
                tmp[k++] = m->res[i].stats.median;
        if (!k)
            continue;
        qsort(tmp, (size_t)k, sizeof *tmp, by_value);
        double mid = tmp[(k - 1) / 2];
        for (int i = 0; i < n * n; i++)
            if (m->valid[i] && strcmp(tp->cls[i], cls) == 0 && m->res[i].stats.median == mid) {
                char sz[32];
                tt_bw_format_bytes(bytes, sz, sizeof sz);
                tt_bw_reached_t *r = &reached[(*nreached)++];
                *r = (tt_bw_reached_t){
                    .a = i / n, .b = i % n, .gbps = mid, .cv = m->res[i].stats.cv, .bytes = bytes};
                snprintf(r->from, sizeof r->from,
                         "the one-way matrix's cell at %s, the median of %d %s cells", sz, k, cls);
                break;
            }
    }
    free(tmp);
}

/* JSON: "matrices": {"uni": {"bytes": B, "unit": "GB/s", "cells": [...], "stragglers": [...]}, ...} */
tutti_status_t tt_bw_matrices(tt_bw_job_t *job, tt_bw_tp_t *tp, tt_bw_reached_t *reached, int *nreached)
{
    int n = tp->n;
    tutti_status_t st = TUTTI_SUCCESS;
    if (job->text)
        print_classes(tp);
    if (job->rank == 0 && job->o->json)
        tt_json_obj(&job->json, "matrices");
    for (int kind = 0; kind < TT_BW_KINDS && !st; kind++) {
        size_t bytes = (size_t)(kind == TT_BW_LAT ? job->o->lat_size : job->o->size);
        matrix_t m = {calloc((size_t)n * n, sizeof *m.res), calloc((size_t)n * n, sizeof *m.valid)};
        if (!m.res || !m.valid)
            st = TUTTI_ERR_NO_MEMORY;
        for (int a = 0; a < n && !st; a++)
            for (int b = 0; b < n && !st; b++)
                if (a != b && (kind == TT_BW_UNI || a < b))
                    st = tt_bw_cell(job, tp, a, b, (tt_bw_kind_t)kind, bytes, &m.res[a * n + b],
                                    &m.valid[a * n + b]);
        if (!st && job->text)
            print_matrix(tp, (tt_bw_kind_t)kind, &m, bytes);
        if (!st && job->rank == 0 && job->o->json) {
            tt_json_obj(&job->json, kind_names[kind]);
            tt_json_int(&job->json, "bytes", (long long)bytes);
            tt_json_str(&job->json, "unit", kind == TT_BW_LAT ? "us" : "GB/s");
            tt_json_arr(&job->json, "cells");
        }
        if (!st && job->rank == 0)
            emit_cells(job, tp, (tt_bw_kind_t)kind, &m, bytes);
        if (!st && job->rank == 0 && kind == TT_BW_UNI)
            class_medians(tp, &m, reached, nreached, bytes);
        if (!st && job->rank == 0 && job->o->json) {
            tt_json_end(&job->json);
            tt_json_arr(&job->json, "stragglers");
        }
        if (!st && job->rank == 0)
            stragglers(job, tp, (tt_bw_kind_t)kind, &m);
        if (!st && job->rank == 0 && job->o->json) {
            tt_json_end(&job->json);
            tt_json_end(&job->json);
        }
        free(m.res);
        free(m.valid);
    }
    if (job->text)
        printf("(~: the time budget ran out before the median was stable; !: outliers among the repeats)\n");
    if (job->rank == 0 && job->o->json)
        tt_json_end(&job->json);
    return st;
}
