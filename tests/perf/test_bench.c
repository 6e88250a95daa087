/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' judgements and labels: tutti-bw's verdicts (never
 * "normal" above a baseline, withheld when the machine cannot give a pair
 * its CPUs or the figure is noise), its check of a fit, its baselines, the
 * names -t takes, and every column of tutti-perf --compress labelled.
 */
#include <check.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib/harness.h"
#include "perf/bw/bw_baseline.h"
#include "perf/bw/bw_judge.h"

static char out[1 << 16];

/* An idle machine of 2 CPUs, a pair on it, a steady figure. */
static tt_bw_evidence_t quiet(double measured, double baseline)
{
    return (tt_bw_evidence_t){
        .measured = measured, .cv = 0.02, .baseline = baseline, .same_host = 1, .cpus = 2};
}

START_TEST(a_link_above_its_baseline_is_never_normal)
{
    char why[160];
    static const struct {
        double measured, baseline;
        tt_bw_verdict_t want;
    } cases[] = {{1.40, 0.93, TT_VERDICT_ABOVE}, {1.001, 1.0, TT_VERDICT_ABOVE},
                 {1.0, 1.0, TT_VERDICT_NORMAL},  {0.75, 1.0, TT_VERDICT_NORMAL},
                 {0.74, 1.0, TT_VERDICT_BELOW},  {0.4, 1.0, TT_VERDICT_BELOW},
                 {0.39, 1.0, TT_VERDICT_LOW},    {1.0, 0, TT_VERDICT_UNKNOWN}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_bw_evidence_t e = quiet(cases[i].measured, cases[i].baseline);
        tt_bw_verdict_t v = tt_bw_judge(&e, why, sizeof why);
        ck_assert_msg(v == cases[i].want, "%.3f of %.3f: %s (%s)", cases[i].measured, cases[i].baseline,
                      tt_bw_verdict_name(v), why);
        ck_assert_msg((v == TT_VERDICT_ABOVE || v == TT_VERDICT_UNKNOWN) == (*why != '\0'), "why: '%s'", why);
    }
}
END_TEST

START_TEST(a_verdict_is_withheld_when_the_machine_makes_it_meaningless)
{
    char why[160];
    tt_bw_evidence_t e = quiet(0.5, 1.0);
    e.others_cpus = 1.6; /* of 2: the pair had no two CPUs */
    ck_assert_int_eq(tt_bw_judge(&e, why, sizeof why), TT_VERDICT_WITHHELD);
    ck_assert_msg(strstr(why, "other processes kept 1.6 of 2 CPUs busy"), "%s", why);
    e.others_cpus = 0.3;
    ck_assert_int_eq(tt_bw_judge(&e, why, sizeof why), TT_VERDICT_BELOW);
    e.same_host = 0; /* a pair across hosts needs one CPU of this one */
    e.others_cpus = 1.2;
    ck_assert_int_eq(tt_bw_judge(&e, why, sizeof why), TT_VERDICT_BELOW);
    e = quiet(0.5, 1.0);
    e.shared_cpu = 1;
    ck_assert_int_eq(tt_bw_judge(&e, why, sizeof why), TT_VERDICT_WITHHELD);
    ck_assert_msg(strstr(why, "pinned to one CPU"), "%s", why);
    e = quiet(0.5, 1.0);
    e.cpus = 1;
    ck_assert_int_eq(tt_bw_judge(&e, why, sizeof why), TT_VERDICT_WITHHELD);
    e = quiet(1.4, 1.0); /* noise is not "above" either */
    e.cv = 0.8;
    ck_assert_int_eq(tt_bw_judge(&e, why, sizeof why), TT_VERDICT_WITHHELD);
    ck_assert_msg(strstr(why, "varied by 80%"), "%s", why);
    e.cv = 0.02;
    e.others_cpus = -1; /* unknown: judged on the figures */
    ck_assert_int_eq(tt_bw_judge(&e, why, sizeof why), TT_VERDICT_ABOVE);
}
END_TEST

START_TEST(a_fit_miss_is_the_worst_factor_either_way)
{
    double measured[] = {1, 2, 4, 8}, fitted[] = {1, 2, 4, 8};
    int at = -1;
    ck_assert(tt_bw_fit_miss(measured, fitted, 4, &at) == 1);
    fitted[1] = 6;    /* 3x too slow */
    measured[3] = 80; /* 10x faster than measured */
    ck_assert(tt_bw_fit_miss(measured, fitted, 4, &at) == 10 && at == 3);
    ck_assert(tt_bw_fit_miss(measured, fitted, 3, &at) == 3 && at == 1);
    ck_assert(tt_bw_fit_miss(measured, fitted, 0, &at) == 1);
}
END_TEST

/* The baselines run on the CPUs they are given and stop by the rule. */
START_TEST(the_baselines_measure_under_the_rule)
{
    cpu_set_t cpus;
    ck_assert_int_eq(sched_getaffinity(0, sizeof cpus, &cpus), 0);
    tt_repeat_rule_t rule = {.min_n = 3, .max_n = 6, .tol = 0.02, .budget_s = 0.05};
    tt_stats_t s;
    ck_assert_int_eq(tt_bw_copy_baseline(&cpus, &cpus, 100000, 4096, 2, &rule, &s), 0);
    ck_assert_msg(s.n >= 3 && s.n <= 6 && s.median > 0 && s.min <= s.median, "n %d median %g", s.n, s.median);
    ck_assert_int_eq(tt_bw_tcp_baseline(&cpus, &cpus, 65536, 1 << 20, &rule, &s), 0);
    ck_assert_msg(s.n >= 3 && s.n <= 6 && s.median > 0, "n %d median %g", s.n, s.median);
}
END_TEST

START_TEST(bw_takes_ib_for_verbs_and_refuses_a_typo)
{
    int st = tt_run_tool("tutti-bw", "-t IB", out, sizeof out);
    ck_assert_msg(st == 0 && strstr(out, "verbs: ") && !strstr(out, "ib: "), "%d:\n%.2000s", st, out);
#ifdef TT_HAVE_VERBS
    ck_assert_msg(!strstr(out, "not built"), "%.2000s", out);
#else
    ck_assert_msg(strstr(out, "verbs: not built into this tutti"), "%.2000s", out);
#endif
    st = tt_run_tool("tutti-bw", "-t shm,shmm", out, sizeof out);
    ck_assert_msg(st == 2 && strstr(out, "-t: no transport 'shmm'; this tutti has ") &&
                      strstr(out, "shm, ") && strstr(out, "tcp, ") && strstr(out, "gpu and all") &&
                      !strstr(out, "GB/s"),
                  "%d:\n%.2000s", st, out);
}
END_TEST

/* Words on the line that starts at p (a lone "#" is not one). */
static int words(const char *p)
{
    char line[512];
    size_t len = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    int n = 0;
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save))
        n += strcmp(w, "#") != 0;
    return n;
}

/* Every column of all_reduce_perf --compress has a name and a unit. */
START_TEST(perf_compress_labels_its_ratio_column)
{
    ck_assert_int_eq(tt_run_tool("all_reduce_perf", "--compress int8 -b 1K -e 2K -n 2 -w 1", out, sizeof out),
                     0);
    const char *names = strstr(out, "#       size"), *units = names ? strchr(names, '\n') + 1 : NULL;
    const char *row = units ? strchr(units, '\n') + 1 : NULL;
    ck_assert_msg(names && row && *row == ' ', "%.3000s", out);
    ck_assert_msg(words(names) == words(row) && strstr(names, "ratio\n") == strchr(names, '\n') - 5 &&
                      strstr(units, "(x)\n") == strchr(units, '\n') - 3,
                  "%d names for %d columns:\n%.3000s", words(names), words(row), out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_link_above_its_baseline_is_never_normal);
    tcase_add_test(tc, a_verdict_is_withheld_when_the_machine_makes_it_meaningless);
    tcase_add_test(tc, a_fit_miss_is_the_worst_factor_either_way);
    tcase_add_test(tc, the_baselines_measure_under_the_rule);
    tcase_add_test(tc, bw_takes_ib_for_verbs_and_refuses_a_typo);
    tcase_add_test(tc, perf_compress_labels_its_ratio_column);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
