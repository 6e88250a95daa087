/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' labels and judgements: the names tutti-bw -t takes, and
 * every column of tutti-perf --compress labelled.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static char out[1 << 16];

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
    tcase_add_test(tc, bw_takes_ib_for_verbs_and_refuses_a_typo);
    tcase_add_test(tc, perf_compress_labels_its_ratio_column);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
