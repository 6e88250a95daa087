/* SPDX-License-Identifier: MIT */
/*
 * tutti-explain --compare: every algorithm of a collective priced by the
 * cost model beside its textbook formula, the tuner's pick marked, and why
 * the two differ, term by term: the model priced with alpha alone, beta
 * alone and gamma alone, for one slice (the textbook's setting: what the
 * schedule itself adds) and for the slices the engine cuts (what slicing
 * adds); what is left is the overlap of terms the model counts once.
 */
#include <stdio.h>

#include "algorithms/registry.h"
#include "tools/explain_compare.h"
#include "tools/explain_formula.h"
#include "tools/explain_steps.h"
#include "tools/explain_view.h"

/* The model's coefficients with one term priced at a time (the other two
 * zero), against link class l's parameters: alpha in messages one after
 * another, beta and gamma in multiples of n. */
static tt_terms_t model_terms(const tt_cost_model_t *m, const tt_algorithm_t *algo,
                              const tt_coll_args_t *args, size_t elem, int nslices, tt_link_t l, double n,
                              double *sum)
{
    double v[3], unit[3] = {m->link[l].alpha, n * m->link[l].beta, n * m->link[l].gamma};
    *sum = 0;
    for (int term = 0; term < 3; term++) {
        tt_cost_model_t one = *m;
        for (int k = 0; k < TT_LINK_COUNT; k++) {
            tt_link_cost_t *c = &one.link[k];
            *c =
                (tt_link_cost_t){term == 0 ? c->alpha : 0, term == 1 ? c->beta : 0, term == 2 ? c->gamma : 0};
        }
        if (term)
            one.wake_s = 0; /* a crowded rank's wait for its CPU is a per-message cost */
        double t = tt_cost_predict(&one, algo, args, elem, nslices);
        *sum += t;
        v[term] = unit[term] > 0 ? t / unit[term] : 0;
    }
    return (tt_terms_t){v[0], v[1], v[2]};
}

/* The most any rank copies locally (input to output, scratch), per n. */
static double copied(const tt_algorithm_t *algo, const tt_coll_args_t *args, size_t elem, double n)
{
    double most = 0;
    for (int r = 0; r < args->nranks && n > 0; r++) {
        tt_coll_args_t a = *args;
        tt_sched_t s;
        a.rank = r;
        if (tt_sched_build(algo, &a, &s) != TUTTI_SUCCESS)
            continue;
        double bytes = 0;
        for (int k = 0; k < s.nsteps; k++)
            bytes += s.steps[k].kind == TT_STEP_COPY ? (double)(s.steps[k].dst.count * elem) : 0;
        most = bytes / n > most ? bytes / n : most;
        tt_sched_free(&s);
    }
    return most;
}

/* The facts behind the difference, in a line: messages in a row, local
 * copies, what each message carries, slices, overlap. */
static void why_line(const tt_terms_t *book, const tt_terms_t *one, double copies, int nslices,
                     double by_slices, double overlap, double model)
{
    char line[600];
    size_t k = 0;
    if (one->alpha - book->alpha > 0.5 || book->alpha - one->alpha > 0.5)
        k += (size_t)snprintf(line + k, sizeof line - k, "; %.0f messages one after another, not %.0f",
                              one->alpha, book->alpha);
    if (copies > 0.01)
        k += (size_t)snprintf(line + k, sizeof line - k,
                              "; it copies %.2f n locally, which the formula leaves out", copies);
    double carried = one->beta - copies;
    if (one->alpha > 0 && (carried - book->beta > 0.01 || book->beta - carried > 0.01))
        k += (size_t)snprintf(line + k, sizeof line - k, "; its messages in a row carry %.2f n, not %.2f n",
                              carried, book->beta);
    if (nslices > 1 && (by_slices > 0.01 * model || by_slices < -0.01 * model))
        k +=
            (size_t)snprintf(line + k, sizeof line - k, "; %d slices add %+.1f us", nslices, by_slices * 1e6);
    if (overlap > 0.01 * model || overlap < -0.01 * model)
        k += (size_t)snprintf(line + k, sizeof line - k, "; the terms overlap by %.1f us", -overlap * 1e6);
    if (k)
        printf("  why: %s\n", line + 2);
}

/* One algorithm's rows: each term in the textbook, as scheduled (one
 * slice) and sliced, and what it adds to the difference; then why. */
static void why_rows(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                     size_t bytes, size_t elem, int nslices, tt_link_t l)
{
    tt_terms_t book, one, all;
    double n = (double)bytes, sum1, sum, model = tt_cost_predict(m, algo, args, elem, nslices);
    if (tt_explain_formula_terms(algo, args->coll, args->nranks, &book))
        return;
    one = model_terms(m, algo, args, elem, 1, l, n, &sum1);
    all = model_terms(m, algo, args, elem, nslices, l, n, &sum);
    const double b[3] = {book.alpha, book.beta, book.gamma}, s[3] = {all.alpha, all.beta, all.gamma},
                 s1[3] = {one.alpha, one.beta, one.gamma};
    const double unit[3] = {m->link[l].alpha, n * m->link[l].beta, n * m->link[l].gamma};
    const char *names[3] = {"alpha", "beta", "gamma"}, *of_n[3] = {"", " n", " n"};
    double textbook = b[0] * unit[0] + b[1] * unit[1] + b[2] * unit[2];
    char a[32], bk[32], d[32];
    tt_explain_format_time(model, a, sizeof a);
    tt_explain_format_time(textbook, bk, sizeof bk);
    printf("%s: model %s, textbook %s\n", algo->name, a, bk);
    for (int k = 0; k < 3; k++) {
        if (b[k] == 0 && s[k] == 0)
            continue;
        snprintf(d, sizeof d, "%+.1f us", (s[k] - b[k]) * unit[k] * 1e6);
        printf("  %-8s %9.2f%-2s %9.2f%-2s %9.2f%-2s %14s\n", names[k], b[k], of_n[k], s1[k], of_n[k], s[k],
               of_n[k], d);
    }
    snprintf(d, sizeof d, "%+.1f us", (model - sum) * 1e6);
    printf("  %-8s %50s\n", "overlap", d);
    snprintf(d, sizeof d, "%+.1f us", (model - textbook) * 1e6);
    printf("  %-8s %50s\n", "total", d);
    why_line(&book, &one, copied(algo, args, elem, n), nslices, sum - sum1, model - sum, model);
}

/* The rows of the table, the tuner's pick marked. */
static void table_rows(const tt_algo_policy_t *policy, const tt_coll_args_t *args, size_t bytes, size_t elem,
                       tt_link_t l, int fitted, const tt_tuned_t *pick)
{
    const tt_cost_model_t *m = &policy->tuner.model;
    size_t chunk = tt_tuner_chunk_bytes(args, elem);
    for (int i = 0; i < tt_num_algorithms; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        tt_coll_args_t a = *args;
        tt_sched_t s;
        if (!algo->build[args->coll] || algo == &tt_algo_p2p || tt_sched_build(algo, &a, &s) != TUTTI_SUCCESS)
            continue;
        size_t sent = 0;
        for (int k = 0; k < s.nsteps; k++)
            if (s.steps[k].kind == TT_STEP_SEND)
                sent += s.steps[k].src.count * elem;
        tt_sched_free(&s);
        size_t slice = pick->algo == algo          ? pick->slice_bytes
                       : policy->tuner.slice_bytes ? policy->tuner.slice_bytes
                                                   : TT_TUNER_DEFAULT_SLICE;
        int nslices = tt_tuner_slices(chunk, slice);
        double t = tt_cost_predict(m, algo, args, elem, nslices), book = -1;
        tt_steps_t steps;
        int nsteps = tt_explain_steps(&steps, m, algo, args, elem, nslices) ? -1 : steps.comm_steps;
        if (nsteps >= 0)
            tt_explain_steps_free(&steps);
        char when[32], sb[32], sl[32], bk[32], text[300];
        tt_explain_formula(algo, args->coll, args->nranks, (double)bytes, &m->link[l], text, sizeof text,
                           &book);
        tt_explain_format_time(t, when, sizeof when);
        tt_explain_format_time(book, bk, sizeof bk);
        tt_explain_format_bytes(sent, sb, sizeof sb);
        tt_explain_format_bytes(slice, sl, sizeof sl);
        printf("%-20s %6d %12s %10s %10s %10s", algo->name, nsteps, sb, sl, t < 0 ? "-" : when, bk);
        if (fitted)
            printf("  %14.2f", tt_cost_fix_factor(&m->fix, algo->name, args, bytes));
        printf("%s%s\n", pick->algo == algo ? "  *" : "",
               tt_tuner_considers(&policy->tuner, algo, args) ? "" : "  (not tuned)");
    }
}

int tt_explain_compare(tt_algo_policy_t *policy, const tt_coll_args_t *args, size_t bytes, size_t elem,
                       int nodes)
{
    const tt_cost_model_t *m = &policy->tuner.model;
    tt_tuned_t pick = tt_tuner_pick(&policy->tuner, args, bytes, elem);
    int fitted = tt_cost_fix_covers(&m->fix, args);
    tt_link_t l = nodes > 1 ? m->inter : m->intra;
    char size[32], text[300];
    double book;
    tt_explain_format_bytes(bytes, size, sizeof size);
    printf("%s of %s on %d ranks (%d host%s): predicted time per algorithm\n", tt_coll_name(args->coll), size,
           args->nranks, nodes, nodes == 1 ? "" : "s");
    printf("%-20s %6s %12s %10s %10s %10s%s\n", "algorithm", "steps", "sent/rank", "slice", "predicted",
           "textbook", fitted ? "  measured/model" : "");
    table_rows(policy, args, bytes, elem, l, fitted, &pick);
    printf(
        "* the tuner's pick: the first algorithm it considers, unless another is predicted %d%% faster%s\n",
        (int)(100 * (fitted ? TT_TUNER_MARGIN_MEASURED : TT_TUNER_MARGIN)),
        fitted ? " (a fitted tuning file measured this shape; its corrections multiply the model)" : "");
    printf("steps: moments on the cost model's clock at which messages move (tutti-explain -a ALGO shows "
           "them);\n"
           "textbook: the closed form, one slice, no crowding, with the model's %s alpha, beta and gamma:\n",
           tt_link_name(l));
    for (int i = 0; i < tt_num_algorithms; i++)
        if (tt_algorithms[i]->build[args->coll] &&
            tt_explain_formula(tt_algorithms[i], args->coll, args->nranks, (double)bytes, &m->link[l], text,
                               sizeof text, &book) == 0)
            printf("  %s: %s\n", tt_algorithms[i]->name, text);
    printf("\nWhy the model and the textbook differ, term by term. The model is priced with one term at a\n"
           "time (the others zero): alpha counts messages one after another, beta and gamma multiples of n\n"
           "sent and reduced on the slowest path. \"1 slice\" is the schedule tutti runs, in the textbook's\n"
           "setting; \"sliced\" cuts each chunk into the engine's slices, each paying its own alpha, the\n"
           "pipeline draining at the busiest rank's pace. \"overlap\" is what the model counts once that\n"
           "the terms priced apart count twice (a rank sends while it receives and adds).\n");
    printf("  %-8s %11s %11s %11s %14s\n", "term", "textbook", "1 slice", "sliced", "model-textbook");
    size_t chunk = tt_tuner_chunk_bytes(args, elem);
    for (int i = 0; i < tt_num_algorithms; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        if (!algo->build[args->coll] || algo == &tt_algo_p2p)
            continue;
        size_t slice = pick.algo == algo           ? pick.slice_bytes
                       : policy->tuner.slice_bytes ? policy->tuner.slice_bytes
                                                   : TT_TUNER_DEFAULT_SLICE;
        why_rows(m, algo, args, bytes, elem, tt_tuner_slices(chunk, slice), l);
    }
    return 0;
}
