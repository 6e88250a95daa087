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
#include "tools/explain_formula.h"
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
            "      --json           the steps as JSON, for perf/report/report's animation\n"
            "  -b, -e SIZE          with --measure: time the whole call at sizes from -b to -e (doubling)\n"
            "                       beside the tuner's prediction (a plot; --json for perf/report/report)\n"
            "Predictions use the cost model (TUTTI_TUNING_FILE overrides its parameters).\n");
}

/* Any usual spelling of a collective tutti-explain can show. */
static int parse_coll(const char *s, tt_coll_t *out)
{
    return tt_coll_parse(s, out) || *out > TT_COLL_BARRIER ? -1 : 0;
}

/* The API count for a buffer of bytes (per rank where the API counts per rank). */
static size_t api_count(const opts_t *o)
{
    size_t n = (size_t)o->bytes / tutti_dtype_size(o->dtype);
    if (o->coll == TT_COLL_REDUCE_SCATTER || o->coll == TT_COLL_ALLGATHER || o->coll == TT_COLL_ALLTOALL)
        n /= (size_t)o->nranks;
    return o->coll == TT_COLL_BARRIER ? 0 : n;
}

/* One element per chunk: enough to name every chunk an algorithm cuts. */
static size_t symbolic_count(const opts_t *o)
{
    if (o->coll == TT_COLL_BARRIER)
        return 0;
    return o->coll == TT_COLL_REDUCE_SCATTER || o->coll == TT_COLL_ALLGATHER || o->coll == TT_COLL_ALLTOALL
               ? 1
               : (size_t)o->nranks;
}

static int compare_table(const opts_t *o, tt_algo_policy_t *policy, const tt_coll_args_t *args)
{
    size_t elem = tutti_dtype_size(o->dtype), chunk = tt_tuner_chunk_bytes(args, elem);
    const tt_cost_model_t *m = &policy->tuner.model;
    tt_tuned_t pick = tt_tuner_pick(&policy->tuner, args, (size_t)o->bytes, elem);
    int fitted = tt_cost_fix_covers(&m->fix, args);
    char size[32], legend[16][340];
    int nlegend = 0;
    tt_explain_format_bytes((size_t)o->bytes, size, sizeof size);
    printf("%s of %s on %d ranks (%d host%s): predicted time per algorithm\n", tt_coll_name(o->coll), size,
           o->nranks, o->nodes, o->nodes == 1 ? "" : "s");
    printf("%-20s %6s %12s %10s %10s %10s%s\n", "algorithm", "steps", "sent/rank", "slice", "predicted",
           "textbook", fitted ? "  measured/model" : "");
    for (int i = 0; i < tt_num_algorithms; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        if (!algo->build[o->coll] || algo == &tt_algo_p2p)
            continue;
        tt_coll_args_t a = *args;
        tt_sched_t s;
        if (tt_sched_build(algo, &a, &s) != TUTTI_SUCCESS)
            continue;
        size_t sent = 0;
        for (int k = 0; k < s.nsteps; k++)
            if (s.steps[k].kind == TT_STEP_SEND)
                sent += s.steps[k].src.count * elem;
        tt_sched_free(&s);
        size_t slice = pick.algo == algo           ? pick.slice_bytes
                       : policy->tuner.slice_bytes ? policy->tuner.slice_bytes
                                                   : TT_TUNER_DEFAULT_SLICE;
        int nslices = tt_tuner_slices(chunk, slice);
        double t = tt_cost_predict(m, algo, args, elem, nslices), book = -1;
        tt_steps_t steps;
        int nsteps = tt_explain_steps(&steps, m, algo, args, elem, nslices) ? -1 : steps.comm_steps;
        if (nsteps >= 0)
            tt_explain_steps_free(&steps);
        char when[32], sb[32], sl[32], bk[32], text[300];
        tt_link_t l = o->nodes > 1 ? m->inter : m->intra;
        if (tt_explain_formula(algo, o->coll, o->nranks, (double)o->bytes, &m->link[l], text, sizeof text,
                               &book) == 0 &&
            nlegend < 16)
            snprintf(legend[nlegend++], sizeof legend[0], "  %s: %s", algo->name, text);
        tt_explain_format_time(t, when, sizeof when);
        tt_explain_format_time(book, bk, sizeof bk);
        tt_explain_format_bytes(sent, sb, sizeof sb);
        tt_explain_format_bytes(slice, sl, sizeof sl);
        printf("%-20s %6d %12s %10s %10s %10s", algo->name, nsteps, sb, sl, t < 0 ? "-" : when, bk);
        if (fitted)
            printf("  %14.2f", tt_cost_fix_factor(&m->fix, algo->name, args, (size_t)o->bytes));
        printf("%s%s\n", pick.algo == algo ? "  *" : "",
               tt_tuner_considers(&policy->tuner, algo, args) ? "" : "  (not tuned)");
    }
    printf(
        "* the tuner's pick: the first algorithm it considers, unless another is predicted %d%% faster%s\n",
        (int)(100 * (fitted ? TT_TUNER_MARGIN_MEASURED : TT_TUNER_MARGIN)),
        fitted ? " (a fitted tuning file measured this shape; its corrections multiply the model)" : "");
    printf("steps: moments on the cost model's clock at which messages move (tutti-explain -a ALGO shows "
           "them);\n"
           "textbook: the closed form, one slice, no crowding, with the model's %s alpha, beta and gamma:\n",
           tt_link_name(o->nodes > 1 ? m->inter : m->intra));
    for (int i = 0; i < nlegend; i++)
        printf("%s\n", legend[i]);
    return 0;
}

static void print_mermaid(const tt_trace_t *t)
{
    printf("sequenceDiagram\n");
    for (int r = 0; r < t->nranks; r++)
        printf("    participant r%d as rank %d\n", r, r);
    int rounds = 0;
    for (int r = 0; r < t->nranks; r++)
        rounds = t->s[r].nrounds > rounds ? t->s[r].nrounds : rounds;
    for (int k = 0; k < rounds; k++) {
        printf("    Note over r0,r%d: round %d\n", t->nranks - 1, k + 1);
        for (int r = 0; r < t->nranks; r++) {
            if (k >= t->s[r].nrounds)
                continue;
            int n, first = t->s[r].round_first[k];
            const tt_step_t *st = tt_sched_round_steps(&t->s[r], k, &n);
            for (int i = 0; i < n; i++) {
                if (st[i].kind != TT_STEP_SEND)
                    continue;
                /* "sends chunk 2 [a2+b2] to rank 1" -> "chunk 2 [a2+b2]" */
                char what[400];
                snprintf(what, sizeof what, "%s", t->labels[r][first + i] + strlen("sends "));
                char *to = strstr(what, " to rank ");
                if (to)
                    *to = '\0';
                printf("    r%d->>r%d: %s\n", r, st[i].peer, what);
            }
        }
    }
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    enum { OPT_NODES = 256, OPT_CROWDING, OPT_COMPARE, OPT_MERMAID, OPT_MEASURE, OPT_JSON };
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
        case 'a':
            if (!(o->algo = tt_algo_named(optarg)))
                return fprintf(stderr, "tutti-explain: unknown algorithm '%s' (tutti-info -A lists them)\n",
                               optarg),
                       2;
            break;
        case 'n':
            if (tt_parse_int(optarg, &v) || v < 1 || v > 64)
                return fprintf(stderr, "tutti-explain: -n takes 1..64\n"), 2;
            o->nranks = (int)v;
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
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        return usage(stderr), 2;
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
    tt_coll_args_t args = {
        .coll = o.coll, .nranks = o.nranks, .root = o.root, .count = api_count(&o), .hosts = &hosts};
    if (o.compare) {
        rc = compare_table(&o, &policy, &args);
    } else {
        const tt_algorithm_t *algo =
            o.algo ? o.algo
                   : tt_tuner_pick(&policy.tuner, &args, (size_t)o.bytes, tutti_dtype_size(o.dtype)).algo;
        if (!algo || !algo->build[o.coll]) {
            fprintf(stderr, "tutti-explain: %s does not serve %s\n", algo ? algo->name : "no algorithm",
                    tt_coll_name(o.coll));
            tt_hosts_free(&hosts);
            return 2;
        }
        tt_coll_args_t sym = args;
        sym.count = symbolic_count(&o);
        tt_trace_t t;
        if (tt_trace_run(&t, algo, &sym)) {
            fprintf(stderr, "tutti-explain: %s\n", t.error);
            rc = 1;
        } else if (o.mermaid) {
            print_mermaid(&t);
        } else {
            tt_view_opts_t vo = {.algo = algo,
                                 .args = &args,
                                 .bytes = (size_t)o.bytes,
                                 .elem = tutti_dtype_size(o.dtype),
                                 .nodes = o.nodes,
                                 .json = o.json};
            rc = tt_explain_view(&vo, &policy, &t);
        }
        tt_trace_free(&t);
    }
    tt_hosts_free(&hosts);
    return rc;
}
