/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' labels and judgements: every column of tutti-perf
 * --compress labelled.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static char out[1 << 16];

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
    tcase_add_test(tc, perf_compress_labels_its_ratio_column);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
