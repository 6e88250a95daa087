/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf's command line: nccl-tests' flags with nccl-tests' meanings
 * (the ones that have no sense for tutti are refused, saying why), tutti's
 * own choices as long options, strict numbers, and the program names
 * all_reduce_perf, all_gather_perf, ... picking the collective.
 */
#include <getopt.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/env_config.h"
#include "perf/common/opt_parse.h"
#include "perf.h"
#include "sched/schedule.h"

const char *const perf_coll_names[TT_COLL_COUNT] = {
    [TT_COLL_ALLREDUCE] = "allreduce", [TT_COLL_REDUCE_SCATTER] = "reducescatter",
    [TT_COLL_ALLGATHER] = "allgather", [TT_COLL_BROADCAST] = "broadcast",
    [TT_COLL_REDUCE] = "reduce",       [TT_COLL_ALLTOALL] = "alltoall",
    [TT_COLL_SEND] = "sendrecv"};

/* nccl-tests' program names. */
static const struct {
    const char *program;
    tt_coll_t coll;
} programs[] = {{"all_reduce_perf", TT_COLL_ALLREDUCE}, {"reduce_scatter_perf", TT_COLL_REDUCE_SCATTER},
                {"all_gather_perf", TT_COLL_ALLGATHER}, {"broadcast_perf", TT_COLL_BROADCAST},
                {"reduce_perf", TT_COLL_REDUCE},        {"alltoall_perf", TT_COLL_ALLTOALL},
                {"sendrecv_perf", TT_COLL_SEND}};

static void usage(FILE *out, const char *prog)
{
    fprintf(
        out,
        "usage: %s [options]   (one per rank: tutti-run -n 4 %s ...; flags as nccl-tests has them)\n"
        "  -b, --minbytes SIZE      smallest size (default 32M); K/M/G suffixes\n"
        "  -e, --maxbytes SIZE      largest size (default 32M)\n"
        "  -f, --stepfactor F       multiply the size by F each step (default 2)\n"
        "  -i, --stepbytes SIZE     add SIZE each step instead\n"
        "  -n, --iters N            timed iterations per size (default 20)\n"
        "  -w, --warmup_iters N     untimed iterations first (default 5)\n"
        "  -m, --agg_iters N        collectives per iteration, issued back to back (default 1)\n"
        "  -N, --run_cycles N       run the sweep N times, 0: until stopped (default 1)\n"
        "  -c, --check N            checked iterations per size, every element compared (default 1)\n"
        "  -d, --datatype T|all     int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double\n"
        "                           f8e4m3 f8e5m2 (default float)\n"
        "  -o, --op OP|all          sum prod min max avg (default sum)\n"
        "  -r, --root R|all         root of broadcast and reduce (default 0)\n"
        "  -a, --average 0|1|2|3    time over ranks: rank 0, mean, min, max (default 1)\n"
        "  -z, --blocking 0..3      device buffers: 1 wait and barrier after each call, 2 wait\n"
        "                           only, 3 wait and barrier after each iteration (default 0)\n"
        "  -y, --stream_null 0|1    device buffers: calls on the default stream (default 0)\n"
        "  -C, --report_cputime 0|1 report the host's time to issue the calls (default 0)\n"
        "      --cpu 0|1            a column of the processor time a rank spends per call: user +\n"
        "                           system of all its threads, the mean over ranks (default 0)\n"
        "  -S, --report_timestamps 0|1  a timestamp on each line (default 0)\n"
        "  -I, --per_iter_timing 0|1  time each iteration: min, max, p99 and cv columns\n"
        "  -K, --per_iter_skip N    leave the first N iterations out of those (default 0)\n"
        "  -M, --memory 0|1         report the peak memory of the ranks (default 0)\n"
        "  -u, --unalign N          buffers start N elements past their allocation (default 0)\n"
        "  -T, --timeout SECONDS    each wait fails after this long (TUTTI_TIMEOUT; default its own)\n"
        "  -J, --output_file FILE   also write the results as JSON (tutti-perf(1) has the schema)\n"
        "  -t, --nthreads N, -g, --ngpus N  ranks per process in nccl-tests; tutti runs one rank per\n"
        "                           process, so N x N > 1 starts that many through tutti-run\n"
        "  -G, -R, -p, -x, -D, -V   nccl-tests' CUDA graph, registration, parallel init, CTA policy and\n"
        "                           device API: accepted at 0, refused otherwise (tutti-perf(1) says why)\n"
        "      --collective C       allreduce reducescatter allgather broadcast reduce alltoall\n"
        "                           sendrecv, or all (default all; all_reduce_perf etc. pick theirs)\n"
        "      --memory host|device GPU buffers and stream-ordered calls with device (default host)\n"
        "      --min-bw GBPS        exit 1 when the average bus bandwidth is below 0.9 x GBPS, as\n"
        "                           nccl-tests does with NCCL_TESTS_MIN_BW (which is read too)\n"
        "      --csv, --json        machine-readable output instead of the table\n"
        "      --compress SPEC      all-reduce through tutti_allreduce_compressed: topk[:DENSITY],\n"
        "                           topk-sampled[:DENSITY], int8[:BLOCK], int4[:BLOCK], sign[:BLOCK]\n"
        "      --no-ef              with --compress: no error feedback\n"
        "Sizes are the full buffer: the output of allgather, the input of reducescatter.\n"
        "busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for reducescatter, allgather\n"
        "and alltoall, x 1 otherwise. Exit status 1 if any element was wrong.\n",
        prog, prog);
}

/* "topk[:DENSITY]", "topk-sampled[:DENSITY]", "int8[:BLOCK]", "int4[:BLOCK]",
 * "sign[:BLOCK]" or "none": the library's kind names, and topk-sampled.
 * 0, or -1 if malformed. */
static int parse_compress(const char *spec, tutti_compress_t *how)
{
    static const char sampled_name[] = "topk-sampled";
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    int sampled = len == strlen(sampled_name) && strncmp(spec, sampled_name, len) == 0;
    const char *want = sampled ? "topk" : NULL;
    int kind = 0;
    for (;; kind++) {
        const char *known = tutti_compress_kind_name((tutti_compress_kind_t)kind);
        if (strcmp(known, "unknown") == 0)
            return -1;
        if (want ? strcmp(known, want) == 0 : strlen(known) == len && strncmp(spec, known, len) == 0)
            break;
    }
    *how = (tutti_compress_t){
        .kind = (tutti_compress_kind_t)kind, .sampled = sampled, .no_error_feedback = how->no_error_feedback};
    if (!colon)
        return 0;
    char *end;
    double v = strtod(colon + 1, &end);
    if (*end || v <= 0)
        return -1;
    if (how->kind == TUTTI_COMPRESS_TOPK) {
        how->density = v;
        return v > 1 ? -1 : 0;
    }
    how->block = (size_t)v;
    return how->kind == TUTTI_COMPRESS_NONE ? -1 : 0;
}

/* A flag nccl-tests has and tutti does not need: 0 is fine, anything else is refused. */
static int refuse(const char *prog, const char *flag, const char *text, const char *why)
{
    int v;
    if (tt_opt_int(prog, flag, text, 0, 1 << 30, &v))
        return -1;
    if (v == 0)
        return 0;
    fprintf(stderr, "%s: %s %s is refused: %s\n", prog, flag, text, why);
    return -1;
}

static int parse_list(const char *prog, int opt, const char *arg, perf_opts_t *o)
{
    if (opt == 'd') {
        o->ndtypes = 0;
        if (strcmp(arg, "all") == 0) {
            for (int t = 0; t < TUTTI_NUM_DTYPES; t++)
                o->dtypes[o->ndtypes++] = (tutti_dtype_t)t;
            return 0;
        }
        o->ndtypes = tt_dtype_parse(arg, &o->dtypes[0]) == 0;
    } else {
        o->nops = 0;
        for (int k = 0; k < TUTTI_NUM_OPS; k++)
            if (strcmp(arg, "all") == 0 || strcmp(arg, tutti_op_name((tutti_op_t)k)) == 0)
                o->ops[o->nops++] = (tutti_op_t)k;
    }
    if ((opt == 'd' ? o->ndtypes : o->nops) > 0)
        return 0;
    fprintf(stderr, "%s: -%c: '%s' is not %s or all\n", prog, opt, arg,
            opt == 'd' ? "a datatype (int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double)"
                       : "an op (sum prod min max avg)");
    return -1;
}

/* Any usual spelling of a collective: case, '_' and '-' do not count
 * (reduce_scatter, Reduce-Scatter, all_reduce), and bcast is broadcast. */
static int parse_coll(const char *prog, const char *arg, perf_opts_t *o)
{
    o->coll = -1;
    if (strcmp(arg, "all") == 0)
        return 0;
    for (int c = 0; c < TT_COLL_COUNT; c++)
        if (perf_coll_names[c] && (tt_coll_name_matches(arg, perf_coll_names[c]) ||
                                   (c == TT_COLL_BROADCAST && tt_coll_name_matches(arg, "bcast"))))
            return o->coll = c, 0;
    fprintf(stderr,
            "%s: --collective: '%s' is not allreduce, reducescatter, allgather, broadcast, reduce, "
            "alltoall, sendrecv or all\n",
            prog, arg);
    return -1;
}

enum { OPT_COLL = 256, OPT_MEM, OPT_CSV, OPT_JSON, OPT_COMPRESS, OPT_NOEF, OPT_MINBW, OPT_CPU };

static const struct option longopts[] = {{"nthreads", required_argument, 0, 't'},
                                         {"ngpus", required_argument, 0, 'g'},
                                         {"minbytes", required_argument, 0, 'b'},
                                         {"maxbytes", required_argument, 0, 'e'},
                                         {"stepbytes", required_argument, 0, 'i'},
                                         {"stepfactor", required_argument, 0, 'f'},
                                         {"iters", required_argument, 0, 'n'},
                                         {"agg_iters", required_argument, 0, 'm'},
                                         {"warmup_iters", required_argument, 0, 'w'},
                                         {"run_cycles", required_argument, 0, 'N'},
                                         {"parallel_init", required_argument, 0, 'p'},
                                         {"check", required_argument, 0, 'c'},
                                         {"op", required_argument, 0, 'o'},
                                         {"datatype", required_argument, 0, 'd'},
                                         {"root", required_argument, 0, 'r'},
                                         {"blocking", required_argument, 0, 'z'},
                                         {"stream_null", required_argument, 0, 'y'},
                                         {"timeout", required_argument, 0, 'T'},
                                         {"cudagraph", required_argument, 0, 'G'},
                                         {"report_cputime", required_argument, 0, 'C'},
                                         {"report_timestamps", required_argument, 0, 'S'},
                                         {"output_file", required_argument, 0, 'J'},
                                         {"average", required_argument, 0, 'a'},
                                         {"local_register", required_argument, 0, 'R'},
                                         {"cta_policy", required_argument, 0, 'x'},
                                         {"device_implementation", required_argument, 0, 'D'},
                                         {"device_cta_count", required_argument, 0, 'V'},
                                         {"memory", required_argument, 0, OPT_MEM},
                                         {"unalign", required_argument, 0, 'u'},
                                         {"per_iter_timing", required_argument, 0, 'I'},
                                         {"per_iter_skip", required_argument, 0, 'K'},
                                         {"collective", required_argument, 0, OPT_COLL},
                                         {"csv", no_argument, 0, OPT_CSV},
                                         {"json", no_argument, 0, OPT_JSON},
                                         {"compress", required_argument, 0, OPT_COMPRESS},
                                         {"no-ef", no_argument, 0, OPT_NOEF},
                                         {"min-bw", required_argument, 0, OPT_MINBW},
                                         {"cpu", required_argument, 0, OPT_CPU},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};

/* One option; 0, or -1 after saying what is wrong. */
static int one_option(const char *p, int opt, const char *arg, perf_opts_t *o, int *threads, int *gpus)
{
    /* --memory is tutti's host|device, and nccl-tests' 0|1 (-M) too. */
    switch (opt) {
    case 't': return tt_opt_int(p, "-t", arg, 1, 4096, threads);
    case 'g': return tt_opt_int(p, "-g", arg, 1, 4096, gpus);
    case 'b': return tt_opt_size(p, "-b", arg, 0, &o->minb);
    case 'e': return tt_opt_size(p, "-e", arg, 0, &o->maxb);
    case 'i': return tt_opt_size(p, "-i", arg, 1, &o->step);
    case 'f': return tt_opt_double(p, "-f", arg, 1.000001, 1e6, &o->factor);
    case 'n': return tt_opt_int(p, "-n", arg, 1, 1 << 30, &o->iters);
    case 'm': return tt_opt_int(p, "-m", arg, 1, 1 << 20, &o->agg);
    case 'w': return tt_opt_int(p, "-w", arg, 0, 1 << 30, &o->warmup);
    case 'N': return tt_opt_int(p, "-N", arg, 0, 1 << 30, &o->cycles);
    case 'c': return tt_opt_int(p, "-c", arg, 0, 1 << 20, &o->check);
    case 'a': return tt_opt_int(p, "-a", arg, 0, 3, &o->average);
    case 'z': return tt_opt_int(p, "-z", arg, 0, 3, &o->blocking);
    case 'y': return tt_opt_int(p, "-y", arg, 0, 1, &o->stream_null);
    case 'T': return tt_opt_int(p, "-T", arg, 0, 1 << 24, &o->timeout_s);
    case 'C': return tt_opt_int(p, "-C", arg, 0, 1, &o->cputime);
    case 'S': return tt_opt_int(p, "-S", arg, 0, 1, &o->timestamps);
    case 'M': return tt_opt_int(p, "-M", arg, 0, 1, &o->memreport);
    case 'u': return tt_opt_int(p, "-u", arg, 0, 1 << 20, &o->unalign);
    case 'I': return tt_opt_int(p, "-I", arg, 0, 1, &o->per_iter);
    case 'K': return tt_opt_int(p, "-K", arg, 0, 1 << 30, &o->per_iter_skip);
    case 'd':
    case 'o': return parse_list(p, opt, arg, o);
    case 'r':
        if (strcmp(arg, "all") == 0)
            return o->root = -1, 0;
        if (tt_parse_int(arg, &(int64_t){0}) == 0)
            return tt_opt_int(p, "-r", arg, 0, 1 << 30, &o->root);
        fprintf(stderr, "%s: -r: '%s' is not a rank or all\n", p, arg);
        return -1;
    case 'J': snprintf(o->json_file, sizeof o->json_file, "%s", arg); return 0;
    case 'G':
        return refuse(p, "-G", arg,
                      "tutti queues device calls to a proxy thread of its own, which a CUDA "
                      "graph cannot capture");
    case 'R':
        return refuse(p, "-R", arg,
                      "tutti registers nothing: its transports copy through buffers of their "
                      "own and cuda_ipc maps peer memory when it first sees it");
    case 'p':
        return refuse(p, "-p", arg,
                      "each tutti process holds one rank, so there is nothing to initialise "
                      "in parallel");
    case 'x': fprintf(stderr, "%s: -x is refused: tutti's kernels have no CTA policy\n", p); return -1;
    case 'D':
    case 'V': return refuse(p, opt == 'D' ? "-D" : "-V", arg, "NCCL's device API has no tutti counterpart");
    case OPT_COLL: return parse_coll(p, arg, o);
    case OPT_MEM:
        if (strcmp(arg, "0") == 0 || strcmp(arg, "1") == 0) /* nccl-tests' --memory: the report */
            return o->memreport = arg[0] == '1', 0;
        o->device = strcmp(arg, "device") == 0;
        if (o->device || strcmp(arg, "host") == 0)
            return 0;
        fprintf(stderr, "%s: --memory: '%s' is not host or device\n", p, arg);
        return -1;
    case OPT_CSV: o->csv = 1; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case OPT_COMPRESS:
        o->compress = 1;
        if (parse_compress(arg, &o->how) == 0)
            return 0;
        fprintf(stderr,
                "%s: --compress: '%s' is not topk[:D], topk-sampled[:D], int8[:B], int4[:B] or sign[:B]\n", p,
                arg);
        return -1;
    case OPT_NOEF: o->how.no_error_feedback = 1; return 0;
    case OPT_MINBW: return tt_opt_double(p, "--min-bw", arg, 0, 1e9, &o->min_bw);
    case OPT_CPU: return tt_opt_int(p, "--cpu", arg, 0, 1, &o->proc_cpu);
    default: return -1;
    }
}

static void defaults(perf_opts_t *o, const char *argv0)
{
    *o = (perf_opts_t){.minb = 32 << 20,
                       .maxb = 32 << 20,
                       .factor = 2,
                       .iters = 20,
                       .warmup = 5,
                       .agg = 1,
                       .check = 1,
                       .cycles = 1,
                       .average = 1,
                       .ndtypes = 1,
                       .dtypes = {TUTTI_FP32},
                       .nops = 1,
                       .ops = {TUTTI_SUM},
                       .coll = -1};
    char copy[256];
    snprintf(copy, sizeof copy, "%s", argv0);
    snprintf(o->program, sizeof o->program, "%s", basename(copy));
    for (size_t k = 0; k < sizeof programs / sizeof programs[0]; k++)
        if (strcmp(o->program, programs[k].program) == 0)
            o->coll = programs[k].coll;
    const char *gate = getenv("NCCL_TESTS_MIN_BW");
    if (gate && *gate)
        o->min_bw = atof(gate);
}

static int checks(const char *p, perf_opts_t *o)
{
    if (o->minb > o->maxb) {
        fprintf(stderr, "%s: -b (%llu) is larger than -e (%llu)\n", p, (unsigned long long)o->minb,
                (unsigned long long)o->maxb);
        return -1;
    }
    if (o->compress &&
        ((o->coll >= 0 && o->coll != TT_COLL_ALLREDUCE) || o->ndtypes != 1 || o->nops != 1 ||
         (o->dtypes[0] != TUTTI_FP32 && o->dtypes[0] != TUTTI_FP16 && o->dtypes[0] != TUTTI_BF16) ||
         (o->ops[0] != TUTTI_SUM && o->ops[0] != TUTTI_AVG))) {
        fprintf(stderr, "%s: --compress runs all-reduce only, on float, half or bfloat16, sum or avg\n", p);
        return -1;
    }
    if (o->compress)
        o->coll = TT_COLL_ALLREDUCE;
    if (o->csv && o->json) {
        fprintf(stderr, "%s: --csv and --json exclude each other\n", p);
        return -1;
    }
    return 0;
}

int perf_parse_args(int argc, char **argv, perf_opts_t *o)
{
    defaults(o, argv[0]);
    int opt, threads = 1, gpus = 1;
    const char *p = o->program;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:S:J:a:R:x:D:V:M:u:I:K:h",
                              longopts, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout, p);
            return 1;
        }
        if (opt == '?' || opt == ':') {
            if (optopt == 'C' || optopt == 'm')
                fprintf(stderr, "%s: -%c needs a number\n", p, optopt);
            else if (optopt)
                fprintf(stderr, "%s: -%c %s\n", p, optopt, opt == ':' ? "needs a value" : "is not an option");
            else
                fprintf(stderr, "%s: %s is not an option\n", p, argv[optind - 1]);
            fprintf(stderr, "%s -h lists the options\n", p);
            return 2;
        }
        if ((opt == 'C' || opt == 'm') && optarg && (optarg[0] < '0' || optarg[0] > '9')) {
            /* tutti-perf once took the collective and the memory kind here. */
            fprintf(stderr, "%s: -%c takes a number as in nccl-tests (%s); choose the %s with --%s %s\n", p,
                    opt, opt == 'C' ? "report CPU time, 0 or 1" : "collectives per iteration",
                    opt == 'C' ? "collective" : "memory kind", opt == 'C' ? "collective" : "memory", optarg);
            return 2;
        }
        if (one_option(p, opt, optarg, o, &threads, &gpus))
            return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", p, argv[optind]);
        return 2;
    }
    if (checks(p, o))
        return 2;
    if (threads * gpus > 1) {
        perf_relaunch(argc, argv, threads * gpus);
        return 2; /* it did not exec: it said why */
    }
    return 0;
}
