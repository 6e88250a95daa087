/* SPDX-License-Identifier: MIT */
/*
 * Per-size sweeps of one pair per link class, in the dialect of perftest
 * (ib_write_bw: bytes, iterations, BW peak, BW average, message rate;
 * ib_write_lat: t_min, t_typical, t_99%) and OSU (osu_bw, osu_bibw,
 * osu_latency), every figure the result of repeats until stable.
 */
#include <stdlib.h>
#include <string.h>

#include "bw.h"

typedef struct {
    size_t bytes;
    tt_bw_result_t r[TT_BW_KINDS];
    int valid;
} row_t;

static void print_head(const tt_bw_tp_t *tp, int a, int b)
{
    printf("\n# %s sweep, rank %d -> rank %d (%s); bandwidth in GB/s (1e9 B/s), latency in us\n", tp->name, a,
           b, tp->cls[a * tp->n + b]);
    printf("# %10s %9s %8s %8s %8s %6s %8s %8s %8s %8s %9s\n", "bytes", "iters", "bw_peak", "bw_med",
           "bw_avg", "cv%", "bibw", "lat_min", "lat_med", "lat_p99", "Mmsg/s");
}

static void print_row(const row_t *w)
{
    const tt_stats_t *u = &w->r[TT_BW_UNI].stats, *bi = &w->r[TT_BW_BI].stats, *l = &w->r[TT_BW_LAT].stats;
    printf("  %10zu %9lld %8.3f %8.3f %8.3f %6.1f %8.3f %8.2f %8.2f %8.2f %9.4f%s\n", w->bytes,
           w->r[TT_BW_UNI].messages, u->max, u->median, u->mean, 100 * u->cv, bi->median, l->min, l->median,
           l->p99, w->r[TT_BW_UNI].msg_rate / 1e6, u->stable && bi->stable ? "" : "  ~");
}

static void json_row(tt_json_t *j, const row_t *w)
{
    const tt_stats_t *u = &w->r[TT_BW_UNI].stats, *bi = &w->r[TT_BW_BI].stats, *l = &w->r[TT_BW_LAT].stats;
    tt_json_obj(j, NULL);
    tt_json_int(j, "bytes", (long long)w->bytes);
    tt_json_int(j, "iters", w->r[TT_BW_UNI].messages);
    tt_json_num(j, "bw_peak", u->max);
    tt_json_num(j, "bw_median", u->median);
    tt_json_num(j, "bw_mean", u->mean);
    tt_json_num(j, "bw_p5", u->p5);
    tt_json_num(j, "bw_p95", u->p95);
    tt_json_num(j, "bw_cv", u->cv);
    tt_json_bool(j, "bw_stable", u->stable);
    tt_json_int(j, "bw_outliers", u->outliers);
    tt_json_num(j, "bibw_median", bi->median);
    tt_json_num(j, "bibw_p5", bi->p5);
    tt_json_num(j, "bibw_p95", bi->p95);
    tt_json_num(j, "lat_min", l->min);
    tt_json_num(j, "lat_median", l->median);
    tt_json_num(j, "lat_p5", l->p5);
    tt_json_num(j, "lat_p95", l->p95);
    tt_json_num(j, "lat_p99", l->p99);
    tt_json_int(j, "lat_outliers", l->outliers);
    tt_json_num(j, "msg_rate", w->r[TT_BW_UNI].msg_rate);
    tt_json_end(j);
}

static tutti_status_t sweep_pair(tt_bw_job_t *job, tt_bw_tp_t *tp, int a, int b, tt_bw_reached_t *best)
{
    const tt_bw_opts_t *o = job->o;
    if (job->text)
        print_head(tp, a, b);
    if (job->rank == 0 && o->json) {
        tt_json_obj(&job->json, NULL);
        tt_json_int(&job->json, "a", a);
        tt_json_int(&job->json, "b", b);
        tt_json_str(&job->json, "class", tp->cls[a * tp->n + b]);
        tt_json_arr(&job->json, "rows");
    }
    *best = (tt_bw_reached_t){.a = a, .b = b};
    tutti_status_t st = TUTTI_SUCCESS;
    for (uint64_t size = o->minb; size <= o->maxb && !st;) {
        row_t w = {.bytes = (size_t)size};
        int valid = 0;
        for (int k = 0; k < TT_BW_KINDS && !st; k++)
            st = tt_bw_cell(job, tp, a, b, (tt_bw_kind_t)k, w.bytes, &w.r[k], &valid);
        if (!st && job->rank == 0 && valid) {
            if (job->text)
                print_row(&w);
            if (o->json)
                json_row(&job->json, &w);
            if (o->csv)
                for (int k = 0; k < TT_BW_KINDS; k++) {
                    const tt_stats_t *s = &w.r[k].stats;
                    static const char *const names[] = {"uni", "bi", "lat"};
                    printf("sweep,%s,%s,%d,%d,%s,%zu,%.6g,%.6g,%.6g,%.6g,%.4f,%d,%d,%d,%.6g\n", tp->name,
                           names[k], a, b, tp->cls[a * tp->n + b], w.bytes, s->median, s->p5, s->p95, s->p99,
                           s->cv, s->n, s->outliers, s->stable, w.r[k].msg_rate);
                }
            if (w.r[TT_BW_UNI].stats.median > best->gbps) {
                char sz[32];
                tt_bw_format_bytes(w.bytes, sz, sizeof sz);
                best->gbps = w.r[TT_BW_UNI].stats.median;
                best->cv = w.r[TT_BW_UNI].stats.cv;
                best->bytes = w.bytes;
                snprintf(best->from, sizeof best->from, "the sweep's bw_med at %s, its best row", sz);
            }
        }
        uint64_t next = (uint64_t)((double)size * o->factor);
        size = next > size ? next : size + 1;
    }
    if (job->rank == 0 && o->json) {
        tt_json_end(&job->json);
        tt_json_end(&job->json);
    }
    return st;
}

/* JSON: "sweeps": [{"a", "b", "class", "rows": [...]}, ...] */
tutti_status_t tt_bw_sweeps(tt_bw_job_t *job, tt_bw_tp_t *tp, tt_bw_reached_t *reached, int *nreached)
{
    int as[TT_BW_MAX_CLASSES], bs[TT_BW_MAX_CLASSES];
    int count = tt_bw_class_pairs(tp, as, bs, TT_BW_MAX_CLASSES);
    tutti_status_t st = TUTTI_SUCCESS;
    if (job->rank == 0 && job->o->json)
        tt_json_arr(&job->json, "sweeps");
    *nreached = 0;
    for (int c = 0; c < count && !st; c++) {
        st = sweep_pair(job, tp, as[c], bs[c], &reached[c]);
        *nreached = c + 1;
    }
    if (job->text && count)
        printf(
            "(iters: messages timed; bw_peak: the best repeat, bw_med: their median, bw_avg: their mean;\n"
            " cv%%: their standard deviation / mean; ~: the budget ran out before the median was stable)\n");
    if (job->rank == 0 && job->o->json)
        tt_json_end(&job->json);
    return st;
}
