/* SPDX-License-Identifier: MIT */
/*
 * tutti-explain --measure -b MIN -e MAX: under tutti-run, the whole call
 * timed at every size (factor 2) beside what the tuner's model predicts for
 * the algorithm it runs (with a fitted tuning file's corrections, where
 * TUTTI_TUNING_FILE has them), as a table and a plot in the terminal, or
 * as JSON for perf/report/report. After tutti-bw --fit the two should meet.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/collectives.h"
#include "comm/comm.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "tools/explain_sweep.h"
#include "tune/tuner.h"

#define SWEEP_REPS 7
#define SWEEP_MAX 48
#define PLOT_W 64
#define PLOT_H 16

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over repeats of the slowest rank's mean time of iters calls, us; -1 on failure. */
static double time_calls(tutti_comm_t comm, tt_coll_t coll, const void *in, void *out, size_t count,
                         tutti_dtype_t t, int root, int iters)
{
    double v[SWEEP_REPS];
    for (int r = 0; r < SWEEP_REPS; r++) {
        double local, slowest;
        if (tutti_barrier(comm, NULL))
            return -1;
        int64_t t0 = tt_now_ns();
        for (int i = 0; i < iters; i++)
            if (tt_coll_call(coll, in, out, count, t, TUTTI_SUM, root, comm, NULL))
                return -1;
        local = (double)(tt_now_ns() - t0) / 1e3 / iters;
        if (tutti_allreduce(&local, &slowest, 1, TUTTI_FP64, TUTTI_MAX, comm, NULL))
            return -1;
        v[r] = slowest;
    }
    qsort(v, SWEEP_REPS, sizeof *v, by_value);
    return v[SWEEP_REPS / 2];
}

/* The model's time for what the library runs at this size, us; the algorithm's name into name. */
static double predicted(tt_comm_t *comm, const tt_coll_args_t *args, size_t bytes, size_t elem,
                        const char **name)
{
    tt_tuned_t t = tt_algo_choose(&comm->policy, args, bytes, elem);
    *name = t.algo ? t.algo->name : "-";
    if (!t.algo)
        return -1;
    const tt_cost_model_t *m = &comm->policy.tuner.model;
    int nslices = tt_tuner_slices(tt_tuner_chunk_bytes(args, elem), t.slice_bytes);
    double s = tt_cost_predict(m, t.algo, args, elem, nslices);
    return s < 0 ? -1 : s * tt_cost_fix_factor(&m->fix, t.algo->name, args, bytes) * 1e6;
}

static void plot(const size_t *bytes, const double *meas, const double *pred, int n)
{
    char grid[PLOT_H][PLOT_W + 1];
    double lo = 1e300, hi = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            double v = k ? pred[i] : meas[i];
            if (v > 0) {
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
    if (!(hi > 0) || n < 2)
        return;
    if (hi <= lo * 1.01)
        hi = lo * 2;
    memset(grid, ' ', sizeof grid);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            double v = k ? pred[i] : meas[i];
            if (v <= 0)
                continue;
            int x = (int)((double)i / (n - 1) * (PLOT_W - 1));
            int y = PLOT_H - 1 - (int)((log(v) - log(lo)) / (log(hi) - log(lo)) * (PLOT_H - 1) + 0.5);
            char *c = &grid[y][x];
            *c = *c == ' ' || *c == (k ? 'p' : 'm') ? (k ? 'p' : 'm') : '*';
        }
    printf("\n  time (us, log)        m measured, p predicted, * both\n");
    for (int y = 0; y < PLOT_H; y++) {
        grid[y][PLOT_W] = '\0';
        double v = exp(log(hi) - (log(hi) - log(lo)) * y / (PLOT_H - 1));
        printf("  %9.1f |%s\n", v, grid[y]);
    }
    printf("  %9s +", "");
    for (int x = 0; x < PLOT_W; x++)
        putchar('-');
    printf("\n  %9s  %-10zu%*zu bytes (log)\n", "", bytes[0], PLOT_W - 10, bytes[n - 1]);
}

static void report(const tt_sweep_opts_t *o, int p, const size_t *bytes, const double *meas,
                   const double *pred, const char *const *names, int n)
{
    if (o->json) {
        printf(
            "{\"tool\":\"tutti-explain\",\"schema\":1,\"title\":\"%s on %d ranks: predicted and measured\","
            "\"collective\":\"%s\",\"nranks\":%d,\"sweep\":[",
            tt_coll_name(o->coll), p, tt_coll_name(o->coll), p);
        for (int i = 0; i < n; i++)
            printf("%s{\"bytes\":%zu,\"algorithm\":\"%s\",\"measured_us\":%.6g,\"predicted_us\":%.6g}",
                   i ? "," : "", bytes[i], names[i], meas[i], pred[i]);
        printf("]}\n");
        return;
    }
    printf("%s on %d ranks: the whole call, measured (median of %d, slowest rank) and predicted by the\n"
           "tuner's model for the algorithm it runs%s\n",
           tt_coll_name(o->coll), p, SWEEP_REPS,
           getenv("TUTTI_TUNING_FILE") && *getenv("TUTTI_TUNING_FILE") ? " (TUTTI_TUNING_FILE is set)" : "");
    printf("%12s  %-20s %12s %12s %8s\n", "bytes", "algorithm", "measured_us", "predicted_us", "ratio");
    for (int i = 0; i < n; i++)
        printf("%12zu  %-20s %12.2f %12.2f %8.2f\n", bytes[i], names[i], meas[i], pred[i],
               pred[i] > 0 ? meas[i] / pred[i] : 0.0);
    plot(bytes, meas, pred, n);
}

int tt_explain_sweep(const tt_sweep_opts_t *o)
{
    tutti_comm_t comm;
    tutti_status_t st = tutti_comm_init_env(&comm, NULL);
    if (st) {
        fprintf(stderr, "tutti-explain --measure: %s: %s (run it under tutti-run)\n", tutti_status_name(st),
                tutti_comm_last_error(NULL));
        return 1;
    }
    tt_comm_t *inner = tt_comm_lookup(comm, NULL); /* behind the handle: the tuner and hosts */
    int p = inner->nranks, n = 0, rc = 0;
    size_t elem = tutti_dtype_size(o->dtype), bytes[SWEEP_MAX];
    double meas[SWEEP_MAX], pred[SWEEP_MAX];
    const char *names[SWEEP_MAX];
    char *in = calloc(o->maxb + elem * (size_t)p, 1), *out = calloc(o->maxb + elem * (size_t)p, 1);
    for (size_t b = o->minb; in && out && b <= o->maxb && n < SWEEP_MAX; b *= 2, n++) {
        size_t count = b / elem;
        if (tt_coll_count_per_rank(o->coll))
            count /= (size_t)p;
        tt_coll_args_t args = {
            .coll = o->coll, .nranks = p, .root = o->root, .count = count, .hosts = &inner->hosts};
        bytes[n] = b;
        pred[n] = predicted(inner, &args, b, elem, &names[n]);
        double probe = time_calls(comm, o->coll, in, out, count, o->dtype, o->root, 1);
        int iters = probe > 0 ? (int)(2000 / probe) : 2;
        iters = iters < 2 ? 2 : iters > 1000 ? 1000 : iters;
        meas[n] = probe < 0 ? -1 : time_calls(comm, o->coll, in, out, count, o->dtype, o->root, iters);
        if (meas[n] < 0) {
            fprintf(stderr, "tutti-explain --measure: rank %d: %s\n", inner->rank,
                    tutti_comm_last_error(comm));
            rc = 1;
            break;
        }
    }
    if (!in || !out) {
        fprintf(stderr, "tutti-explain --measure: out of memory\n");
        rc = 1;
    }
    if (!rc && inner->rank == 0)
        report(o, p, bytes, meas, pred, names, n);
    free(in);
    free(out);
    if (rc)
        tutti_comm_abort(comm);
    else
        tutti_comm_destroy(comm);
    return rc;
}
