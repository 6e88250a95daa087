/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf's output, as nccl-tests prints it: a header with the version,
 * the parameters, one line per rank and the algorithm the tuner picks per
 * size; one row per size; a footer with the wrong elements, the average bus
 * bandwidth per collective and the bandwidth gate. The same rows as CSV,
 * and as a JSON document (-J FILE, or --json on stdout).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "perf.h"

static const char *redop_of(const perf_row_t *r)
{
    return tt_coll_reduces(r->coll) ? tutti_op_name(r->op) : "none";
}

static int root_of(const perf_row_t *r)
{
    return r->coll == TT_COLL_BROADCAST || r->coll == TT_COLL_REDUCE ? r->root : -1;
}

static const char *timing_names[4] = {"rank 0", "mean over ranks", "fastest rank", "slowest rank"};

void perf_print_header(perf_out_t *out, const char *const *rank_lines)
{
    const perf_opts_t *o = out->o;
    tt_json_t *j = &out->json;
    int major, minor, patch;
    tutti_get_version(&major, &minor, &patch);
    if (out->text) {
        printf("# tutti-perf %s (library %d.%d.%d), nccl-tests' dialect\n", PACKAGE_VERSION, major, minor,
               patch);
        printf("# Collective test starting: %s\n", o->program);
        printf("# nThread 1 nGpus 1 minBytes %llu maxBytes %llu step: %g(%s) warmup iters: %d iters: %d agg "
               "iters: "
               "%d validation: %d graph: 0 unalign: %d\n",
               (unsigned long long)o->minb, (unsigned long long)o->maxb,
               o->step ? (double)o->step : o->factor, o->step ? "bytes" : "factor", o->warmup, o->iters,
               o->agg, o->check, o->unalign);
        printf("# %d ranks, one per process; %s memory%s; time: %s (-a %d)%s%s\n", out->nranks,
               o->device ? "device" : "host", o->device && o->stream_null ? " on the default stream" : "",
               timing_names[o->average], o->average, o->blocking ? "; blocking (-z)" : "",
               o->cputime ? "; reporting CPU time" : "");
        if (o->blocking && !o->device)
            printf("# -z %d: host calls return when done anyway\n", o->blocking);
        printf("#\n# Using devices\n");
        for (int r = 0; r < out->nranks; r++)
            printf("%s\n", rank_lines[r]);
    }
    if (o->csv && out->rank == 0)
        printf("collective,size,count,type,redop,root,oop_time_us,oop_algbw,oop_busbw,oop_wrong,ip_time_us,"
               "ip_algbw,"
               "ip_busbw,ip_wrong,compression_ratio,algorithm,predicted_us,oop_i_min_us,oop_i_max_us,oop_i_"
               "p99_us,"
               "oop_i_cv,oop_cpu_us,ip_cpu_us\n");
    if (!o->json && !*o->json_file)
        return;
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    tt_json_obj(j, NULL);
    tt_json_str(j, "tool", "tutti-perf");
    tt_json_int(j, "schema", 1);
    tt_json_str(j, "version", PACKAGE_VERSION);
    tt_json_str(j, "program", o->program);
    tt_json_str(j, "date", date);
    tt_json_int(j, "nranks", out->nranks);
    tt_json_int(j, "nhosts", tt_comm_lookup(out->comm, NULL)->hosts.nhosts);
    tt_json_arr(j, "ranks");
    for (int r = 0; r < out->nranks; r++)
        tt_json_str(j, NULL, rank_lines[r] + 2);
    tt_json_end(j);
    tt_json_obj(j, "options");
    tt_json_int(j, "minbytes", (long long)o->minb);
    tt_json_int(j, "maxbytes", (long long)o->maxb);
    tt_json_num(j, "stepfactor", o->step ? 0 : o->factor);
    tt_json_int(j, "stepbytes", (long long)o->step);
    tt_json_int(j, "iters", o->iters);
    tt_json_int(j, "warmup_iters", o->warmup);
    tt_json_int(j, "agg_iters", o->agg);
    tt_json_int(j, "check", o->check);
    tt_json_int(j, "average", o->average);
    tt_json_int(j, "blocking", o->blocking);
    tt_json_str(j, "memory", o->device ? "device" : "host");
    tt_json_int(j, "unalign", o->unalign);
    tt_json_end(j);
    tt_json_arr(j, "results");
}

void perf_print_table_head(perf_out_t *out, tt_coll_t coll, const char *algorithms, int columns)
{
    const perf_opts_t *o = out->o;
    const char *t = o->cputime ? "cputime" : "time";
    if (!out->text)
        return;
    if (strcmp(algorithms, out->last_algorithms) != 0 || columns)
        printf("#\n# %s: the algorithm per size (the tuner's choice, or TUTTI_ALGO): %s\n",
               perf_coll_names[coll], algorithms);
    snprintf(out->last_algorithms, sizeof out->last_algorithms, "%s", algorithms);
    if (!columns)
        return;
    if (o->compress)
        printf(
            "# compressed: busbw counts the dense all-reduce's bytes (effective bandwidth); ratio is dense\n"
            "# bytes / bytes sent, out of place; results are approximate, so #wrong is N/A\n");
    printf("#\n# %10s  %12s  %8s  %6s  %6s  %s out-of-place%s  %s in-place%s\n", "", "", "", "", "",
           o->per_iter ? "         " : "",
           o->per_iter ? " (+ per-iteration)                  " : "                  ",
           o->per_iter ? "         " : "", o->per_iter ? " (+ per-iteration)" : "");
    printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
    for (int ip = 0; ip < 2; ip++) {
        printf("  %7s  %6s  %6s  %6s", t, "algbw", "busbw", "#wrong");
        if (o->proc_cpu)
            printf("  %7s", "cpu");
        if (o->per_iter)
            printf("  %7s  %7s  %7s  %7s", "i_min", "i_max", "i_p99", "i_cv%");
    }
    printf("%s%s\n# %10s  %12s  %8s  %6s  %6s", o->compress ? "    ratio" : "",
           o->timestamps ? "  timestamp" : "", "(B)", "(elements)", "", "", "");
    for (int ip = 0; ip < 2; ip++) {
        printf("  %7s  %6s  %6s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
        if (o->proc_cpu)
            printf("  %7s", "(us)");
        if (o->per_iter)
            printf("  %7s  %7s  %7s  %7s", "(us)", "(us)", "(us)", "(%)");
    }
    printf("%s\n", o->compress ? "      (x)" : "");
}

static void json_side(tt_json_t *j, const char *key, const perf_result_t *r)
{
    if (r->skipped) {
        tt_json_null(j, key);
        return;
    }
    tt_json_obj(j, key);
    tt_json_num(j, "time_us", r->us);
    tt_json_num(j, "cputime_us", r->cpu_us);
    tt_json_num(j, "cpu_per_rank_us", r->proc_us);
    tt_json_num(j, "algbw", r->algbw);
    tt_json_num(j, "busbw", r->busbw);
    if (r->wrong < 0)
        tt_json_null(j, "wrong");
    else
        tt_json_int(j, "wrong", r->wrong);
    tt_json_num(j, "compression_ratio", r->ratio);
    if (r->have_iter) {
        tt_json_obj(j, "per_iter");
        tt_json_int(j, "skipped_iterations", r->i_skipped);
        tt_json_num(j, "min_us", r->i_min);
        tt_json_num(j, "max_us", r->i_max);
        tt_json_num(j, "avg_us", r->i_avg);
        tt_json_num(j, "p50_us", r->i_p50);
        tt_json_num(j, "p95_us", r->i_p95);
        tt_json_num(j, "p99_us", r->i_p99);
        tt_json_num(j, "cv", r->i_cv);
        tt_json_end(j);
    }
    tt_json_end(j);
}

static void text_row(perf_out_t *out, const perf_row_t *w, const perf_result_t res[2])
{
    const perf_opts_t *o = out->o;
    printf("  %10zu  %12zu  %8s  %6s  %6d", w->size, w->count, tutti_dtype_name(w->dtype), redop_of(w),
           root_of(w));
    for (int ip = 0; ip < 2; ip++) {
        const perf_result_t *r = &res[ip];
        if (r->skipped) {
            printf("  %7s  %6s  %6s  %6s", "-", "-", "-", "-");
            if (o->proc_cpu)
                printf("  %7s", "-");
            if (o->per_iter)
                printf("  %7s  %7s  %7s  %7s", "-", "-", "-", "-");
            continue;
        }
        char wrong[24];
        snprintf(wrong, sizeof wrong, r->wrong < 0 ? "N/A" : "%lld", r->wrong);
        printf("  %7.2f  %6.2f  %6.2f  %6s", o->cputime ? r->cpu_us : r->us, r->algbw, r->busbw, wrong);
        if (o->proc_cpu)
            printf("  %7.2f", r->proc_us);
        if (o->per_iter)
            printf("  %7.2f  %7.2f  %7.2f  %7.2f", r->i_min, r->i_max, r->i_p99, 100 * r->i_cv);
    }
    if (o->compress)
        printf("  %7.2f", res[0].ratio);
    if (o->timestamps) {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime(&now));
        printf("  %s", stamp);
    }
    printf("\n");
}

void perf_print_row(perf_out_t *out, const perf_row_t *w, const perf_result_t res[2])
{
    const perf_opts_t *o = out->o;
    if (out->rank != 0)
        return;
    if (out->text)
        text_row(out, w, res);
    if (o->csv) {
        printf("%s,%zu,%zu,%s,%s,%d", perf_coll_names[w->coll], w->size, w->count, tutti_dtype_name(w->dtype),
               redop_of(w), root_of(w));
        for (int ip = 0; ip < 2; ip++)
            if (res[ip].skipped)
                printf(",,,,");
            else
                printf(",%.3f,%.4f,%.4f,%lld", o->cputime ? res[ip].cpu_us : res[ip].us, res[ip].algbw,
                       res[ip].busbw, res[ip].wrong);
        printf(",");
        if (o->compress)
            printf("%.4f", res[0].ratio);
        printf(",%s,%.3f", w->algorithm ? w->algorithm : "", w->predicted_us);
        if (res[0].have_iter)
            printf(",%.3f,%.3f,%.3f,%.4f", res[0].i_min, res[0].i_max, res[0].i_p99, res[0].i_cv);
        else
            printf(",,,,");
        for (int ip = 0; ip < 2; ip++)
            if (res[ip].skipped)
                printf(",");
            else
                printf(",%.3f", res[ip].proc_us);
        printf("\n");
    }
    if (o->json || *o->json_file) {
        tt_json_t *j = &out->json;
        tt_json_obj(j, NULL);
        tt_json_str(j, "collective", perf_coll_names[w->coll]);
        tt_json_int(j, "size", (long long)w->size);
        tt_json_int(j, "count", (long long)w->count);
        tt_json_str(j, "type", tutti_dtype_name(w->dtype));
        tt_json_str(j, "redop", redop_of(w));
        tt_json_int(j, "root", root_of(w));
        tt_json_str(j, "algorithm", w->algorithm);
        tt_json_num(j, "predicted_us", w->predicted_us >= 0 ? w->predicted_us : 0.0 / 0.0);
        json_side(j, "out_of_place", &res[0]);
        json_side(j, "in_place", &res[1]);
        tt_json_end(j);
    }
    fflush(stdout);
}

int perf_print_footer(perf_out_t *out, double peak_rss_mib)
{
    const perf_opts_t *o = out->o;
    double sum = 0;
    int n = 0, gate_failed = 0;
    for (int c = 0; c < TT_COLL_COUNT; c++)
        if (out->busbw_n[c] > 0) {
            sum += out->busbw_sum[c] / out->busbw_n[c];
            n++;
        }
    /* One average per collective, as nccl-tests prints it for its one; the gate takes their mean. */
    double avg = n ? sum / n : 0;
    gate_failed = o->min_bw > 0 && avg < 0.9 * o->min_bw;
    if (out->text) {
        printf("# %-20s : %lld %s\n", "Out of bounds values", out->wrong_total,
               out->wrong_total ? "FAILED" : "OK");
        for (int c = 0; c < TT_COLL_COUNT; c++)
            if (out->busbw_n[c] > 0)
                printf("# %-20s : %g GB/s (%s, mean of %d out-of-place sizes)\n", "Avg bus bandwidth",
                       out->busbw_sum[c] / out->busbw_n[c], perf_coll_names[c], out->busbw_n[c]);
        if (o->min_bw > 0)
            printf("# %-20s : %g GB/s against %g x 0.9: %s\n", "Bandwidth gate", avg, o->min_bw,
                   gate_failed ? "FAILED" : "OK");
        if (o->memreport)
            printf("# %-20s : %.1f MiB peak resident, the largest rank's\n", "Host memory usage",
                   peak_rss_mib);
        printf("#\n# Collective test concluded: %s\n", o->program);
    } else if (o->csv && o->min_bw > 0 && gate_failed) {
        fprintf(stderr, "%s: average bus bandwidth %g GB/s is below 0.9 x %g\n", o->program, avg, o->min_bw);
    }
    if (o->json || *o->json_file) {
        tt_json_t *j = &out->json;
        tt_json_end(j); /* results */
        tt_json_obj(j, "summary");
        tt_json_int(j, "wrong", out->wrong_total);
        tt_json_obj(j, "avg_busbw");
        for (int c = 0; c < TT_COLL_COUNT; c++)
            if (out->busbw_n[c] > 0)
                tt_json_num(j, perf_coll_names[c], out->busbw_sum[c] / out->busbw_n[c]);
        tt_json_end(j);
        tt_json_num(j, "min_bw", o->min_bw);
        tt_json_bool(j, "min_bw_ok", !gate_failed);
        if (o->memreport)
            tt_json_num(j, "peak_rss_mib", peak_rss_mib);
        tt_json_end(j);
        tt_json_end(j); /* the document */
    }
    return gate_failed;
}

int perf_write_json(perf_out_t *out)
{
    const perf_opts_t *o = out->o;
    if (o->json && tt_json_write(&out->json, stdout))
        return -1;
    if (!*o->json_file)
        return 0;
    FILE *f = fopen(o->json_file, "w");
    if (!f) {
        perror(o->json_file);
        return -1;
    }
    int rc = tt_json_write(&out->json, f);
    return fclose(f) || rc ? -1 : 0;
}
