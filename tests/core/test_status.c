/* SPDX-License-Identifier: MIT */
/* The status table, version query and dtype/op names. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/harness.h"

START_TEST(every_status_has_a_distinct_name_and_text)
{
    static const tutti_status_t all[] = {
#define TT_LIST(name, value, text) name,
        TUTTI_STATUS_TABLE(TT_LIST)
#undef TT_LIST
    };
    size_t n = sizeof all / sizeof all[0];
    ck_assert_uint_ge(n, 10);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(all[i], (int)i); /* values are dense and in table order */
        ck_assert_str_ne(tutti_strerror(all[i]), "");
        ck_assert_str_ne(tutti_strerror(all[i]), "unknown status code");
        ck_assert_ptr_nonnull(strstr(tutti_status_name(all[i]), "TUTTI_"));
        for (size_t j = 0; j < i; j++) {
            ck_assert_str_ne(tutti_strerror(all[i]), tutti_strerror(all[j]));
            ck_assert_str_ne(tutti_status_name(all[i]), tutti_status_name(all[j]));
        }
    }
    ck_assert_str_eq(tutti_status_name(TUTTI_ERR_TIMEOUT), "TUTTI_ERR_TIMEOUT");
    ck_assert_str_eq(tutti_strerror((tutti_status_t)999), "unknown status code");
}
END_TEST

START_TEST(version_query_matches_the_headers)
{
    int major = -1, minor = -1, patch = -1;
    ck_assert_int_eq(tutti_get_version(&major, &minor, &patch), TUTTI_VERSION);
    ck_assert_int_eq(major, TUTTI_VERSION_MAJOR);
    ck_assert_int_eq(minor, TUTTI_VERSION_MINOR);
    ck_assert_int_eq(patch, TUTTI_VERSION_PATCH);
    ck_assert_int_eq(tutti_get_version(NULL, NULL, NULL), TUTTI_VERSION);
}
END_TEST

START_TEST(dtype_sizes_and_names)
{
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 1, 1};
    for (int t = 0; t < TUTTI_NUM_DTYPES; t++) {
        ck_assert_uint_eq(tutti_dtype_size((tutti_dtype_t)t), sizes[t]);
        ck_assert_str_ne(tutti_dtype_name((tutti_dtype_t)t), "unknown");
    }
    ck_assert_uint_eq(tutti_dtype_size(TUTTI_NUM_DTYPES), 0);
    ck_assert_str_eq(tutti_dtype_name(TUTTI_BF16), "bf16");
    ck_assert_str_eq(tutti_op_name(TUTTI_AVG), "avg");
    ck_assert_str_eq(tutti_op_name((tutti_op_t)-1), "unknown");
}
END_TEST

/* Every kind and rounding mode has its own name (the Python package and the
 * tools read them), and the value after the last one has none. */
START_TEST(compression_kinds_and_roundings_are_named)
{
    static const char *const kinds[] = {"none", "topk", "int8", "int4", "sign"};
    for (int k = TUTTI_COMPRESS_NONE; k <= TUTTI_COMPRESS_SIGN; k++)
        ck_assert_str_eq(tutti_compress_kind_name((tutti_compress_kind_t)k), kinds[k]);
    ck_assert_str_eq(tutti_compress_kind_name((tutti_compress_kind_t)(TUTTI_COMPRESS_SIGN + 1)), "unknown");
    ck_assert_str_eq(tutti_compress_kind_name((tutti_compress_kind_t)-1), "unknown");
    ck_assert_str_eq(tutti_rounding_name(TUTTI_ROUND_NEAREST), "nearest");
    ck_assert_str_eq(tutti_rounding_name(TUTTI_ROUND_STOCHASTIC), "stochastic");
    ck_assert_str_eq(tutti_rounding_name((tutti_rounding_t)(TUTTI_ROUND_STOCHASTIC + 1)), "unknown");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("status");
    tcase_add_test(tc, every_status_has_a_distinct_name_and_text);
    tcase_add_test(tc, version_query_matches_the_headers);
    tcase_add_test(tc, dtype_sizes_and_names);
    tcase_add_test(tc, compression_kinds_and_roundings_are_named);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
