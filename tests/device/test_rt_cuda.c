/* SPDX-License-Identifier: MIT */
/*
 * The device layer's CUDA runtime table (src/device/rt_cuda.c, with
 * core/cuda_why.c) as a unit, without a GPU: compiled here with the
 * runtime's last-error call replaced by a counter. A failed call of the
 * table's takes its own error off the thread's last-error state, once;
 * naming that error afterwards (said) must leave the state alone, since
 * what is pending there by then may be the application's.
 */
#include <check.h>

#define cudaGetLastError tt_test_get_last_error
#define tt_device_cuda_rt tt_test_cuda_rt
#define tt_cuda_failed tt_test_cuda_failed
#define tt_cuda_why tt_test_cuda_why
#include "core/cuda_why.c"
#include "device/rt_cuda.c"

static int cleared;

cudaError_t tt_test_get_last_error(void)
{
    cleared++;
    return cudaSuccess;
}

START_TEST(naming_an_error_leaves_the_applications_pending_one)
{
    int prev;
    tutti_status_t st = tt_test_cuda_rt.enter(1 << 20, &prev); /* no such GPU (nor a driver here) */
    ck_assert_int_ne(st, TUTTI_SUCCESS);
    ck_assert_msg(cleared == 1, "a failed call took its error off %d time(s)", cleared);
    cleared = 0;
    const char *words = tt_test_cuda_rt.said();
    ck_assert_msg(words && *words, "no words for the failure");
    ck_assert_msg(cleared == 0, "naming the error cleared the thread's last error %d time(s)", cleared);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rt-cuda");
    TCase *tc = tcase_create("rt-cuda");
    tcase_add_test(tc, naming_an_error_leaves_the_applications_pending_one);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
