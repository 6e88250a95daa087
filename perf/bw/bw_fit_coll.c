/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw --fit's collective passes: every all-reduce algorithm the tuner
 * considers, each forced on a communicator of its own, and the tuner, timed
 * in alternation size by size (so all of them see the machine at the same
 * moments). The first pass gives the corrections; the second, made with the
 * written tuning file, checks them: its measurements were not used to fit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bw_fit.h"
#include "comm/comm.h"
#include "core/clock.h"
#include "algorithms/registry.h"
#include "tune/tuner.h"

#define TIMING_NS 5000000 /* about this long per timing, at least 2 calls */
#define TUNER_TARGET 1.10 /* the fitted tuner's pick against the fastest algorithm */

/* Mean us of iters all-reduces of count floats, slowest rank's; -1 on failure. */
static double time_allreduce(tutti_comm_t comm, float *in, float *out, size_t count, int iters)
{
    double local, slowest = -1;
    if (tutti_barrier(comm, NULL))
        return -1;
    int64_t t0 = tt_now_ns();
    for (int i = 0; i < iters; i++)
        if (tutti_allreduce(in, out, count, TUTTI_FP32, TUTTI_SUM, comm, NULL))
            return -1;
    local = (double)(tt_now_ns() - t0) / 1e3 / iters;
    if (tutti_allreduce(&local, &slowest, 1, TUTTI_FP64, TUTTI_MAX, comm, NULL))
        return -1;
    return slowest;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

static tutti_status_t make_comms(tt_bw_job_t *job, tt_fit_pass_t *p, const char *path, tutti_comm_t *comm)
{
    tt_coll_args_t args = {
        .coll = TT_COLL_ALLREDUCE, .nranks = job->nranks, .count = 1024, .hosts = &job->in->hosts};
    char why[200];
    tutti_status_t st = TUTTI_SUCCESS;
    int64_t timeout = job->in->timeout_ms;
    p->nalgo = 0;
    for (int i = 0; i < tt_num_algorithms && p->nalgo < TT_FIT_MAX_ALGOS && !st; i++) {
        const tt_algorithm_t *a = tt_algorithms[i];
        if (!tt_tuner_considers(&job->in->policy.tuner, a, &args))
            continue;
        p->algo[p->nalgo] = a;
        st = tt_bw_comm_with(job, "TUTTI_ALGO_ALLREDUCE", a->name, timeout, &comm[p->nalgo++], why,
                             sizeof why);
    }
    if (!st)
        st = tt_bw_comm_with(job, path ? "TUTTI_TUNING_FILE" : NULL, path, timeout, &comm[p->nalgo], why,
                             sizeof why);
    if (st && job->rank == 0)
        fprintf(stderr, "tutti-bw --fit: %s\n", why);
    return st;
}

/* Every communicator at one size, reps times in alternation; medians into p->us[..][i]. */
static tutti_status_t time_size(tt_bw_job_t *job, tt_fit_pass_t *p, tutti_comm_t *comm, int i, float *in,
                                float *out, double *t)
{
    int reps = job->o->fit_reps, ncomm = p->nalgo + 1;
    size_t count = p->bytes[i] / 4;
    double probe = 0;
    for (int k = 0; k < ncomm && probe >= 0; k++) /* warm each up; the first's second call sets iters */
        probe = time_allreduce(comm[k], in, out, count, 1);
    if (probe >= 0)
        probe = time_allreduce(comm[0], in, out, count, 1);
    int iters = probe > 0 ? (int)(TIMING_NS / 1e3 / probe) : 2;
    iters = iters < 2 ? 2 : iters > 2000 ? 2000 : iters;
    for (int r = 0; r < reps && probe >= 0; r++)
        for (int k = 0; k < ncomm && probe >= 0; k++)
            probe = t[k * reps + r] = time_allreduce(comm[k], in, out, count, iters);
    if (probe < 0) {
        fprintf(stderr, "tutti-bw --fit: rank %d: an all-reduce failed: %s\n", job->rank,
                tutti_comm_last_error(NULL));
        return TUTTI_ERR_SYSTEM;
    }
    for (int k = 0; k < ncomm; k++)
        p->us[k][i] = median(t + k * reps, reps);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bw_fit_pass(tt_bw_job_t *job, const char *path, tt_fit_pass_t *p)
{
    tutti_comm_t comm[TT_FIT_MAX_ALGOS + 1] = {0};
    size_t maxb = (size_t)job->o->fit_max;
    float *in = calloc(maxb / 4 + 1, 4), *out = calloc(maxb / 4 + 1, 4);
    double *t = calloc((size_t)(TT_FIT_MAX_ALGOS + 1) * job->o->fit_reps, sizeof *t);
    tutti_status_t st = in && out && t ? make_comms(job, p, path, comm) : TUTTI_ERR_NO_MEMORY;
    p->nsizes = 0;
    for (size_t bytes = 8; bytes <= maxb && p->nsizes < TT_FIT_MAX_SIZES && !st; bytes *= 2) {
        p->bytes[p->nsizes] = bytes;
        st = time_size(job, p, comm, p->nsizes++, in, out, t);
    }
    for (int k = 0; k <= p->nalgo; k++)
        if (comm[k])
            (st ? tutti_comm_abort : tutti_comm_destroy)(comm[k]);
    free(in);
    free(out);
    free(t);
    return st;
}

static tt_coll_args_t args_at(const tt_bw_job_t *job, size_t bytes)
{
    return (tt_coll_args_t){
        .coll = TT_COLL_ALLREDUCE, .nranks = job->nranks, .count = bytes / 4, .hosts = &job->in->hosts};
}

/* What the tuner's model predicts for a forced algorithm (default slices), us. */
static double predict(const tt_cost_model_t *m, const tt_algorithm_t *a, const tt_coll_args_t *args)
{
    int nslices = tt_tuner_slices(tt_tuner_chunk_bytes(args, 4), TT_TUNER_DEFAULT_SLICE);
    return tt_cost_predict(m, a, args, 4, nslices) *
           tt_cost_fix_factor(&m->fix, a->name, args, args->count * 4) * 1e6;
}

int tt_bw_fit_corrections(const tt_bw_job_t *job, const tt_fit_pass_t *p, tt_cost_model_t *m)
{
    int lost = 0;
    tt_cost_model_t plain = *m;
    plain.fix.n = 0;
    for (int k = 0; k < p->nalgo; k++) {
        double ratio[TT_FIT_MAX_SIZES];
        for (int i = 0; i < p->nsizes; i++) {
            tt_coll_args_t args = args_at(job, p->bytes[i]);
            double pred = predict(&plain, p->algo[k], &args);
            ratio[i] = pred > 0 ? p->us[k][i] / pred : 1;
        }
        for (int i = 0; i < p->nsizes; i++) {
            double near[3];
            int n = 0;
            for (int j = i - 1; j <= i + 1; j++)
                if (j >= 0 && j < p->nsizes)
                    near[n++] = ratio[j];
            tt_cost_fix_entry_t e = {.coll = TT_COLL_ALLREDUCE,
                                     .nranks = job->nranks,
                                     .nhosts = job->in->hosts.nhosts,
                                     .size_class = tt_cost_size_class(p->bytes[i]),
                                     .factor = median(near, n)};
            snprintf(e.algo, sizeof e.algo, "%s", p->algo[k]->name);
            lost += tt_cost_fix_set(&m->fix, &e) != 0;
        }
    }
    return lost;
}

/* Median over sizes of predicted/measured and |predicted/measured - 1|, us per size into pred. */
static void errors(const tt_bw_job_t *job, const tt_fit_pass_t *p, int k, const tt_cost_model_t *m,
                   double *pred, double *ratio_out, double *err_out)
{
    double ratio[TT_FIT_MAX_SIZES], err[TT_FIT_MAX_SIZES];
    for (int i = 0; i < p->nsizes; i++) {
        tt_coll_args_t args = args_at(job, p->bytes[i]);
        pred[i] = predict(m, p->algo[k], &args);
        ratio[i] = pred[i] / p->us[k][i];
        err[i] = fabs(ratio[i] - 1);
    }
    *ratio_out = median(ratio, p->nsizes);
    *err_out = median(err, p->nsizes);
}

static void error_table(tt_bw_job_t *job, const tt_fit_pass_t *first, const tt_fit_pass_t *second,
                        const tt_cost_model_t *models[3], tt_fit_errors_t *errs)
{
    double link_err[TT_FIT_MAX_ALGOS], after_err[TT_FIT_MAX_ALGOS];
    static const char *const names[3] = {"before", "link_fit", "after"};
    if (job->text)
        printf("\nall-reduce on %d ranks, fp32 sum, %zu B to %zu B: predicted / measured, median over sizes\n"
               "(before: the model as it was; link fit: the fitted alpha, beta, gamma; after: with the\n"
               "measured corrections too, against the second pass, which the fit did not see)\n"
               "%-20s %8s %7s %8s %7s %8s %7s\n",
               job->nranks, first->bytes[0], first->bytes[first->nsizes - 1], "algorithm", "before", "error",
               "link_fit", "error", "after", "error");
    if (job->o->json)
        tt_json_arr(&job->json, "algorithms");
    for (int k = 0; k < first->nalgo; k++) {
        double pred[3][TT_FIT_MAX_SIZES], ratio[3], err[3];
        for (int m = 0; m < 3; m++)
            errors(job, m == 2 ? second : first, k, models[m], pred[m], &ratio[m], &err[m]);
        link_err[k] = err[1];
        after_err[k] = err[2];
        if (job->text)
            printf("%-20s %8.2f %6.0f%% %8.2f %6.0f%% %8.2f %6.0f%%\n", first->algo[k]->name, ratio[0],
                   100 * err[0], ratio[1], 100 * err[1], ratio[2], 100 * err[2]);
        if (!job->o->json)
            continue;
        tt_json_t *j = &job->json;
        tt_json_obj(j, NULL);
        tt_json_str(j, "name", first->algo[k]->name);
        for (int m = 0; m < 3; m++) {
            char key[40];
            snprintf(key, sizeof key, "median_ratio_%s", names[m]);
            tt_json_num(j, key, ratio[m]);
            snprintf(key, sizeof key, "median_error_%s", names[m]);
            tt_json_num(j, key, err[m]);
        }
        tt_json_arr(j, "sizes");
        for (int i = 0; i < first->nsizes; i++) {
            tt_json_obj(j, NULL);
            tt_json_int(j, "bytes", (long long)first->bytes[i]);
            tt_json_num(j, "measured_us", first->us[k][i]);
            tt_json_num(j, "measured_again_us", second->us[k][i]);
            tt_json_num(j, "predicted_before_us", pred[0][i]);
            tt_json_num(j, "predicted_link_fit_us", pred[1][i]);
            tt_json_num(j, "predicted_after_us", pred[2][i]);
            tt_json_end(j);
        }
        tt_json_end(j);
        tt_json_end(j);
    }
    if (job->o->json)
        tt_json_end(&job->json);
    errs->link_fit = median(link_err, first->nalgo);
    errs->after = median(after_err, first->nalgo);
}

static const tt_algorithm_t *pick_with(const tt_bw_job_t *job, const tt_cost_model_t *m, size_t bytes)
{
    tt_tuner_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    *t = job->in->policy.tuner;
    memset(t->cache, 0, sizeof t->cache);
    t->model = *m;
    tt_coll_args_t args = args_at(job, bytes);
    const tt_algorithm_t *a = tt_tuner_pick(t, &args, bytes, 4).algo;
    free(t);
    return a;
}

static int fastest(const tt_fit_pass_t *p, int i)
{
    int best = 0;
    for (int k = 1; k < p->nalgo; k++)
        best = p->us[k][i] < p->us[best][i] ? k : best;
    return best;
}

static int index_of(const tt_fit_pass_t *p, const tt_algorithm_t *a)
{
    for (int k = 0; k < p->nalgo; k++)
        if (p->algo[k] == a)
            return k;
    return -1;
}

/*
 * Per size of the second pass: the fastest algorithm, and the pick of the
 * tuner before and after the fit with that algorithm's time in the same
 * pass; the criterion is the pick's time over the fastest's. The tuned
 * communicator's own time (its slices too) is shown beside it.
 */
static int tuner_table(tt_bw_job_t *job, const tt_fit_pass_t *p, const tt_cost_model_t *before,
                       const tt_cost_model_t *after, int *tuned_within)
{
    int within = 0;
    *tuned_within = 0;
    if (job->text)
        printf("\nthe tuner's pick against the fastest algorithm (second pass, with the tuning file; us; "
               "ratio =\n"
               "the picked algorithm's time / the fastest's; tuned: the tuned communicator's own time)\n"
               "%10s  %-18s %9s  %-18s %6s  %-18s %6s %8s\n",
               "bytes", "fastest", "us", "before: pick", "ratio", "after: pick", "ratio", "tuned");
    if (job->o->json)
        tt_json_arr(&job->json, "tuner");
    for (int i = 0; i < p->nsizes; i++) {
        int best = fastest(p, i);
        const tt_algorithm_t *pick0 = pick_with(job, before, p->bytes[i]),
                             *pick1 = pick_with(job, after, p->bytes[i]);
        int k0 = index_of(p, pick0), k1 = index_of(p, pick1);
        if (k0 < 0 || k1 < 0)
            break;
        double f = p->us[best][i], r0 = p->us[k0][i] / f, r1 = p->us[k1][i] / f, rt = p->us[p->nalgo][i] / f;
        within += r1 <= TUNER_TARGET;
        *tuned_within += rt <= TUNER_TARGET;
        if (job->text)
            printf("%10zu  %-18s %9.2f  %-18s %6.2f  %-18s %6.2f %8.2f%s\n", p->bytes[i], p->algo[best]->name,
                   f, pick0->name, r0, pick1->name, r1, rt, r1 <= TUNER_TARGET ? "" : "  > 1.10");
        if (!job->o->json)
            continue;
        tt_json_obj(&job->json, NULL);
        tt_json_int(&job->json, "bytes", (long long)p->bytes[i]);
        tt_json_str(&job->json, "fastest", p->algo[best]->name);
        tt_json_num(&job->json, "fastest_us", f);
        tt_json_str(&job->json, "pick_before", pick0->name);
        tt_json_num(&job->json, "pick_before_us", p->us[k0][i]);
        tt_json_str(&job->json, "pick_after", pick1->name);
        tt_json_num(&job->json, "pick_after_us", p->us[k1][i]);
        tt_json_num(&job->json, "tuned_after_us", p->us[p->nalgo][i]);
        tt_json_end(&job->json);
    }
    if (job->o->json)
        tt_json_end(&job->json);
    if (job->text)
        printf("after the fit, the tuner's pick is within 10%% of the fastest algorithm at %d of %d sizes "
               "(before:\n"
               "see the ratios); the tuned communicator itself was within 10%% at %d\n",
               within, p->nsizes, *tuned_within);
    return within;
}

int tt_bw_fit_report(tt_bw_job_t *job, const tt_fit_pass_t *first, const tt_fit_pass_t *second,
                     const tt_cost_model_t *before, const tt_cost_model_t *link, const tt_cost_model_t *after,
                     tt_fit_errors_t *errs)
{
    const tt_cost_model_t *models[3] = {before, link, after};
    error_table(job, first, second, models, errs);
    int tuned = 0, within = tuner_table(job, second, before, after, &tuned);
    if (job->o->json) {
        tt_json_int(&job->json, "tuner_within_10pct", within);
        tt_json_int(&job->json, "tuned_within_10pct", tuned);
        tt_json_int(&job->json, "tuner_sizes", second->nsizes);
    }
    return within;
}
