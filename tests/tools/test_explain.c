/* SPDX-License-Identifier: MIT */
/*
 * The teaching views: the symbolic trace behind tutti-explain (every
 * algorithm and collective ends with every chunk holding exactly the right
 * ranks' terms), its global steps, the textbook formulas against the cost
 * model, and the tutti-explain command itself.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/registry.h"
#include "sched/hosts.h"
#include "sched/job.h"
#include "tests/lib/harness.h"
#include "tools/explain_formula.h"
#include "tools/explain_steps.h"
#include "tools/explain_trace.h"
#include "tune/cost.h"
#include "tune/tuner.h"

/* Every rank's output holds the right terms for its collective. */
static void check_outputs(const tt_trace_t *t, const tt_coll_args_t *a)
{
    int p = a->nranks;
    uint64_t all = p == 64 ? ~0ull : (1ull << p) - 1;
    for (int r = 0; r < p; r++)
        for (size_t i = 0; i < t->nout; i++) {
            const tt_cell_t *c = &t->out[r][i];
            uint64_t want;
            switch (a->coll) {
            case TT_COLL_ALLREDUCE:
            case TT_COLL_REDUCE_SCATTER: want = all; break;
            case TT_COLL_REDUCE: want = r == a->root ? all : c->ranks; break;
            case TT_COLL_BROADCAST: want = 1ull << a->root; break;
            case TT_COLL_ALLGATHER:
            case TT_COLL_ALLTOALL: want = 1ull << (i / a->count); break;
            default: want = c->ranks;
            }
            ck_assert_msg(c->ranks == want, "%s p=%d rank %d element %zu holds %#llx, not %#llx",
                          tt_coll_name(a->coll), p, r, i, (unsigned long long)c->ranks,
                          (unsigned long long)want);
        }
}

/* _i is nranks: every algorithm, every collective it serves, with hosts of
 * two ranks when p is even. */
START_TEST(the_trace_of_every_schedule_ends_with_the_right_terms)
{
    int p = _i;
    uint64_t ids[17];
    for (int r = 0; r < p; r++)
        ids[r] = (uint64_t)(p % 2 == 0 ? r / 2 : 0);
    tt_hosts_t hosts;
    ck_assert_int_eq(tt_hosts_init(&hosts, p, ids, NULL), TUTTI_SUCCESS);
    for (int i = 0; i < tt_num_algorithms; i++)
        for (int c = 0; c <= TT_COLL_BARRIER; c++) {
            if (!tt_algorithms[i]->build[c])
                continue;
            tt_coll_args_t a = {.coll = (tt_coll_t)c,
                                .nranks = p,
                                .root = p - 1,
                                .count = c == TT_COLL_BARRIER ? 0
                                         : c == TT_COLL_REDUCE_SCATTER || c == TT_COLL_ALLGATHER ||
                                                 c == TT_COLL_ALLTOALL
                                             ? 1
                                             : (size_t)p,
                                .hosts = &hosts};
            tt_trace_t t;
            ck_assert_msg(tt_trace_run(&t, tt_algorithms[i], &a) == 0, "%s/%s p=%d: %s",
                          tt_algorithms[i]->name, tt_coll_name(a.coll), p, t.error);
            check_outputs(&t, &a);
            tt_trace_free(&t);
        }
    tt_hosts_free(&hosts);
}
END_TEST

/* _i is nranks: for every all-reduce algorithm, each message's two ends sit
 * in the same global step, no idle round is shown, and the steps follow
 * the model's clock. */
START_TEST(global_steps_put_both_ends_of_every_message_together)
{
    int p = _i;
    tt_cost_model_t m;
    tt_cost_defaults(&m);
    for (int i = 0; i < tt_num_algorithms; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        tt_coll_args_t a = {.coll = TT_COLL_ALLREDUCE, .nranks = p, .count = 1024};
        tt_job_t job;
        if (!algo->build[TT_COLL_ALLREDUCE] || tt_job_build(&job, algo, &a) != TUTTI_SUCCESS)
            continue;
        tt_steps_t st;
        ck_assert_int_eq(tt_explain_steps(&st, &m, algo, &a, 4, 1), 0);
        ck_assert(st.timed);
        int *step_of = calloc((size_t)p * 64, sizeof *step_of);
        for (int k = 0; k < st.nslots; k++) {
            const tt_step_slot_t *sl = &st.slots[k];
            ck_assert_msg(job.s[sl->rank].round_first[sl->round + 1] > job.s[sl->rank].round_first[sl->round],
                          "%s p=%d: an idle round is shown", algo->name, p);
            ck_assert(sl->round < 64);
            step_of[sl->rank * 64 + sl->round] = sl->step + 1;
            ck_assert(k == 0 || st.step_time[sl->step] >= st.step_time[st.slots[k - 1].step]);
        }
        for (int r = 0; r < p; r++)
            for (int s = 0; s < job.s[r].nsteps; s++) {
                int q = job.s[r].steps[s].peer, qs = job.match[r][s];
                if (q < 0 || job.s[r].steps[s].kind != TT_STEP_SEND)
                    continue;
                int mine = step_of[r * 64 + job.round[r][s]], theirs = step_of[q * 64 + job.round[q][qs]];
                ck_assert_msg(mine && mine == theirs,
                              "%s p=%d: rank %d sends to rank %d in step %d, received in %d", algo->name, p,
                              r, q, mine, theirs);
            }
        /* lg p exchanges (beyond powers of two the pairs drift apart on the clock) */
        if (algo == &tt_algo_recursive_doubling && (p & (p - 1)) == 0)
            ck_assert_int_eq(st.comm_steps, __builtin_ctz((unsigned)p));
        if (algo == &tt_algo_ring)
            ck_assert_int_eq(st.comm_steps, 2 * (p - 1));
        free(step_of);
        tt_explain_steps_free(&st);
        tt_job_free(&job);
    }
}
END_TEST

START_TEST(textbook_formulas_match_the_model_where_both_are_exact)
{
    tt_cost_model_t m;
    tt_cost_defaults(&m);
    const tt_link_cost_t *c = &m.link[TT_LINK_SHM];
    char text[300];
    double book;
    for (int p = 2; p <= 16; p *= 2) {
        size_t count = 1 << 20;
        ck_assert_int_eq(
            tt_explain_formula(&tt_algo_ring, TT_COLL_ALLREDUCE, p, count * 4.0, c, text, sizeof text, &book),
            0);
        tt_coll_args_t a = {.coll = TT_COLL_ALLREDUCE, .nranks = p, .count = count};
        double model = tt_cost_predict(&m, &tt_algo_ring, &a, 4, 1);
        ck_assert_msg(book > model * 0.999 && book < model * 1.001, "ring p=%d: textbook %g, model %g", p,
                      book, model);
        ck_assert_int_eq(tt_explain_formula(&tt_algo_recursive_doubling, TT_COLL_ALLREDUCE, p, count * 4.0, c,
                                            text, sizeof text, &book),
                         0);
        /* the schedule also copies the input to the output first, which the textbook leaves out */
        model = tt_cost_predict(&m, &tt_algo_recursive_doubling, &a, 4, 1) - (double)count * 4 * c->beta;
        ck_assert_msg(book > model * 0.999 && book < model * 1.001,
                      "recursive doubling p=%d: textbook %g, model less the copy %g", p, book, model);
    }
    ck_assert_int_eq(
        tt_explain_formula(&tt_algo_rabenseifner, TT_COLL_ALLREDUCE, 6, 6144, c, text, sizeof text, &book),
        0);
    ck_assert_msg(strstr(text, "fold"), "%s", text);
    ck_assert_int_eq(
        tt_explain_formula(&tt_algo_ordered, TT_COLL_ALLREDUCE, 6, 6144, c, text, sizeof text, &book), -1);
}
END_TEST

START_TEST(tutti_explain_shows_rounds_compares_and_draws)
{
    static char out[1 << 18];
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a ring -n 4 -s 64M", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "step 6 at") && strstr(out, "(round 6)") && !strstr(out, "step 7 at"), "%s",
                  out);
    ck_assert_msg(strstr(out, "adds chunk 1 [b1+c1+d1] from rank 3: chunk 1 [a1+b1+c1+d1]"), "%.3000s", out);
    ck_assert_msg(strstr(out, "out 1 alpha + 256 KiB beta") && strstr(out, "256 KiB gamma"), "%.3000s", out);
    ck_assert_msg(strstr(out, "textbook: 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma"), "%.3000s", out);
    /* every rank ends with every chunk whole */
    char *last = strstr(out, "after step 6");
    for (int r = 0; last && r < 4; r++) {
        char name[16];
        snprintf(name, sizeof name, "  rank %-4d", r);
        char *line = strstr(last, name), *end = line ? strchr(line, '\n') : NULL;
        ck_assert_msg(line && end, "%.3000s", last);
        int whole = 0;
        for (char *c = line + strlen(name); c < end; c++)
            whole += *c == 'S';
        ck_assert_msg(whole == 4 && !memchr(line, '.', (size_t)(end - line)), "%.*s", (int)(end - line),
                      line);
    }
    ck_assert_msg(last, "%.3000s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a rabenseifner -n 6 -s 6K", out, sizeof out),
                     0);
    ck_assert_msg(strstr(out, "6 ranks is not a power of two") &&
                      strstr(out, "ranks 4-5 hand all their data"),
                  "%.3000s", out);
    /* the unfold: rank 4 gets the result in the step where rank 0 sends it, the last one */
    char *unfold = strstr(out, "to rank 4\n");
    ck_assert_msg(unfold && strstr(unfold, "rank 4  (round 2)  gets") && !strstr(unfold, "\nstep "), "%s",
                  out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a double_tree -n 8 -s 8K", out, sizeof out),
                     0);
    ck_assert_msg(!strstr(out, "idle"), "%.3000s", out);
    ck_assert_int_eq(
        tt_run_tool("tutti-explain", "-C allreduce -a rabenseifner -n 6 -s 6K --json", out, sizeof out), 0);
    ck_assert_msg(strncmp(out, "{\"tool\":\"tutti-explain\",", 24) == 0 && strstr(out, "\"grid\":[[") &&
                      strstr(out, "\"messages\":[{\"from\":4,\"to\":0"),
                  "%.3000s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -n 8 -s 8 --compare", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "recursive_doubling        3 "), "%.3000s",
                  out); /* lg 8 steps, not its 5 rounds */
    int picks = 0;
    for (char *s = out; (s = strstr(s, "  *\n")); s++)
        picks++;
    ck_assert_msg(picks == 1, "%d picks in\n%s", picks, out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a hierarchical -n 4 --nodes 2 --mermaid",
                                 out, sizeof out),
                     0);
    ck_assert_msg(strncmp(out, "sequenceDiagram\n", 16) == 0 && strstr(out, "r2->>r0: chunk 3 [c3+d3]"), "%s",
                  out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allgather -a bruck -n 5", out, sizeof out), 0);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a bruck -n 4", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "bruck does not serve allreduce"), "%.3000s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a rign -n 4", out, sizeof out), 2);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -n 0", out, sizeof out), 2);
}
END_TEST

/* --measure -b -e: under tutti-run, a table and a plot of measured against predicted. */
START_TEST(tutti_explain_measures_the_whole_call_across_sizes)
{
    static char out[1 << 16];
    char args[600];
    snprintf(args, sizeof args, "-n 2 %s/tutti-explain -C allreduce --measure -b 8 -e 1K",
             getenv("TT_BUILDDIR") ? getenv("TT_BUILDDIR") : ".");
    ck_assert_int_eq(tt_run_tool("tutti-run", args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "measured_us predicted_us") && strstr(out, "\n        1024  ") &&
                      !strstr(out, "\n        2048  ") && strstr(out, "m measured, p predicted"),
                  "%.3000s", out);
    int rows = 0;
    for (char *s = out; (s = strstr(s, "\n   ")) && rows < 100; s++)
        rows += s[4] == ' ' && s[12] >= '0' && s[12] <= '9';
    ck_assert_msg(rows == 8, "%d rows in %.3000s", rows, out);
}
END_TEST

/* The registry is the one list of algorithms: every file of algorithms/ is
 * in it, every entry names itself and is documented, and the tuner (its
 * cost model and its choice), tutti-explain's steps and the simulator's
 * trace all serve every collective each one builds. */
static int documented(const char *man, const char *name)
{
    char bold[64];
    snprintf(bold, sizeof bold, "**%s**", name);
    return strstr(man, bold) != NULL;
}

static char *read_source(const char *rel)
{
    const char *srcdir = getenv("TT_SRCDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", srcdir ? srcdir : ".", rel);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f, "cannot read %s", path);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

START_TEST(every_algorithm_file_is_registered_and_known_everywhere)
{
    char *man = strdup(read_source("man/tutti-algorithms.7.md"));
    char *listing = strdup(read_source("algorithms/Makefile.include"));
    for (char *f = listing; (f = strstr(f, "algorithms/")) != NULL;) {
        f += strlen("algorithms/");
        char name[64];
        size_t n = strcspn(f, ". \t\\\n");
        if (n == 0 || n >= sizeof name || strncmp(f + n, ".c", 2) != 0)
            continue;
        memcpy(name, f, n);
        name[n] = '\0';
        if (strcmp(name, "registry") != 0)
            ck_assert_msg(tt_algo_named(name), "algorithms/%s.c is built but not in TT_ALGORITHM_LIST", name);
    }
    free(listing);

    uint64_t ids[4] = {0, 0, 1, 1};
    tt_hosts_t hosts;
    ck_assert_int_eq(tt_hosts_init(&hosts, 4, ids, NULL), TUTTI_SUCCESS);
    tt_tuner_t plain = {.slice_bytes = 0}, ordered = {.slice_bytes = 0, .deterministic = 1};
    tt_cost_defaults(&plain.model);
    tt_cost_defaults(&ordered.model);
    for (int i = 0; i < tt_num_algorithms; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        ck_assert_msg(algo->name && *algo->name && algo->summary && *algo->summary, "entry %d", i);
        ck_assert_ptr_eq(tt_algo_named(algo->name), algo);
        ck_assert_msg(documented(man, algo->name), "%s is not in tutti-algorithms(7)", algo->name);
        int serves = 0;
        for (int c = 0; c < TT_COLL_COUNT; c++) {
            if (!algo->build[c])
                continue;
            serves++;
            tt_coll_args_t a = {.coll = (tt_coll_t)c, .nranks = 4, .root = 1, .count = 4096, .hosts = &hosts};
            if (c == TT_COLL_BARRIER)
                a.count = 0;
            if (c == TT_COLL_SEND || c == TT_COLL_RECV) { /* one side of a pair, not a job of all ranks */
                tt_sched_t s;
                ck_assert_int_eq(tt_sched_build(algo, &a, &s), TUTTI_SUCCESS);
                tt_sched_free(&s);
                continue;
            }
            ck_assert_msg(tt_tuner_considers(&plain, algo, &a) || tt_tuner_considers(&ordered, algo, &a),
                          "the tuner never considers %s for %s", algo->name, tt_coll_name(a.coll));
            ck_assert_msg(tt_cost_predict(&plain.model, algo, &a, 4, 2) > 0, "no cost for %s's %s",
                          algo->name, tt_coll_name(a.coll));
            tt_steps_t st;
            ck_assert_msg(tt_explain_steps(&st, &plain.model, algo, &a, 4, 1) == 0, "no steps for %s's %s",
                          algo->name, tt_coll_name(a.coll));
            tt_explain_steps_free(&st);
            tt_trace_t t;
            ck_assert_msg(tt_trace_run(&t, algo, &a) == 0, "no trace of %s's %s: %s", algo->name,
                          tt_coll_name(a.coll), t.error);
            tt_trace_free(&t);
        }
        ck_assert_msg(serves > 0, "%s serves no collective", algo->name);
    }
    tt_hosts_free(&hosts);
    free(man);
}
END_TEST

/* What a student types and reads: algorithm names in any case, the list on
 * a typo, each algorithm's shape in the JSON, arrows' loads, Mermaid steps
 * that all move messages, and --compare's reasons term by term. */
START_TEST(tutti_explain_names_shapes_and_reasons)
{
    static char out[1 << 18];
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C All_Reduce -a Double-Tree -n 4", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "with double_tree on 4 ranks"), "%.2000s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-a tree -n 8", out, sizeof out), 2);
    ck_assert_msg(strstr(out,
                         "unknown algorithm 'tree'; did you mean double_tree or binomial (for broadcast, "
                         "reduce)?") &&
                      strstr(out, "\n  ring ") && strstr(out, "\n  rabenseifner "),
                  "%.2000s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-a recursive_halving -C allreduce", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "did you mean rabenseifner?"), "%.2000s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-a binomial", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "binomial does not serve allreduce (it serves broadcast, reduce)"), "%.2000s",
                  out);
    static const char *shapes[][2] = {{"-a ring -n 5", "circle"},
                                      {"-a recursive_doubling -n 6", "butterfly"},
                                      {"-a rabenseifner -n 8", "butterfly"},
                                      {"-a double_tree -n 8", "tree"},
                                      {"-C broadcast -a binomial -n 7 -r 2", "tree"},
                                      {"-C reduce -a chain -n 5 -r 1", "tree"},
                                      {"-a direct -n 4", "circle"}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char args[96], want[64];
        snprintf(args, sizeof args, "%s --json", shapes[i][0]);
        snprintf(want, sizeof want, "\"shape\":{\"kind\":\"%s\"", shapes[i][1]);
        ck_assert_int_eq(tt_run_tool("tutti-explain", args, out, sizeof out), 0);
        ck_assert_msg(strstr(out, want), "%s: no %s in %.1500s", args, want, out);
    }
    /* both trees of 8 ranks, from their roots down 3 levels; the chain from its root */
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-a double_tree -n 8 --json", out, sizeof out), 0);
    ck_assert_msg(
        strstr(out,
               "{\"root\":4,\"chunks\":\"0-3\",\"parent\":[1,2,4,2,-1,6,4,6],\"depth\":[3,2,1,2,0,2,1,2]") &&
            strstr(out, "\"chunks\":\"4-7\""),
        "%.3000s", out);
    ck_assert_msg(strstr(out, "{\"from\":0,\"to\":1,") &&
                      strstr(out, "\"carries\":\"chunks 0-3 [a]\",\"tree\":0}"),
                  "%.3000s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C broadcast -a chain -n 4 -r 2 --json", out, sizeof out),
                     0);
    ck_assert_msg(strstr(out, "{\"root\":2,"), "%.3000s", out);
    /* every step of the diagram moves a message */
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-a double_tree -n 8 --mermaid", out, sizeof out), 0);
    for (char *note = strstr(out, "Note over"); note; note = strstr(note + 1, "Note over")) {
        char *next = strchr(note, '\n');
        ck_assert_msg(next && strncmp(next + 1, "    r", 5) == 0 && strstr(next, "->>"), "an empty step:\n%s",
                      out);
    }
    ck_assert_msg(strstr(out, "Note over r0,r7: step 1\n"), "%s", out);
    /* the difference, term by term, adds up to the model less the textbook, and says why */
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-n 8 -s 1M --compare", out, sizeof out), 0);
    char *dt = strstr(out, "\ndouble_tree: model ");
    double model, book, sum = 0, total = 0;
    ck_assert_msg(dt && sscanf(dt, "\ndouble_tree: model %lf us, textbook %lf us", &model, &book) == 2, "%s",
                  out);
    for (char *line = strchr(dt + 1, '\n'); line && strncmp(line, "\n  ", 3) == 0;
         line = strchr(line + 1, '\n')) {
        char *us = strstr(line, " us\n"), *num = us;
        while (us && num > line && num[-1] != ' ')
            num--;
        if (strncmp(line, "\n  total", 8) == 0)
            total = strtod(num, NULL);
        else if (us && strncmp(line, "\n  why", 6) != 0)
            sum += strtod(num, NULL);
    }
    ck_assert_msg(model - book > 100 && fabs(total - (model - book)) < 0.2 && fabs(sum - total) < 0.5,
                  "terms %.1f, total %.1f, model %.1f - textbook %.1f:\n%s", sum, total, model, book, dt);
    ck_assert_msg(
        strstr(dt,
               "why: 9 messages one after another, not 6; its messages in a row carry 4.50 n, not 1.00 n"),
        "%s", dt);
    ck_assert_msg(strstr(out, "why: it copies 1.00 n locally, which the formula leaves out"), "%s", out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("explain");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, the_trace_of_every_schedule_ends_with_the_right_terms, 1, 18);
    tcase_add_test(tc, tutti_explain_shows_rounds_compares_and_draws);
    tcase_add_test(tc, tutti_explain_names_shapes_and_reasons);
    tcase_add_loop_test(tc, global_steps_put_both_ends_of_every_message_together, 2, 13);
    tcase_add_test(tc, textbook_formulas_match_the_model_where_both_are_exact);
    tcase_add_test(tc, tutti_explain_measures_the_whole_call_across_sizes);
    tcase_add_test(tc, every_algorithm_file_is_registered_and_known_everywhere);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
