/* SPDX-License-Identifier: MIT */
/*
 * tutti-explain: shows what an algorithm does, round by round and rank by
 * rank, from the same schedules the engine runs: who sends which chunk to
 * whom, what each chunk holds afterwards (a0+b0+c0), the bytes, the link
 * class and the cost model's time. --compare tables every algorithm's
 * predicted time and marks the tuner's pick; --mermaid draws the schedule;
 * --measure (under tutti-run) runs it and prints measured time per round.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/registry.h"
#include "tune/policy.h"
#include "core/dtype.h"
#include "core/env_config.h"
#include "tools/explain_measure.h"
#include "tools/explain_names.h"
#include "tools/explain_page.h"
#include "tools/explain_compare.h"
#include "tools/explain_steps.h"
#include "tools/explain_sweep.h"
#include "tools/explain_trace.h"
#include "tools/explain_view.h"
#include "sched/hosts.h"

typedef struct {
    tt_coll_t coll;
    const tt_algorithm_t *algo; /* NULL: the tuner's pick */
    int nranks, nodes, root;
    double ranks_per_cpu; /* the cost model's crowding */
    uint64_t bytes;
    tutti_dtype_t dtype;
    int compare, mermaid, measure, json;
    int nranks_set;      /* -n given */
    const char *html;    /* --html FILE */
    uint64_t minb, maxb; /* --measure across sizes when set */
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tutti-explain [-C COLL] [-a ALGO] [-n P] [-s SIZE] [options]\n"
            "  -C, --collective C   allreduce (default) reduce_scatter allgather broadcast reduce alltoall\n"
            "                       barrier; reducescatter, all_reduce and the like work too\n"
            "  -a, --algo NAME      the algorithm (default: the tuner's pick); tutti-info -A lists them\n"
            "  -n, --nranks P       ranks (default 4; the round-by-round view reads best up to 16)\n"
            "  -s, --size SIZE      bytes of the whole buffer, K/M/G suffixes (default 1M)\n"
            "  -d, --datatype T     element type for the sizes (default float)\n"
            "  -r, --root R         root of broadcast and reduce (default 0)\n"
            "      --nodes K        the ranks as K hosts of consecutive ranks (hierarchical, tcp links)\n"
            "      --ranks-per-cpu X  price ranks sharing CPUs, as tutti does when a host has\n"
            "                       more ranks than CPUs (default 1)\n"
            "      --compare        predicted time of every algorithm; * marks the tuner's pick\n"
            "      --mermaid        a Mermaid sequence diagram of the schedule\n"
            "      --measure        under tutti-run: run it and print measured next to predicted time\n"
            "      --json           the steps as JSON, for tutti-report's animation\n"
            "      --html FILE      a page to step through every algorithm of the collective, picking\n"
            "                       ranks (2 to 16, or -n) and size; opens from the file, no server\n"
            "  -b, -e SIZE          with --measure: time the whole call at sizes from -b to -e (doubling)\n"
            "                       beside the tuner's prediction (a plot; --json for tutti-report)\n"
            "Predictions use the cost model (TUTTI_TUNING_FILE overrides its parameters).\n");
}

/* Any usual spelling of a collective tutti-explain can show. */
static int parse_coll(const char *s, tt_coll_t *out)
{
    return tt_coll_parse(s, out) || *out > TT_COLL_BARRIER ? -1 : 0;
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    enum { OPT_NODES = 256, OPT_CROWDING, OPT_COMPARE, OPT_MERMAID, OPT_MEASURE, OPT_JSON, OPT_HTML };
    static const struct option longs[] = {{"collective", required_argument, 0, 'C'},
                                          {"algo", required_argument, 0, 'a'},
                                          {"nranks", required_argument, 0, 'n'},
                                          {"size", required_argument, 0, 's'},
                                          {"datatype", required_argument, 0, 'd'},
                                          {"root", required_argument, 0, 'r'},
                                          {"nodes", required_argument, 0, OPT_NODES},
                                          {"ranks-per-cpu", required_argument, 0, OPT_CROWDING},
                                          {"compare", no_argument, 0, OPT_COMPARE},
                                          {"mermaid", no_argument, 0, OPT_MERMAID},
                                          {"measure", no_argument, 0, OPT_MEASURE},
                                          {"json", no_argument, 0, OPT_JSON},
                                          {"html", required_argument, 0, OPT_HTML},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    *o = (opts_t){.coll = TT_COLL_ALLREDUCE,
                  .nranks = 4,
                  .nodes = 1,
                  .ranks_per_cpu = 1,
                  .bytes = 1 << 20,
                  .dtype = TUTTI_FP32};
    int c;
    int64_t v;
    const char *algo_name = NULL;
    while ((c = getopt_long(argc, argv, "C:a:n:s:d:r:b:e:h", longs, NULL)) != -1) {
        switch (c) {
        case 'C':
            if (parse_coll(optarg, &o->coll))
                return fprintf(
                           stderr,
                           "tutti-explain: unknown collective '%s' (allreduce, reduce_scatter, allgather, "
                           "broadcast, reduce, alltoall or barrier)\n",
                           optarg),
                       2;
            break;
        case 'a': algo_name = optarg; break;
        case 'n':
            if (tt_parse_int(optarg, &v) || v < 1 || v > 64)
                return fprintf(stderr, "tutti-explain: -n takes 1..64\n"), 2;
            o->nranks = (int)v;
            o->nranks_set = 1;
            break;
        case 's':
            if (tt_parse_size(optarg, &o->bytes))
                return fprintf(stderr, "tutti-explain: bad size '%s'\n", optarg), 2;
            break;
        case 'd':
            if (tt_dtype_parse(optarg, &o->dtype))
                return fprintf(stderr, "tutti-explain: unknown datatype '%s'\n", optarg), 2;
            break;
        case 'r':
            if (tt_parse_int(optarg, &v) || v < 0)
                return fprintf(stderr, "tutti-explain: bad root '%s'\n", optarg), 2;
            o->root = (int)v;
            break;
        case OPT_NODES:
            if (tt_parse_int(optarg, &v) || v < 1)
                return fprintf(stderr, "tutti-explain: bad --nodes '%s'\n", optarg), 2;
            o->nodes = (int)v;
            break;
        case OPT_CROWDING: {
            char *end;
            o->ranks_per_cpu = strtod(optarg, &end);
            if (*end || !(o->ranks_per_cpu >= 1 && o->ranks_per_cpu <= 1024))
                return fprintf(stderr, "tutti-explain: --ranks-per-cpu takes 1..1024\n"), 2;
            break;
        }
        case OPT_COMPARE: o->compare = 1; break;
        case OPT_MERMAID: o->mermaid = 1; break;
        case OPT_MEASURE: o->measure = 1; break;
        case 'b':
        case 'e':
            if (tt_parse_size(optarg, c == 'b' ? &o->minb : &o->maxb) || (c == 'b' ? o->minb : o->maxb) == 0)
                return fprintf(stderr, "tutti-explain: -%c: bad size '%s'\n", c, optarg), 2;
            break;
        case OPT_JSON: o->json = 1; break;
        case OPT_HTML: o->html = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        return usage(stderr), 2;
    /* After every option: the list on a typo is the collective's, wherever -C came. */
    if (algo_name && (!(o->algo = tt_explain_algo_find(algo_name)) || !o->algo->build[o->coll]))
        return tt_explain_algo_help(stderr, algo_name, o->coll), 2;
    if (o->root >= o->nranks || o->nodes > o->nranks)
        return fprintf(stderr, "tutti-explain: the root and --nodes must be below -n\n"), 2;
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    if (o.measure && (o.minb || o.maxb)) {
        if (o.algo) /* as TUTTI_ALGO_<COLL> would */
            setenv(o.coll == TT_COLL_ALLREDUCE ? "TUTTI_ALGO_ALLREDUCE" : "TUTTI_ALGO", o.algo->name, 1);
        tt_sweep_opts_t so = {.coll = o.coll,
                              .minb = o.minb ? (size_t)o.minb : 8,
                              .maxb = o.maxb ? (size_t)o.maxb : (size_t)o.bytes,
                              .dtype = o.dtype,
                              .root = o.root,
                              .json = o.json};
        if (so.minb > so.maxb)
            return fprintf(stderr, "tutti-explain: -b is larger than -e\n"), 2;
        return tt_explain_sweep(&so);
    }
    if (o.measure)
        return tt_explain_measure(o.coll, o.algo, (size_t)o.bytes, o.dtype, o.root);
    char err[256];
    tt_algo_policy_t policy;
    if (tt_algo_policy_from_env(&policy, err, sizeof err))
        return fprintf(stderr, "tutti-explain: %s\n", err), 2;
    policy.tuner.model.crowding = o.ranks_per_cpu;
    /* --nodes K: ranks in K blocks of consecutive ranks, as tutti-run --nodes. */
    uint64_t *ids = malloc((size_t)o.nranks * sizeof *ids);
    int per_node = (o.nranks + o.nodes - 1) / o.nodes;
    for (int r = 0; r < o.nranks; r++)
        ids[r] = (uint64_t)(r / per_node);
    tt_hosts_t hosts;
    if (!ids || tt_hosts_init(&hosts, o.nranks, ids, NULL))
        return fprintf(stderr, "tutti-explain: out of memory\n"), 1;
    free(ids);
    if (o.html) {
        /* the page offers 2 to 16 ranks, or up to -n's, and shows -n's (8) first */
        tt_page_opts_t po = {.coll = o.coll,
                             .algo = o.algo,
                             .first_ranks = o.nranks_set ? o.nranks : 8,
                             .max_ranks = o.nranks_set && o.nranks > 16 ? o.nranks : 16,
                             .nodes = o.nodes,
                             .root = o.root,
                             .first_bytes = (size_t)o.bytes,
                             .elem = tutti_dtype_size(o.dtype)};
        tt_hosts_free(&hosts);
        return tt_explain_page(o.html, &po, &policy);
    }
    tt_coll_args_t args = {.coll = o.coll,
                           .nranks = o.nranks,
                           .root = o.root,
                           .count =
                               tt_explain_count(o.coll, o.nranks, (size_t)o.bytes, tutti_dtype_size(o.dtype)),
                           .hosts = &hosts};
    if (o.compare) {
        rc = tt_explain_compare(&policy, &args, (size_t)o.bytes, tutti_dtype_size(o.dtype), o.nodes);
    } else {
        const tt_algorithm_t *algo =
            o.algo ? o.algo
                   : tt_tuner_pick(&policy.tuner, &args, (size_t)o.bytes, tutti_dtype_size(o.dtype)).algo;
        if (!algo) {
            fprintf(stderr, "tutti-explain: no algorithm serves %s\n", tt_coll_name(o.coll));
            tt_hosts_free(&hosts);
            return 2;
        }
        tt_coll_args_t sym = args;
        sym.count = tt_explain_symbolic_count(o.coll, o.nranks);
        tt_trace_t t;
        if (tt_trace_run(&t, algo, &sym)) {
            fprintf(stderr, "tutti-explain: %s\n", t.error);
            rc = 1;
        } else {
            tt_view_opts_t vo = {.algo = algo,
                                 .args = &args,
                                 .bytes = (size_t)o.bytes,
                                 .elem = tutti_dtype_size(o.dtype),
                                 .nodes = o.nodes,
                                 .json = o.json,
                                 .mermaid = o.mermaid};
            rc = tt_explain_view(&vo, &policy, &t);
        }
        tt_trace_free(&t);
    }
    tt_hosts_free(&hosts);
    return rc;
}
