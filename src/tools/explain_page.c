/* SPDX-License-Identifier: MIT */
/*
 * tutti-explain --html: one self-contained page on which a student picks
 * the algorithm, the ranks and the size and steps through the schedule.
 * Every choice is computed here, into the page (a browser opens it from
 * the file, no server, nothing fetched), and drawn by the same script as
 * tutti-report's animations (perf/report/explain_view.js, compiled in).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/registry.h"
#include "sched/hosts.h"
#include "tools/explain_json.h"
#include "tools/explain_page.h"

/* perf/report/explain_view.js, a line per string (the build makes it). */
static const char *const view_js[] = {
#include "tools/explain_page_js.h"
    NULL};

static const size_t page_sizes[] = {1u << 10, 64u << 10, 1u << 20, 16u << 20, 256u << 20};

/* 2 to 8 ranks, then 12, 16, 24, 32, 48, 64 up to max. */
static int next_ranks(int p, int max)
{
    int next = p < 8 ? p + 1 : p % 3 == 0 ? p / 3 * 4 : p / 2 * 3;
    return next <= max ? next : p < max ? max : 0;
}

/* One document per size, the symbolic run shared by all of them. */
static int page_docs(FILE *f, const tt_page_opts_t *o, const tt_algo_policy_t *policy,
                     const tt_algorithm_t *algo, int p, int *ndocs)
{
    uint64_t ids[64];
    int nodes = o->nodes < p ? o->nodes : p, per = (p + nodes - 1) / nodes;
    for (int r = 0; r < p; r++)
        ids[r] = (uint64_t)(r / per);
    tt_hosts_t hosts;
    if (tt_hosts_init(&hosts, p, ids, NULL))
        return -1;
    tt_coll_args_t args = {.coll = o->coll, .nranks = p, .root = o->root < p ? o->root : 0, .hosts = &hosts};
    tt_coll_args_t sym = args;
    sym.count = tt_explain_symbolic_count(o->coll, p);
    tt_trace_t t;
    if (tt_trace_run(&t, algo, &sym)) {
        fprintf(stderr, "tutti-explain: %s on %d ranks left out: %s\n", algo->name, p, t.error);
        tt_trace_free(&t);
        tt_hosts_free(&hosts);
        return 0;
    }
    enum { NSIZES = sizeof page_sizes / sizeof page_sizes[0] };
    size_t sizes[NSIZES + 1];
    int nsizes = 0, rc = 0, known = 0;
    for (int i = 0; i < NSIZES; i++) {
        sizes[nsizes++] = page_sizes[i];
        known |= page_sizes[i] == o->first_bytes;
    }
    if (!known && o->first_bytes)
        sizes[nsizes++] = o->first_bytes; /* the size asked for, beside the page's */
    if (o->coll == TT_COLL_BARRIER)
        nsizes = 1; /* no data: every size is the same */
    for (int i = 0; i < nsizes && rc == 0; i++) {
        args.count = tt_explain_count(o->coll, p, sizes[i], o->elem);
        tt_view_opts_t vo = {.algo = algo, .args = &args, .bytes = sizes[i], .elem = o->elem, .nodes = nodes};
        tt_view_t v;
        if (tt_view_open(&v, &vo, policy, &t) == 0) {
            fprintf(f, "%s", (*ndocs)++ ? ",\n" : "");
            rc = tt_explain_json(f, &v);
        }
        tt_view_close(&v);
    }
    tt_trace_free(&t);
    tt_hosts_free(&hosts);
    return rc;
}

static void page_head(FILE *f, const tt_page_opts_t *o)
{
    const char *coll = tt_coll_name(o->coll);
    fprintf(
        f,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tutti-explain: %s</title>\n"
        "<style>body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1500px; }\n"
        "h1 { font-size: 22px; } h4 { margin: 10px 0 2px 0; } table { border-collapse: collapse; }\n"
        "td, th { border: 1px solid #ddd; text-align: center; }</style></head>\n<body>\n"
        "<h1>How %s moves and adds the data, step by step</h1>\n"
        "<p>Pick an algorithm, the number of ranks and the size; step with the buttons or the arrow keys. "
        "Each arrow is a message, labelled with the chunk and the partial sum it carries (a3+b3: chunk 3 "
        "of ranks 0 and 1 added). Steps follow tutti's cost model: a step is the moment messages start "
        "moving. Made by <code style=\"white-space: nowrap\">tutti-explain -C %s --html</code> from the "
        "schedules "
        "tutti runs.</p>\n"
        "<div id=\"explain\"></div>\n<script type=\"application/json\" id=\"explain-data\">\n",
        coll, coll, coll);
}

int tt_explain_page(const char *path, const tt_page_opts_t *o, const tt_algo_policy_t *policy)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return fprintf(stderr, "tutti-explain: cannot write %s: %m\n", path), 1;
    const tt_algorithm_t *first = o->algo;
    for (int i = 0; i < tt_num_algorithms && !first; i++)
        if (tt_algorithms[i]->build[o->coll] && tt_algorithms[i] != &tt_algo_p2p)
            first = tt_algorithms[i];
    page_head(f, o);
    fprintf(
        f,
        "{\"collective\":\"%s\",\"initial\":{\"algorithm\":\"%s\",\"nranks\":%d,\"bytes\":%zu},\"docs\":[\n",
        tt_coll_name(o->coll), first ? first->name : "", o->first_ranks, o->first_bytes);
    int ndocs = 0, rc = 0;
    for (int i = 0; i < tt_num_algorithms && rc == 0; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        if (!algo->build[o->coll] || algo == &tt_algo_p2p)
            continue;
        for (int p = 2; p && rc == 0; p = next_ranks(p, o->max_ranks))
            rc = page_docs(f, o, policy, algo, p, &ndocs);
    }
    fprintf(f, "\n]}\n</script>\n<script>\n");
    for (int i = 0; view_js[i]; i++)
        fputs(view_js[i], f);
    fprintf(f, "</script>\n<script>tuttiExplain(document.getElementById(\"explain\"),\n"
               "    JSON.parse(document.getElementById(\"explain-data\").textContent));</script>\n"
               "</body></html>\n");
    if (fclose(f) || rc || ndocs == 0) {
        fprintf(stderr, "tutti-explain: %s\n", ndocs ? "could not write the page" : "nothing to show");
        return 1;
    }
    fprintf(stderr, "tutti-explain: wrote %s (%d schedules)\n", path, ndocs);
    return 0;
}
