/* SPDX-License-Identifier: MIT */
/* tutti-explain's round-by-round view, laid out in global steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain_formula.h"
#include "tools/explain_json.h"
#include "tools/explain_steps.h"
#include "tools/explain_view.h"
#include "algorithms/registry.h"

#define GRID_MAX_RANKS 16

void tt_explain_format_time(double s, char *out, size_t len)
{
    if (s < 0)
        snprintf(out, len, "-");
    else if (s < 1e-3)
        snprintf(out, len, "%.1f us", s * 1e6);
    else
        snprintf(out, len, "%.2f ms", s * 1e3);
}

void tt_explain_format_bytes(size_t b, char *out, size_t len)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(out, len, "%zu MiB", b >> 20);
    else if (b >= (1u << 10) && b % (1u << 10) == 0)
        snprintf(out, len, "%zu KiB", b >> 10);
    else
        snprintf(out, len, "%zu B", b);
}

size_t tt_explain_count(tt_coll_t coll, int nranks, size_t bytes, size_t elem)
{
    size_t n = bytes / elem;
    return coll == TT_COLL_BARRIER ? 0 : tt_coll_count_per_rank(coll) ? n / (size_t)nranks : n;
}

size_t tt_explain_symbolic_count(tt_coll_t coll, int nranks)
{
    return coll == TT_COLL_BARRIER ? 0 : tt_coll_count_per_rank(coll) ? 1 : (size_t)nranks;
}

void tt_explain_fold(const tt_algorithm_t *algo, int p, char *out, size_t len)
{
    int q = 1;
    while (q * 2 <= p)
        q *= 2;
    out[0] = '\0';
    if (q == p || (strcmp(algo->name, "rabenseifner") != 0 && strcmp(algo->name, "recursive_doubling") != 0))
        return;
    int extra = p - q;
    char who[64], to[64];
    snprintf(who, sizeof who, extra == 1 ? "rank %d" : "ranks %d-%d", q, p - 1);
    snprintf(to, sizeof to, extra == 1 ? "rank 0" : "ranks 0-%d", extra - 1);
    snprintf(
        out, len,
        "%d ranks is not a power of two. Halving and doubling pair rank r with r xor 2^k, which needs a\n"
        "power of two, so the %d rank%s above %d (the largest power of two below %d) fold in first:\n"
        "%s hand%s all %s data to %s (rank r to rank r-%d), which add%s it to %s own. Ranks 0-%d\n"
        "then run the algorithm among themselves while %s wait%s, and at the end %s send the finished\n"
        "result back (the unfold). The fold costs two extra full-size transfers, 2 (alpha + n beta) + n "
        "gamma,\n"
        "which is why it shows as a step before the first halving and one after the last doubling.\n",
        p, extra, extra == 1 ? "" : "s", q, p, who, extra == 1 ? "s" : "", extra == 1 ? "its" : "their", to,
        q, extra == 1 ? "s" : "", extra == 1 ? "its" : "their", q - 1, who, extra == 1 ? "s" : "", to);
}

void tt_view_grid_cell(uint64_t ranks, int p, char *out, size_t len)
{
    uint64_t all = p == 64 ? ~0ull : (1ull << p) - 1;
    size_t k = 0;
    if (ranks == 0 || (ranks & all) == all) {
        snprintf(out, len, ranks ? "S" : ".");
        return;
    }
    for (int r = 0; r < p && k + 1 < len; r++)
        if (ranks >> r & 1)
            out[k++] = (char)(r < 26 ? 'a' + r : '?');
    out[k] = '\0';
}

/* Its last round in a step up to s. */
const tt_cell_t *tt_view_state_after(const tt_view_t *v, int r, int s)
{
    const tt_steps_t *st = &v->steps;
    int last = -1;
    for (int i = 0; i < st->nslots; i++)
        if (st->slots[i].rank == r && st->slots[i].step <= s && st->slots[i].round > last)
            last = st->slots[i].round;
    return last >= 0 ? v->t->snap[r][last] : NULL;
}

static void print_grid(const tt_view_t *v, int s)
{
    const tt_trace_t *t = v->t;
    int p = t->nranks;
    if (p > GRID_MAX_RANKS || t->nout == 0)
        return;
    printf(
        "  after step %d, each rank's output by chunk (letters: whose terms it holds; S: all %d; .: none)\n",
        s + 1, p);
    printf("  %9s", "chunk");
    for (size_t c = 0; c < t->nout && c < 32; c++)
        printf(" %*zu", p < 8 ? 8 : p + 1, c);
    printf("\n");
    for (int r = 0; r < p; r++) {
        const tt_cell_t *cells = tt_view_state_after(v, r, s);
        printf("  rank %-4d", r);
        for (size_t c = 0; c < t->nout && c < 32; c++) {
            char cell[72];
            tt_view_grid_cell(cells ? cells[c].ranks : 0, p, cell, sizeof cell);
            printf(" %*s", p < 8 ? 8 : p + 1, cell);
        }
        printf("\n");
    }
}

/* The arithmetic of one rank's round: each direction's alpha-beta-gamma terms and the model's time. */
static void round_formula(const tt_cost_model_t *m, const tt_coll_args_t *args, const tt_sched_t *real, int r,
                          int k, size_t elem, int nslices, char *out, size_t len)
{
    tt_coll_args_t a = *args;
    a.rank = r;
    tt_round_cost_t rc = tt_cost_round(m, &a, real, k, elem, nslices);
    int n, sends = 0, recvs = 0;
    const tt_step_t *st = tt_sched_round_steps(real, k, &n);
    for (int i = 0; i < n; i++) {
        sends += st[i].kind == TT_STEP_SEND;
        recvs += st[i].kind == TT_STEP_RECV || st[i].kind == TT_STEP_RECV_REDUCE;
    }
    char ob[32], ib[32], rb[32], t_out[32], t_in[32], t[32];
    tt_explain_format_bytes(rc.sent / (size_t)nslices, ob, sizeof ob);
    tt_explain_format_bytes(rc.received / (size_t)nslices, ib, sizeof ib);
    tt_explain_format_bytes(rc.reduced / (size_t)nslices, rb, sizeof rb);
    tt_explain_format_time(rc.send_seconds, t_out, sizeof t_out);
    tt_explain_format_time(rc.recv_seconds, t_in, sizeof t_in);
    tt_explain_format_time(rc.seconds, t, sizeof t);
    size_t used = 0;
    out[0] = '\0';
    if (sends)
        used += (size_t)snprintf(out, len, "out %d alpha + %s beta = %s", sends, ob, t_out);
    if (recvs && used < len)
        used += (size_t)snprintf(out + used, len - used, "%sin %d alpha + %s beta%s%s%s = %s",
                                 used ? "; " : "", recvs, ib, rc.reduced ? " + " : "", rc.reduced ? rb : "",
                                 rc.reduced ? " gamma" : "", t_in);
    if (used < len)
        snprintf(out + used, len - used, "; round %s over %s%s", t, tt_link_name(rc.busiest),
                 m->crowding > 1 ? " (crowded CPUs)" : "");
}

int tt_view_open(tt_view_t *v, const tt_view_opts_t *o, const tt_algo_policy_t *policy, const tt_trace_t *t)
{
    memset(v, 0, sizeof *v);
    v->o = o;
    v->t = t;
    v->m = &policy->tuner.model;
    size_t slice = policy->tuner.slice_bytes ? policy->tuner.slice_bytes : TT_TUNER_DEFAULT_SLICE;
    v->nslices = tt_tuner_slices(tt_tuner_chunk_bytes(o->args, o->elem), slice);
    int p = o->args->nranks;
    v->real = calloc((size_t)p, sizeof *v->real);
    if (!v->real)
        return -1;
    for (int r = 0; r < p; r++) {
        tt_coll_args_t a = *o->args;
        a.rank = r;
        if (tt_sched_build(o->algo, &a, &v->real[r]) != TUTTI_SUCCESS ||
            v->real[r].nrounds != t->s[r].nrounds || v->real[r].nsteps != t->s[r].nsteps) {
            fprintf(stderr, "tutti-explain: %s builds different schedules at this size\n", o->algo->name);
            return -1;
        }
    }
    v->nslices = tt_sched_slices(&v->real[0], v->nslices);
    if (tt_explain_steps(&v->steps, v->m, o->algo, o->args, o->elem, v->nslices)) {
        fprintf(stderr, "tutti-explain: %s cannot place the rounds\n", o->algo->name);
        return -1;
    }
    return 0;
}

void tt_view_close(tt_view_t *v)
{
    for (int r = 0; v->real && r < v->o->args->nranks; r++)
        tt_sched_free(&v->real[r]);
    free(v->real);
    tt_explain_steps_free(&v->steps);
}

static void print_head(const tt_view_t *v)
{
    const tt_view_opts_t *o = v->o;
    char size[32], fold[1024];
    tt_explain_format_bytes(o->bytes, size, sizeof size);
    printf("%s of %s with %s on %d ranks (%d host%s)\n%s\n", tt_coll_name(o->args->coll), size, o->algo->name,
           o->args->nranks, o->nodes, o->nodes == 1 ? "" : "s", o->algo->summary);
    printf("Rank r's data is letter r (a = rank 0); %s.\n", o->args->coll == TT_COLL_ALLGATHER
                                                                ? "rank r's block is chunk r"
                                                                : "chunk i of rank 0's data is ai");
    tt_explain_fold(o->algo, o->args->nranks, fold, sizeof fold);
    if (*fold)
        printf("\n%s", fold);
    printf(
        "\nSteps follow the cost model's clock for the first of %d slice%s%s: a step begins when its\n"
        "messages start moving, both ends being there; a rank's local work joins its next step; ranks with\n"
        "nothing to do in a step are left out; (round k) is the rank's own round in its schedule.\n",
        v->nslices, v->nslices == 1 ? "" : "s",
        v->steps.timed ? "" : " (over 64 ranks: rounds aligned by their index instead)");
    for (int l = 0; l < TT_LINK_COUNT; l++) {
        const tt_link_cost_t *c = &v->m->link[l];
        if (l == (int)v->m->intra || (o->nodes > 1 && l == (int)v->m->inter))
            printf(
                "The model's %s: alpha %.2f us per message, beta 1/(%.2f GB/s) per byte, gamma 1/(%.2f GB/s)"
                " per byte reduced.\n",
                tt_link_name((tt_link_t)l), c->alpha * 1e6, 1 / (c->beta * 1e9), 1 / (c->gamma * 1e9));
    }
}

static void print_steps(const tt_view_t *v)
{
    const tt_trace_t *t = v->t;
    int p = t->nranks;
    for (int s = 0, i = 0; s < v->steps.nsteps; s++) {
        char when[32], formula[400];
        tt_explain_format_time(v->steps.step_time[s], when, sizeof when);
        printf("\nstep %d at %s\n", s + 1, when);
        int *active = calloc((size_t)p, sizeof *active);
        for (; i < v->steps.nslots && v->steps.slots[i].step == s; i++) {
            const tt_step_slot_t *sl = &v->steps.slots[i];
            int n, first = t->s[sl->rank].round_first[sl->round];
            tt_sched_round_steps(&t->s[sl->rank], sl->round, &n);
            if (active)
                active[sl->rank] = 1;
            printf("  rank %-2d (round %d)  ", sl->rank, sl->round + 1);
            for (int k = 0; k < n; k++)
                printf("%s%s\n", k ? "                     " : "", t->labels[sl->rank][first + k]);
            if (!sl->messages)
                continue;
            round_formula(v->m, v->o->args, &v->real[sl->rank], sl->rank, sl->round, v->o->elem, v->nslices,
                          formula, sizeof formula);
            tt_explain_format_time(sl->end, when, sizeof when);
            printf("                     = %s, done at %s\n", formula, when);
        }
        int waiting = 0;
        for (int r = 0; active && r < p; r++)
            if (!active[r])
                printf("%s%d", waiting++ ? ", " : "  waiting: ranks ", r);
        if (waiting)
            printf("\n");
        free(active);
        print_grid(v, s);
    }
}

static void print_total(const tt_view_t *v)
{
    const tt_view_opts_t *o = v->o;
    double total = tt_cost_predict(v->m, o->algo, o->args, o->elem, v->nslices), book;
    char when[32], text[300], bw[32];
    tt_explain_format_time(total, when, sizeof when);
    printf(
        "\n%d steps, %d of them moving messages; predicted for the whole call (%d slice%s pipelined): %s\n",
        v->steps.nsteps, v->steps.comm_steps, v->nslices, v->nslices == 1 ? "" : "s", when);
    tt_link_t l = o->nodes > 1 ? v->m->inter : v->m->intra;
    if (tt_explain_formula(o->algo, o->args->coll, o->args->nranks, (double)o->bytes, &v->m->link[l], text,
                           sizeof text, &book) == 0) {
        tt_explain_format_time(book, bw, sizeof bw);
        printf("textbook: %s = %s (n = the whole buffer, %s links, one slice, no crowding)\n", text, bw,
               tt_link_name(l));
    }
}

int tt_explain_view(const tt_view_opts_t *o, const tt_algo_policy_t *policy, const tt_trace_t *t)
{
    tt_view_t v;
    int rc = tt_view_open(&v, o, policy, t) ? 1 : 0;
    if (!rc && o->json) {
        rc = tt_explain_json(stdout, &v) ? 1 : 0;
        printf("\n");
    } else if (!rc && o->mermaid) {
        tt_explain_mermaid(stdout, &v);
    } else if (!rc) {
        print_head(&v);
        print_steps(&v);
        print_total(&v);
    }
    tt_view_close(&v);
    return rc;
}
