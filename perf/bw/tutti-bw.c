/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw: every link kind tutti moves data over, measured the way
 * nvbandwidth, p2pBandwidthLatencyTest, perftest and OSU measure theirs:
 * all-pairs matrices and per-size sweeps over each of tutti's transports
 * (shm, tcp, and any other in the build), the GPU copy rows, a verdict on
 * whether each link is normal, and --fit, which turns the measurements into
 * the cost model's parameters. Run one per rank under tutti-run, mpirun or
 * torchrun; rank 0 prints.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bw.h"
#include "comm/comm.h"
#include "comm/handle.h"
#include "perf/common/opt_parse.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tutti-bw [options]    (one per rank: tutti-run -n 4 tutti-bw; mpirun, torchrun too)\n"
            "  -t, --transport LIST  comma-separated: shm tcp verbs (any transport of the build), gpu,\n"
            "                        or all (default all)\n"
            "  -s, --size SIZE       message size of the bandwidth matrices (default 4M); K/M/G suffixes\n"
            "  -l, --lat-size SIZE   message size of the latency matrix (default 8)\n"
            "  -b, --minbytes SIZE   first size of the sweeps (default 8)\n"
            "  -e, --maxbytes SIZE   last size of the sweeps (default 16M)\n"
            "  -f, --stepfactor F    multiply the size by F each step (default 4)\n"
            "      --matrix          the matrices only\n"
            "      --sweep           the sweeps only\n"
            "  -n, --min-repeats N   repeats of each measurement at least (default 5)\n"
            "      --max-repeats N   and at most (default 100)\n"
            "      --tolerance PCT   repeat until the median's 95%% confidence interval is within\n"
            "                        PCT%% of it (default 2)\n"
            "      --budget SECONDS  or until this much time went into one measurement (default 0.3)\n"
            "      --fit [FILE]      measure each link class, fit the cost model's alpha, beta and gamma,\n"
            "                        write FILE for TUTTI_TUNING_FILE (default tutti-tuning.txt) and\n"
            "                        report every algorithm's prediction error before and after\n"
            "      --fit-max SIZE    largest all-reduce --fit times (default 16M)\n"
            "      --fit-reps N      repeats of each algorithm and size under --fit (default 7)\n"
            "      --json, --csv     machine-readable output (tutti-bw(1) documents the JSON schema)\n");
}

enum {
    OPT_MATRIX = 256,
    OPT_SWEEP,
    OPT_MAXREP,
    OPT_TOL,
    OPT_BUDGET,
    OPT_FIT,
    OPT_FITMAX,
    OPT_FITREPS,
    OPT_JSON,
    OPT_CSV
};

/* Transports a build may lack (configure leaves them out without their
 * library): -t names them to hear "not built", not as typos. */
static const char *const optional_transports[] = {"verbs", NULL};

/* -t's list, checked and spelled as the build's registry does: "ib" (what
 * NCCL and perftest call InfiniBand) is the verbs transport. */
static int check_transports(char *list, size_t len)
{
    char in[256], out[256] = "", known[160] = "";
    snprintf(in, sizeof in, "%s", list);
    for (int i = 0; tt_transports[i]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s, ", tt_transports[i]->name);
    char *save = NULL;
    for (char *name = strtok_r(in, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const char *as = strcasecmp(name, "ib") == 0 ? "verbs" : name;
        int ok = strcasecmp(as, "all") == 0 || strcasecmp(as, "gpu") == 0;
        for (int i = 0; !ok && tt_transports[i]; i++)
            if (strcasecmp(as, tt_transports[i]->name) == 0)
                as = tt_transports[i]->name, ok = 1;
        for (int i = 0; !ok && optional_transports[i]; i++)
            ok = strcasecmp(as, optional_transports[i]) == 0;
        if (!ok) {
            fprintf(stderr, "tutti-bw: -t: no transport '%s'; this tutti has %sgpu and all\n", name, known);
            return -1;
        }
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", *out ? "," : "", as);
    }
    for (char *c = out; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    snprintf(list, len, "%s", out);
    return 0;
}

/* The options that must agree with each other. */
static int check_opts(tt_bw_opts_t *o)
{
    if (o->minb > o->maxb || o->rule.min_n > o->rule.max_n || (o->json && o->csv)) {
        fprintf(stderr, "tutti-bw: %s\n",
                o->minb > o->maxb   ? "-b is larger than -e"
                : o->json && o->csv ? "--json and --csv exclude each other"
                                    : "-n is larger than --max-repeats");
        return -1;
    }
    return check_transports(o->transports, sizeof o->transports);
}

static int parse_args(int argc, char **argv, tt_bw_opts_t *o)
{
    static const struct option longs[] = {{"transport", required_argument, 0, 't'},
                                          {"size", required_argument, 0, 's'},
                                          {"lat-size", required_argument, 0, 'l'},
                                          {"minbytes", required_argument, 0, 'b'},
                                          {"maxbytes", required_argument, 0, 'e'},
                                          {"stepfactor", required_argument, 0, 'f'},
                                          {"matrix", no_argument, 0, OPT_MATRIX},
                                          {"sweep", no_argument, 0, OPT_SWEEP},
                                          {"min-repeats", required_argument, 0, 'n'},
                                          {"max-repeats", required_argument, 0, OPT_MAXREP},
                                          {"tolerance", required_argument, 0, OPT_TOL},
                                          {"budget", required_argument, 0, OPT_BUDGET},
                                          {"fit", optional_argument, 0, OPT_FIT},
                                          {"fit-max", required_argument, 0, OPT_FITMAX},
                                          {"fit-reps", required_argument, 0, OPT_FITREPS},
                                          {"json", no_argument, 0, OPT_JSON},
                                          {"csv", no_argument, 0, OPT_CSV},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    *o = (tt_bw_opts_t){.size = 4 << 20,
                        .lat_size = 8,
                        .minb = 8,
                        .maxb = 16 << 20,
                        .factor = 4,
                        .rule = {.min_n = 5, .max_n = 100, .tol = 0.02, .budget_s = 0.3},
                        .fit_max = 16 << 20,
                        .fit_reps = 7};
    snprintf(o->transports, sizeof o->transports, "all");
    snprintf(o->fit_file, sizeof o->fit_file, "tutti-tuning.txt");
    int only_matrix = 0, only_sweep = 0, opt, bad = 0;
    const char *me = "tutti-bw";
    while (!bad && (opt = getopt_long(argc, argv, "t:s:l:b:e:f:n:h", longs, NULL)) != -1) {
        switch (opt) {
        case 't': snprintf(o->transports, sizeof o->transports, "%s", optarg); break;
        case 's': bad = tt_opt_size(me, "-s", optarg, 1, &o->size); break;
        case 'l': bad = tt_opt_size(me, "-l", optarg, 1, &o->lat_size); break;
        case 'b': bad = tt_opt_size(me, "-b", optarg, 1, &o->minb); break;
        case 'e': bad = tt_opt_size(me, "-e", optarg, 1, &o->maxb); break;
        case 'f': bad = tt_opt_double(me, "-f", optarg, 1.01, 1024, &o->factor); break;
        case 'n': bad = tt_opt_int(me, "-n", optarg, 1, 10000, &o->rule.min_n); break;
        case OPT_MAXREP: bad = tt_opt_int(me, "--max-repeats", optarg, 1, 10000, &o->rule.max_n); break;
        case OPT_TOL:
            bad = tt_opt_double(me, "--tolerance", optarg, 0, 100, &o->rule.tol);
            o->rule.tol /= 100;
            break;
        case OPT_BUDGET: bad = tt_opt_double(me, "--budget", optarg, 0, 3600, &o->rule.budget_s); break;
        case OPT_MATRIX: only_matrix = 1; break;
        case OPT_SWEEP: only_sweep = 1; break;
        case OPT_FIT:
            o->fit = 1;
            if (!optarg && optind < argc && argv[optind][0] != '-')
                optarg = argv[optind++]; /* "--fit FILE" as well as "--fit=FILE" */
            if (optarg)
                snprintf(o->fit_file, sizeof o->fit_file, "%s", optarg);
            break;
        case OPT_FITMAX: bad = tt_opt_size(me, "--fit-max", optarg, 4, &o->fit_max); break;
        case OPT_FITREPS: bad = tt_opt_int(me, "--fit-reps", optarg, 1, 101, &o->fit_reps); break;
        case OPT_JSON: o->json = 1; break;
        case OPT_CSV: o->csv = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (bad)
        return -1;
    if (optind < argc) {
        fprintf(stderr, "tutti-bw: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    o->matrix = !only_sweep || only_matrix;
    o->sweep = !only_matrix || only_sweep;
    return check_opts(o);
}

/* Joins the job; without a launcher, runs as a job of one rank. */
static tutti_status_t join(tutti_comm_t *comm)
{
    tutti_status_t st = tutti_comm_init_env(comm, NULL);
    if (st != TUTTI_ERR_CONFIG || getenv("TUTTI_RANK") || getenv("RANK") || getenv("PMIX_RANK"))
        return st;
    tutti_unique_id_t id;
    st = tutti_get_unique_id(&id);
    return st ? st : tutti_comm_init(comm, 1, 0, &id, NULL);
}

static void json_head(tt_bw_job_t *job)
{
    tt_json_t *j = &job->json;
    const tt_bw_opts_t *o = job->o;
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    tt_json_obj(j, NULL);
    tt_json_str(j, "tool", "tutti-bw");
    tt_json_int(j, "schema", 1);
    tt_json_str(j, "version", PACKAGE_VERSION);
    tt_json_str(j, "date", date);
    tt_json_int(j, "nranks", job->nranks);
    tt_json_int(j, "nhosts", job->in->hosts.nhosts);
    tt_json_arr(j, "ranks");
    for (int r = 0; r < job->nranks; r++) {
        const tt_endpoint_t *e = &job->in->endpoints[r];
        tt_json_obj(j, NULL);
        tt_json_int(j, "rank", r);
        tt_json_str(j, "host", e->hostname);
        tt_json_int(j, "host_index", job->in->hosts.host_of[r]);
        tt_json_int(j, "pid", e->pid);
        tt_json_int(j, "cpus", e->cpus);
        tt_json_int(j, "numa", (long long)(e->place >> 32));
        tt_json_int(j, "first_cpu", (long long)(e->place & 0xffffffffu));
        tt_json_end(j);
    }
    tt_json_end(j);
    tt_json_obj(j, "options");
    tt_json_str(j, "transports", o->transports);
    tt_json_int(j, "size", (long long)o->size);
    tt_json_int(j, "lat_size", (long long)o->lat_size);
    tt_json_int(j, "minbytes", (long long)o->minb);
    tt_json_int(j, "maxbytes", (long long)o->maxb);
    tt_json_num(j, "stepfactor", o->factor);
    tt_json_int(j, "min_repeats", o->rule.min_n);
    tt_json_int(j, "max_repeats", o->rule.max_n);
    tt_json_num(j, "tolerance", o->rule.tol);
    tt_json_num(j, "budget_s", o->rule.budget_s);
    tt_json_end(j);
    tt_json_num(j, "memcpy_gbps", job->memcpy_gbps);
    tt_json_obj(j, "machine");
    tt_json_int(j, "cpus", job->machine.cpus);
    tt_json_int(j, "ranks_here", job->machine.ranks_here);
    tt_json_num(j, "load1", job->machine.load1 >= 0 ? job->machine.load1 : 0.0 / 0.0);
    tt_json_end(j);
}

/* Rank 0: how busy other processes kept the CPUs while tp was measured. */
static void others_since(tt_bw_job_t *job, const char *name, const tt_bw_cpu_mark_t *mark)
{
    job->others_cpus = tt_bw_others_cpus(job, mark);
    if (job->text && job->others_cpus >= 0)
        printf("# while %s was measured, other processes kept %.1f of the %d CPUs busy\n", name,
               job->others_cpus, job->machine.cpus);
    if (job->o->json)
        tt_json_num(&job->json, "others_cpus", job->others_cpus >= 0 ? job->others_cpus : 0.0 / 0.0);
}

/* One transport: matrices, sweeps and verdicts. */
static tutti_status_t one_transport(tt_bw_job_t *job, const char *name)
{
    tt_bw_tp_t tp;
    char why[200] = "";
    tutti_status_t st = tt_bw_tp_open(job, name, &tp, why, sizeof why);
    if (job->rank == 0 && job->o->json) {
        tt_json_obj(&job->json, NULL);
        tt_json_str(&job->json, "name", name);
        tt_json_str(&job->json, "status", st ? "skipped" : "measured");
        if (st)
            tt_json_str(&job->json, "why", why);
    }
    if (st && (job->text || (job->rank == 0 && job->o->csv)))
        printf("%s%s: %s; skipped\n", job->o->csv ? "# " : "", name, why);
    if (st == TUTTI_ERR_UNSUPPORTED)
        st = TUTTI_SUCCESS;
    tt_bw_reached_t reached[TT_BW_MAX_CLASSES];
    tt_bw_cpu_mark_t mark;
    int nreached = 0;
    if (!st && tp.comm && job->rank == 0)
        tt_bw_cpu_mark(job, &mark);
    if (!st && tp.comm) {
        if (job->text)
            printf("\n== %s (%d ranks, %d channels per pair)\n", name, tp.n, tp.in->nchannels);
        if (job->o->matrix)
            st = tt_bw_matrices(job, &tp, reached, &nreached);
        if (!st && job->o->sweep)
            st = tt_bw_sweeps(job, &tp, reached, &nreached);
        if (!st && job->rank == 0)
            others_since(job, name, &mark);
        if (!st && job->rank == 0 && job->o->json)
            tt_json_arr(&job->json, "verdicts");
        for (int c = 0; !st && c < nreached; c++)
            tt_bw_verdict(job, &tp, &reached[c]);
        if (!st && job->rank == 0 && job->o->json)
            tt_json_end(&job->json);
    }
    if (job->rank == 0 && job->o->json)
        tt_json_end(&job->json);
    tt_bw_tp_close(&tp);
    return st;
}

/* Every transport the list names; "all": the build's and gpu. */
static tutti_status_t run_all(tt_bw_job_t *job)
{
    char list[512];
    if (strcmp(job->o->transports, "all") == 0) {
        size_t len = 0;
        list[0] = '\0';
        for (int i = 0; tt_transports[i]; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s,", tt_transports[i]->name);
        snprintf(list + len, sizeof list - len, "gpu");
    } else {
        snprintf(list, sizeof list, "%s", job->o->transports);
    }
    int gpu = 0;
    tutti_status_t st = TUTTI_SUCCESS;
    if (job->rank == 0 && job->o->json)
        tt_json_arr(&job->json, "transports");
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name && !st; name = strtok_r(NULL, ",", &save)) {
        if (strcmp(name, "gpu") == 0)
            gpu = 1;
        else
            st = one_transport(job, name);
    }
    if (job->rank == 0 && job->o->json)
        tt_json_end(&job->json);
    if (!st && gpu)
        tt_bw_gpu(job);
    return st;
}

int main(int argc, char **argv)
{
    tt_bw_opts_t o;
    if (parse_args(argc, argv, &o))
        return 2;
    tt_bw_job_t job = {.o = &o};
    tutti_status_t st = join(&job.ctl);
    if (st) {
        fprintf(stderr, "tutti-bw: joining the job failed: %s: %s\n", tutti_strerror(st),
                tutti_comm_last_error(NULL));
        return 1;
    }
    job.in = tt_comm_lookup(job.ctl, NULL);
    if (tt_bw_connect_all(job.in)) {
        fprintf(stderr, "tutti-bw: connecting the ranks failed: %s\n", tutti_comm_last_error(job.ctl));
        return 1;
    }
    job.rank = job.in->rank;
    job.nranks = job.in->nranks;
    job.text = job.rank == 0 && !o.json && !o.csv;
    if (tt_bw_machine_init(&job, &job.machine)) {
        fprintf(stderr, "tutti-bw: rank %d: sharing the ranks' CPU masks failed\n", job.rank);
        tutti_comm_abort(job.ctl);
        return 1;
    }
    if (job.rank == 0)
        job.memcpy_gbps = tt_bw_memcpy_gbps((size_t)64 << 20);
    if (job.text) {
        char state[320];
        tt_bw_machine_describe(&job, state, sizeof state);
        printf("# tutti-bw %s: %d ranks on %d host%s; memcpy %.2f GB/s (one CPU, 64 MiB)\n# %s\n",
               PACKAGE_VERSION, job.nranks, job.in->hosts.nhosts, job.in->hosts.nhosts == 1 ? "" : "s",
               job.memcpy_gbps, state);
    }
    if (job.rank == 0 && o.csv)
        printf(
            "section,transport,kind,a,b,class,bytes,median,p5,p95,p99,cv,samples,outliers,stable,msg_rate\n");
    if (job.rank == 0 && o.json)
        json_head(&job);
    st = o.fit ? tt_bw_fit(&job) : run_all(&job);
    if (job.rank == 0 && o.json) {
        tt_json_end(&job.json);
        if (!st && tt_json_write(&job.json, stdout)) {
            fprintf(stderr, "tutti-bw: writing the JSON document failed\n");
            job.status = 1;
        }
    }
    tt_json_free(&job.json);
    tt_bw_machine_free(&job.machine);
    if (st) {
        fprintf(stderr, "tutti-bw: rank %d: %s\n", job.rank, tutti_strerror(st));
        tutti_comm_abort(job.ctl);
        return 1;
    }
    tutti_comm_destroy(job.ctl);
    return job.status;
}
