/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw --fit: closes the loop between the links and the tuner. For each
 * link class the job's ranks use (one pair inside a host, one across hosts),
 * it times exchanges of 8 B to 16 MiB, both ends sending and receiving at
 * once as in a round of a collective, and fits the cost model's
 * t(n) = alpha + beta n (beta from the large sizes, alpha from the small
 * ones). gamma comes
 * from tutti's CPU reduction kernel: on shm the receiver reduces straight
 * out of the sender's slot instead of copying, so shm pays only what
 * reducing costs beyond a copy; tcp copies into a bounce buffer first and
 * pays the whole reduction. Where ranks outnumber CPUs, the wake-up of a
 * rank that shares its CPU is timed with a pair pinned to one CPU. The
 * model goes to the tuning file, then every all-reduce algorithm is timed
 * against both models (bw_fit_coll.c).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bw_fit.h"
#include "bw_judge.h"
#include "comm/comm.h"
#include "core/clock.h"
#include "reduce/reduce.h"
#include "transports/transport.h"
#include "tune/cost_save.h"

/* Up to 16 MiB: the largest exchanges stream through memory, as large collectives do. */
static const size_t fit_sizes[] = {8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20, 16 << 20};
#define NPTS ((int)(sizeof fit_sizes / sizeof fit_sizes[0]))
#define REDUCE_BYTES ((size_t)256 << 10)
#define LONGEST_EXCHANGE_US 20000 /* no larger sizes once one exchange takes this long */

typedef struct {
    tt_link_t cls;
    int a, b;
    char transport[16];
    int npts; /* sizes measured: the largest take long on slow links */
    double xch_us[NPTS], lat_us;
    double alpha, beta; /* s, s per byte */
    double worst;       /* largest relative residual of the fit */
} link_fit_t;

static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/*
 * t(n) = alpha + beta n in two regimes, as Hockney's t_0 and r_inf are
 * read: alpha is the median of the three smallest sizes' times, where the
 * per-message cost dominates; beta is the median of (t - alpha) / n over
 * the sizes of 256 KiB and up (at least the three largest measured), where
 * the bytes do. Medians, because one size measured in a busy moment must
 * not tilt the line (a least-squares slope follows its largest point).
 */
static void hockney(link_fit_t *f)
{
    double v[NPTS];
    int k = 0;
    for (int i = 0; i < 3 && i < f->npts; i++)
        v[k++] = f->xch_us[i] * 1e-6;
    f->alpha = median_of(v, k);
    int first = f->npts - 3 < 0 ? 0 : f->npts - 3;
    while (first > 0 && fit_sizes[first - 1] >= ((size_t)256 << 10))
        first--;
    k = 0;
    for (int i = first; i < f->npts; i++)
        if (f->xch_us[i] * 1e-6 > f->alpha)
            v[k++] = (f->xch_us[i] * 1e-6 - f->alpha) / (double)fit_sizes[i];
    f->beta = median_of(v, k);
    f->worst = 0;
    for (int i = 0; i < f->npts; i++) {
        double t = f->xch_us[i] * 1e-6, r = (f->alpha + f->beta * (double)fit_sizes[i]) / t - 1;
        f->worst = r * r > f->worst * f->worst ? r : f->worst;
    }
}

/* The transports of every pair of the job's communicator, on rank 0: [a * n + b] index into tt_transports. */
static tutti_status_t pair_transports(tt_bw_job_t *job, int *idx)
{
    int n = job->nranks, *row = calloc((size_t)n, sizeof *row);
    if (!row)
        return TUTTI_ERR_NO_MEMORY;
    for (int q = 0; q < n; q++) {
        row[q] = -1;
        for (int i = 0; q != job->rank && tt_transports[i]; i++)
            if (job->in->peers[q].ops == tt_transports[i])
                row[q] = i;
    }
    tutti_status_t st = tt_bootstrap_allgather(&job->in->bs, row, idx, (size_t)n * sizeof *row);
    free(row);
    return st;
}

/* One pair per link class: a pair across hosts wins over one inside a host. */
static int pick_pairs(tt_bw_job_t *job, const int *idx, link_fit_t *fits)
{
    int n = job->nranks, count = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++) {
                int across = job->in->hosts.host_of[a] != job->in->hosts.host_of[b];
                if (idx[a * n + b] < 0 || across != (pass == 0))
                    continue;
                const tt_transport_ops_t *tp = tt_transports[idx[a * n + b]];
                int seen = 0;
                for (int k = 0; k < count; k++)
                    seen |= fits[k].cls == tp->link; /* the class its ops say it provides */
                if (seen || count == TT_LINK_COUNT)
                    continue;
                fits[count] = (link_fit_t){.cls = tp->link, .a = a, .b = b};
                snprintf(fits[count++].transport, sizeof fits[0].transport, "%s", tp->name);
            }
    return count;
}

/* The job's own connections, as one "transport" that serves every pair. */
static tutti_status_t wrap_ctl(tt_bw_job_t *job, tt_bw_tp_t *tp)
{
    int n = job->nranks;
    memset(tp, 0, sizeof *tp);
    tp->name = "job";
    tp->comm = job->ctl;
    tp->in = job->in;
    tp->n = n;
    tp->buf_bytes = fit_sizes[NPTS - 1];
    tp->uses = calloc((size_t)n * n, sizeof *tp->uses);
    tp->cls = calloc((size_t)n * n, sizeof *tp->cls);
    tp->sendbuf = calloc(1, tp->buf_bytes);
    tp->recvbuf = calloc(1, tp->buf_bytes);
    if (!tp->uses || !tp->cls || !tp->sendbuf || !tp->recvbuf)
        return TUTTI_ERR_NO_MEMORY;
    for (int i = 0; i < n * n; i++)
        tp->uses[i] = i / n != i % n;
    return TUTTI_SUCCESS;
}

/* A ping-pong of 8 bytes with both ranks of the pair on the CPU of a, each
 * waking the other: one-way us. */
static tutti_status_t pinned_latency(tt_bw_job_t *job, tt_bw_tp_t *tp, int a, int b, double *us)
{
    cpu_set_t saved, one;
    int pinned = 0;
    if (job->rank == a || job->rank == b) {
        CPU_ZERO(&one);
        CPU_SET((int)(job->in->endpoints[a].place & 0xffffffffu), &one);
        pinned =
            sched_getaffinity(0, sizeof saved, &saved) == 0 && sched_setaffinity(0, sizeof one, &one) == 0;
    }
    tt_bw_result_t r;
    int valid = 0;
    tp->force_yield = 1;
    tutti_status_t st = tt_bw_cell(job, tp, a, b, TT_BW_LAT, 8, &r, &valid);
    tp->force_yield = 0;
    if (pinned)
        sched_setaffinity(0, sizeof saved, &saved);
    *us = valid ? r.stats.median : 0;
    return st;
}

/* s per byte of tutti's fp32 sum kernel (dst += src), and of memcpy, on rank 0's CPU. */
static void reduce_rates(double *reduce_s, double *copy_s)
{
    size_t n = REDUCE_BYTES / 4;
    float *dst = calloc(n, 4), *src = calloc(n, 4);
    tt_reduce_fn fn = tt_reduce_get(TUTTI_FP32, TUTTI_SUM);
    *reduce_s = *copy_s = 0;
    if (!dst || !src || !fn)
        goto out;
    for (int kind = 0; kind < 2; kind++) {
        double best = 1e30;
        for (int rep = 0; rep < 7; rep++) {
            int64_t t0 = tt_now_ns();
            for (int i = 0; i < 64; i++) {
                if (kind == 0)
                    fn(dst, dst, src, n);
                else
                    memcpy(dst, src, REDUCE_BYTES);
                __asm__ __volatile__("" : : "r"(dst) : "memory");
            }
            double s = (double)(tt_now_ns() - t0) * 1e-9 / 64 / (double)REDUCE_BYTES;
            best = rep > 0 && s < best ? s : best; /* the first pass warms the caches */
        }
        *(kind == 0 ? reduce_s : copy_s) = best;
    }
out:
    free(dst);
    free(src);
}

static void print_fits(const tt_bw_job_t *job, const link_fit_t *fits, int count,
                       const tt_cost_model_t *before)
{
    printf("\n# tutti-bw --fit: %d ranks on %d host%s; exchanges of 8 B to 16 MiB, both ends at once\n",
           job->nranks, job->in->hosts.nhosts, job->in->hosts.nhosts == 1 ? "" : "s");
    printf("%-6s %-8s %5s %10s %9s %12s   %s\n", "class", "over", "pair", "alpha_us", "GB/s", "worst_resid",
           "(before: alpha_us GB/s)");
    for (int k = 0; k < count; k++) {
        const link_fit_t *f = &fits[k];
        const tt_link_cost_t *c = &before->link[f->cls];
        printf("%-6s %-8s %2d-%-2d %10.3f %9.3f %11.0f%%   (%.3f %.3f)\n", tt_link_name(f->cls), f->transport,
               f->a, f->b, f->alpha * 1e6, 1 / (f->beta * 1e9), 100 * f->worst, c->alpha * 1e6,
               1 / (c->beta * 1e9));
    }
    printf("%-9s", "bytes");
    for (int k = 0; k < count; k++)
        printf(" %10s_us %10s_us", tt_link_name(fits[k].cls), "fitted");
    printf("\n");
    for (int i = 0; i < NPTS; i++) {
        printf("%-9zu", fit_sizes[i]);
        for (int k = 0; k < count; k++)
            if (i < fits[k].npts)
                printf(" %13.2f %13.2f", fits[k].xch_us[i],
                       (fits[k].alpha + fits[k].beta * (double)fit_sizes[i]) * 1e6);
            else
                printf(" %13s %13s", "-", "-");
        printf("\n");
    }
}

static void json_fits(tt_bw_job_t *job, const link_fit_t *fits, int count, const tt_cost_model_t *after,
                      double reduce_s, double copy_s)
{
    tt_json_t *j = &job->json;
    tt_json_arr(j, "links");
    for (int k = 0; k < count; k++) {
        const link_fit_t *f = &fits[k];
        tt_json_obj(j, NULL);
        tt_json_str(j, "class", tt_link_name(f->cls));
        tt_json_str(j, "transport", f->transport);
        tt_json_int(j, "a", f->a);
        tt_json_int(j, "b", f->b);
        tt_json_num(j, "alpha_us", f->alpha * 1e6);
        tt_json_num(j, "gbps", 1 / (f->beta * 1e9));
        tt_json_num(j, "reduce_gbps", 1 / (after->link[f->cls].gamma * 1e9));
        tt_json_num(j, "worst_residual", f->worst);
        tt_json_num(j, "latency_us", f->lat_us);
        tt_json_arr(j, "points");
        for (int i = 0; i < f->npts; i++) {
            tt_json_obj(j, NULL);
            tt_json_int(j, "bytes", (long long)fit_sizes[i]);
            tt_json_num(j, "exchange_us", f->xch_us[i]);
            tt_json_num(j, "fitted_us", (f->alpha + f->beta * (double)fit_sizes[i]) * 1e6);
            tt_json_end(j);
        }
        tt_json_end(j);
        tt_json_end(j);
    }
    tt_json_end(j);
    tt_json_num(j, "reduce_kernel_gbps", 1 / (reduce_s * 1e9));
    tt_json_num(j, "memcpy_small_gbps", 1 / (copy_s * 1e9));
    tt_json_num(j, "wake_us", after->wake_s * 1e6);
}

/* Rank 0: the fitted model from the measurements. */
static void fitted_model(tt_bw_job_t *job, link_fit_t *fits, int count, double wake_us, double reduce_s,
                         double copy_s, tt_cost_model_t *m)
{
    for (int k = 0; k < count; k++) {
        link_fit_t *f = &fits[k];
        hockney(f);
        tt_link_cost_t *c = &m->link[f->cls];
        if (f->beta > 0) {
            c->alpha = f->alpha;
            c->beta = f->beta;
        }
        double extra = reduce_s - copy_s > 0.1 * reduce_s ? reduce_s - copy_s : 0.1 * reduce_s;
        if (reduce_s > 0)
            c->gamma = f->cls == TT_LINK_SHM ? extra : reduce_s;
        int across = job->in->hosts.host_of[f->a] != job->in->hosts.host_of[f->b];
        *(across ? &m->inter : &m->intra) = f->cls;
    }
    if (wake_us > 0)
        m->wake_s = wake_us * 1e-6;
}

static int write_file(const char *path, const tt_cost_model_t *m, unsigned measured, const char *header)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = tt_cost_save(m, measured, header, f);
    return fclose(f) || rc ? -1 : 0;
}

/* Pins the pair of one host to two different CPUs while it measures its
 * link, so that the fit sees the link and not the scheduler putting both
 * on one CPU (the wake-up is measured on its own); 1 when this rank is pinned. */
static int pin_apart(const tt_bw_job_t *job, int a, int b, cpu_set_t *saved)
{
    const tt_endpoint_t *ea = &job->in->endpoints[a], *eb = &job->in->endpoints[b];
    if ((job->rank != a && job->rank != b) || ea->host_id != eb->host_id ||
        sched_getaffinity(0, sizeof *saved, saved))
        return 0;
    int first = (int)(ea->place & 0xffffffffu), cpu = first;
    if (job->rank == b) /* another CPU this rank may use */
        for (int c = 0; c < CPU_SETSIZE && cpu == first; c++)
            if (CPU_ISSET(c, saved) && c != first)
                cpu = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return (job->rank == a || cpu != first) && sched_setaffinity(0, sizeof one, &one) == 0;
}

/* Measures the pairs; fills fits (rank 0) and the pinned latency. */
static tutti_status_t measure_links(tt_bw_job_t *job, link_fit_t *fits, int count, double *wake_us)
{
    tt_bw_tp_t tp;
    tutti_status_t st = wrap_ctl(job, &tp);
    for (int k = 0; k < count && !st; k++) {
        tt_bw_result_t r;
        int valid = 0;
        cpu_set_t saved;
        int pinned = pin_apart(job, fits[k].a, fits[k].b, &saved);
        st = tt_bw_cell(job, &tp, fits[k].a, fits[k].b, TT_BW_LAT, fit_sizes[0], &r, &valid);
        fits[k].lat_us = r.stats.median;
        /* Every rank has the result, so every rank stops at the same size. */
        for (int i = 0; i < NPTS && !st && (i == 0 || fits[k].xch_us[i - 1] < LONGEST_EXCHANGE_US); i++) {
            st = tt_bw_cell(job, &tp, fits[k].a, fits[k].b, TT_BW_XCH, fit_sizes[i], &r, &valid);
            fits[k].xch_us[i] = r.stats.median;
            fits[k].npts = i + 1;
        }
        if (pinned)
            sched_setaffinity(0, sizeof saved, &saved);
    }
    *wake_us = 0;
    for (int k = 0; k < count && !st; k++) {
        int across = job->in->hosts.host_of[fits[k].a] != job->in->hosts.host_of[fits[k].b];
        if (across || job->in->policy.tuner.model.crowding <= 1)
            continue;
        double us = 0;
        st = pinned_latency(job, &tp, fits[k].a, fits[k].b, &us);
        *wake_us = us - fits[k].lat_us > 0 ? us - fits[k].lat_us : 0;
    }
    tp.comm = NULL; /* the job's: not ours to close */
    tt_bw_tp_close(&tp);
    return st;
}

/* Drops the corrections for this job's shape: the fit replaces them. */
static void drop_this_shape(const tt_bw_job_t *job, tt_cost_fix_t *f)
{
    int kept = 0;
    for (int i = 0; i < f->n; i++)
        if (f->e[i].nranks != job->nranks || f->e[i].nhosts != job->in->hosts.nhosts)
            f->e[kept++] = f->e[i];
    f->n = kept;
}

/* Rank 0 writes the user's file; every other rank a private copy to price with. */
static tutti_status_t write_everywhere(tt_bw_job_t *job, const tt_cost_model_t *m, unsigned measured,
                                       const char *header, char *mine, size_t len, const char **path)
{
    int wrote = -1;
    *path = job->o->fit_file;
    if (job->rank == 0) {
        wrote = write_file(*path, m, measured, header);
    } else {
        snprintf(mine, len, "/tmp/tutti-fit-%d-XXXXXX", (int)getpid());
        int fd = mkstemp(mine);
        if (fd >= 0) {
            close(fd);
            wrote = write_file(mine, m, measured, header);
        }
        *path = mine;
    }
    if (wrote)
        fprintf(stderr, "tutti-bw: rank %d: cannot write the tuning file %s\n", job->rank, *path);
    int ok = wrote == 0, all = 0;
    tutti_status_t st = tutti_allreduce(&ok, &all, 1, TUTTI_INT32, TUTTI_MIN, job->ctl, NULL);
    return st ? st : all ? TUTTI_SUCCESS : TUTTI_ERR_SYSTEM;
}

static void header_text(const tt_bw_job_t *job, const link_fit_t *fits, int count, char *out, size_t size,
                        unsigned *measured)
{
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", localtime(&now));
    size_t len = (size_t)snprintf(out, size, "written by tutti-bw --fit on %s, %d ranks on %d host%s", date,
                                  job->nranks, job->in->hosts.nhosts, job->in->hosts.nhosts == 1 ? "" : "s");
    *measured = 0;
    for (int k = 0; k < count && len < size; k++) {
        *measured |= 1u << fits[k].cls;
        len += (size_t)snprintf(out + len, size - len, "\n%s: ranks %d and %d over %s",
                                tt_link_name(fits[k].cls), fits[k].a, fits[k].b, fits[k].transport);
    }
}

/* Rank 0: what shows that the fit does not explain its data, one line
 * each into out; how many. */
static int poor_fit(const tt_bw_job_t *job, const link_fit_t *fits, int count, const tt_fit_errors_t *errs,
                    char *out, size_t size)
{
    int lines = 0;
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < count; k++) {
        const link_fit_t *f = &fits[k];
        double fitted[NPTS];
        int at;
        for (int i = 0; i < f->npts; i++)
            fitted[i] = (f->alpha + f->beta * (double)fit_sizes[i]) * 1e6;
        double miss = tt_bw_fit_miss(f->xch_us, fitted, f->npts, &at);
        if (miss <= TT_BW_FIT_MAX_MISS || len >= size)
            continue;
        char sz[32];
        tt_bw_format_bytes(fit_sizes[at], sz, sizeof sz);
        len += (size_t)snprintf(out + len, size - len,
                                "%s: the line alpha + beta n misses the %s exchange by a factor of %.1f "
                                "(measured %.1f us, fitted %.1f us)\n",
                                tt_link_name(f->cls), sz, miss, f->xch_us[at], fitted[at]);
        lines++;
    }
    if (errs->link_fit > TT_BW_FIT_MAX_ERROR && len < size) {
        len += (size_t)snprintf(out + len, size - len,
                                "the fitted links' predictions of the all-reduce times are off by %.0f%% "
                                "(median): something the links do not show dominates them\n",
                                100 * errs->link_fit);
        lines++;
    }
    if (errs->after > TT_BW_FIT_MAX_ERROR && len < size) {
        len += (size_t)snprintf(out + len, size - len,
                                "with its corrections, the model's predictions of a second pass are off by "
                                "%.0f%% (median): the times did not repeat\n",
                                100 * errs->after);
        lines++;
    }
    if (lines && len < size) {
        char state[320];
        tt_bw_machine_describe(job, state, sizeof state);
        len += (size_t)snprintf(out + len, size - len, "machine: %s", state);
        if (job->others_cpus >= 0 && len < size)
            len += (size_t)snprintf(out + len, size - len,
                                    "; other processes kept %.1f of its CPUs busy during "
                                    "the fit",
                                    job->others_cpus);
        if (len < size)
            snprintf(out + len, size - len, "\n");
    }
    return lines;
}

/* Rank 0: says loudly that the fit does not explain its data, and marks the file. */
static void warn_poor(tt_bw_job_t *job, const link_fit_t *fits, int count, const tt_fit_errors_t *errs,
                      const tt_cost_model_t *m, unsigned measured, const char *header)
{
    char why[1536], marked[2048];
    int lines = poor_fit(job, fits, count, errs, why, sizeof why);
    if (job->o->json) {
        tt_json_bool(&job->json, "explains_data", lines == 0);
        tt_json_str(&job->json, "warnings", why);
    }
    if (!lines)
        return;
    fprintf(stderr,
            "\ntutti-bw --fit: WARNING: this fit does not explain its data, and tuning with %s may do\n"
            "more harm than good:\n",
            job->o->fit_file);
    for (const char *l = why, *end; *l; l = end + 1) {
        end = strchr(l, '\n');
        fprintf(stderr, "  - %.*s\n", (int)(end - l), l);
    }
    fprintf(stderr, "Rerun on an idle machine, with a CPU for each rank, before tuning with it.\n");
    snprintf(marked, sizeof marked, "%s\nWARNING: this fit does not explain its data:\n%s", header, why);
    marked[strlen(marked) - 1] = '\0';
    if (write_file(job->o->fit_file, m, measured, marked))
        fprintf(stderr, "tutti-bw: cannot mark the tuning file %s\n", job->o->fit_file);
}

/* Rank 0's model to every rank; each keeps its own pointer to the pairs' link classes. */
static tutti_status_t broadcast_model(tt_bw_job_t *job, tt_cost_model_t *m)
{
    const tt_cost_model_t *mine = &job->in->policy.tuner.model;
    tutti_status_t st = tutti_broadcast(m, m, sizeof *m, TUTTI_UINT8, 0, job->ctl, NULL);
    m->link_of = mine->link_of;
    m->link_arg = mine->link_arg;
    return st;
}

tutti_status_t tt_bw_fit(tt_bw_job_t *job)
{
    int n = job->nranks, count = 0;
    link_fit_t fits[TT_LINK_COUNT];
    tt_bw_cpu_mark_t mark;
    if (job->rank == 0)
        tt_bw_cpu_mark(job, &mark);
    int *idx = calloc((size_t)n * n, sizeof *idx);
    tt_cost_model_t *link = calloc(1, sizeof *link), *after = calloc(1, sizeof *after);
    tt_fit_pass_t *pass = calloc(2, sizeof *pass);
    tutti_status_t st = idx && link && after && pass ? pair_transports(job, idx) : TUTTI_ERR_NO_MEMORY;
    if (!st)
        count = pick_pairs(job, idx, fits);
    double wake_us = 0, reduce_s = 0, copy_s = 0;
    if (!st)
        st = measure_links(job, fits, count, &wake_us);
    const tt_cost_model_t *before = &job->in->policy.tuner.model;
    if (!st) {
        *link = *before;
        drop_this_shape(job, &link->fix);
    }
    if (!st && job->rank == 0) {
        reduce_rates(&reduce_s, &copy_s);
        fitted_model(job, fits, count, wake_us, reduce_s, copy_s, link);
    }
    if (!st) /* every rank prices with rank 0's model */
        st = broadcast_model(job, link);
    if (!st && job->text)
        print_fits(job, fits, count, before);
    if (!st && job->text)
        printf("reduction: tutti's fp32 sum kernel %.2f GB/s, memcpy %.2f GB/s (%zu KiB, rank 0's CPU); "
               "wake-up of a rank sharing a CPU: %.2f us\n",
               1 / (reduce_s * 1e9), 1 / (copy_s * 1e9), REDUCE_BYTES >> 10, link->wake_s * 1e6);
    if (!st)
        st = tt_bw_fit_pass(job, NULL, &pass[0]);
    if (!st && job->rank == 0) {
        *after = *link;
        int lost = tt_bw_fit_corrections(job, &pass[0], after); /* this shape first: it must fit */
        lost += tt_bw_fit_keep_shapes(job, job->o->fit_file, after);
        if (lost)
            fprintf(stderr, "tutti-bw --fit: %d corrections did not fit in the tuning file (at most %d)\n",
                    lost, TT_COST_FIX_MAX);
    }
    if (!st)
        st = broadcast_model(job, after);
    char header[512], mine[64] = "";
    tt_fit_errors_t errs = {0};
    unsigned measured = 0;
    const char *path = NULL;
    header_text(job, fits, count, header, sizeof header, &measured);
    if (!st)
        st = write_everywhere(job, after, measured, header, mine, sizeof mine, &path);
    if (!st && job->text)
        printf("wrote %s (use it with TUTTI_TUNING_FILE=%s)\n", job->o->fit_file, job->o->fit_file);
    if (!st)
        st = tt_bw_fit_pass(job, path, &pass[1]);
    if (!st && job->rank == 0 && job->o->json) {
        tt_json_obj(&job->json, "fit");
        tt_json_str(&job->json, "file", job->o->fit_file);
        json_fits(job, fits, count, link, reduce_s, copy_s);
    }
    if (!st && job->rank == 0)
        tt_bw_fit_report(job, &pass[0], &pass[1], before, link, after, &errs);
    if (!st && job->rank == 0) {
        job->others_cpus = tt_bw_others_cpus(job, &mark);
        warn_poor(job, fits, count, &errs, after, measured, header);
    }
    if (!st && job->rank == 0 && job->o->json)
        tt_json_end(&job->json);
    if (*mine)
        unlink(mine);
    free(idx);
    free(link);
    free(after);
    free(pass);
    return st;
}
