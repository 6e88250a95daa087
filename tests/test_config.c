/* SPDX-License-Identifier: MIT */
/* Parsing of TUTTI_* variables and sizes. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env_config.h"
#include "harness.h"

START_TEST(sizes_accept_suffixes_and_reject_junk)
{
    uint64_t v;
    ck_assert_int_eq(tt_parse_size("0", &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(tt_parse_size("4096", &v), 0);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(tt_parse_size("8K", &v), 0);
    ck_assert_uint_eq(v, 8192);
    ck_assert_int_eq(tt_parse_size("64M", &v), 0);
    ck_assert_uint_eq(v, 64ull << 20);
    ck_assert_int_eq(tt_parse_size("2g", &v), 0);
    ck_assert_uint_eq(v, 2ull << 30);
    ck_assert_int_eq(tt_parse_size("1MB", &v), 0);
    ck_assert_uint_eq(v, 1ull << 20);
    const char *bad[] = {"", "x", "-1", "12Q", "1M5", "99999999999999999999", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(tt_parse_size(bad[i], &v) == -1, "'%s' should be rejected", bad[i]);
}
END_TEST

START_TEST(ints_parse_strictly)
{
    int64_t v;
    ck_assert_int_eq(tt_parse_int("-3", &v), 0);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(tt_parse_int("12", &v), 0);
    ck_assert_int_eq(v, 12);
    ck_assert_int_eq(tt_parse_int("12s", &v), -1);
    ck_assert_int_eq(tt_parse_int("", &v), -1);
}
END_TEST

START_TEST(variables_fall_back_to_defaults_and_checks_name_typos)
{
    char msg[256];
    unsetenv("TUTTI_TIMEOUT");
    ck_assert_int_eq(tt_config_int(TT_CFG_TIMEOUT), 300);
    setenv("TUTTI_TIMEOUT", "42", 1);
    ck_assert_int_eq(tt_config_int(TT_CFG_TIMEOUT), 42);
    ck_assert_int_eq(tt_config_check(msg, sizeof msg), TUTTI_SUCCESS);
    setenv("TUTTI_SLICE_BYTES", "2M", 1);
    ck_assert_int_eq(tt_config_int(TT_CFG_SLICE_BYTES), 2 << 20);
    setenv("TUTTI_TIMEOUT", "soon", 1);
    ck_assert_int_eq(tt_config_int(TT_CFG_TIMEOUT), 300); /* malformed: default, logged */
    ck_assert_int_eq(tt_config_check(msg, sizeof msg), TUTTI_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(msg, "TUTTI_TIMEOUT=soon"));
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_SLICE_BYTES");
}
END_TEST

START_TEST(table_is_complete)
{
    for (int i = 0; i < TT_CFG_COUNT; i++) {
        const tt_config_entry_t *e = &tt_config_entries[i];
        ck_assert_ptr_nonnull(e->name);
        ck_assert_int_eq(strncmp(e->name, "TUTTI_", 6), 0);
        ck_assert_ptr_nonnull(e->def);
        ck_assert_uint_gt(strlen(e->help), 10);
    }
}
END_TEST

START_TEST(every_variable_is_documented_in_tutti_7)
{
    const char *srcdir = getenv("TT_SRCDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/man/tutti.7.md", srcdir ? srcdir : ".");
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    for (int i = 0; i < TT_CFG_COUNT; i++) {
        char want[64];
        snprintf(want, sizeof want, "**%s**", tt_config_entries[i].name);
        ck_assert_msg(strstr(text, want), "%s is missing from man/tutti.7.md", tt_config_entries[i].name);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, sizes_accept_suffixes_and_reject_junk);
    tcase_add_test(tc, ints_parse_strictly);
    tcase_add_test(tc, variables_fall_back_to_defaults_and_checks_name_typos);
    tcase_add_test(tc, table_is_complete);
    tcase_add_test(tc, every_variable_is_documented_in_tutti_7);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
