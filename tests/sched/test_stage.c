/* SPDX-License-Identifier: MIT */
/*
 * The pieces of a schedule that one slice reads or writes, and whether the
 * slices' writes cover the output once (where the engine divides an
 * average slice by slice; test-collectives checks the averages it gives).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/harness.h"
#include "sched/stage.h"

START_TEST(pieces_merge_and_follow_the_slice)
{
    tt_sched_t s;
    tt_sched_init(&s);
    ck_assert_int_eq(tt_sched_round(&s), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_send(&s, 1, tt_region(TT_BUF_INPUT, 0, 100)), TUTTI_SUCCESS);
    ck_assert_int_eq(
        tt_sched_recv_reduce(&s, 1, tt_region(TT_BUF_OUTPUT, 100, 100), tt_region(TT_BUF_INPUT, 100, 100)),
        TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_copy(&s, tt_region(TT_BUF_SCRATCH, 0, 100), tt_region(TT_BUF_INPUT, 300, 100)),
                     TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_recv(&s, 1, tt_region(TT_BUF_OUTPUT, 0, 100)), TUTTI_SUCCESS);
    tt_piece_t p[8];
    /* Slice 1 of 4 (25 elements from 25) of each region read: inputs 0..100
     * and 100..200 touch only through their slices, which do not meet. */
    int n = tt_stage_pieces(&s, 4, 4, 1, 1u << TT_BUF_INPUT, 0, p);
    ck_assert_int_eq(n, 3);
    ck_assert(p[0].buf == TT_BUF_INPUT && p[0].off == 25 * 4 && p[0].bytes == 25 * 4);
    ck_assert(p[1].off == 125 * 4 && p[2].off == 325 * 4);
    /* One slice covering everything: 0..200 merge, 300..400 stays apart. */
    n = tt_stage_pieces(&s, 4, 1, 0, 1u << TT_BUF_INPUT, 0, p);
    ck_assert_int_eq(n, 2);
    ck_assert(p[0].off == 0 && p[0].bytes == 200 * 4 && p[1].off == 300 * 4 && p[1].bytes == 100 * 4);
    /* Writes: both output regions, merged; scratch left out by the mask. */
    n = tt_stage_pieces(&s, 4, 1, 0, 1u << TT_BUF_OUTPUT, 1, p);
    ck_assert_int_eq(n, 1);
    ck_assert(p[0].buf == TT_BUF_OUTPUT && p[0].off == 0 && p[0].bytes == 200 * 4);
    tt_sched_free(&s);
}
END_TEST

/* The engine divides an average slice by slice only where each output
 * byte is written by exactly one slice. */
START_TEST(partitions_need_each_output_byte_in_one_slice)
{
    tt_piece_t p[8];
    tt_sched_t s;
    tt_sched_init(&s);
    ck_assert_int_eq(tt_sched_round(&s), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_recv(&s, 1, tt_region(TT_BUF_OUTPUT, 0, 100)), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_round(&s), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_recv(&s, 1, tt_region(TT_BUF_OUTPUT, 100, 60)), TUTTI_SUCCESS);
    /* Two regions side by side: any slicing keeps every byte in one slice. */
    ck_assert(tt_stage_partitions(&s, 4, 1, TT_BUF_OUTPUT, 160 * 4, p));
    ck_assert(tt_stage_partitions(&s, 4, 7, TT_BUF_OUTPUT, 160 * 4, p));
    /* Not the whole output written: the rest would never be divided. */
    ck_assert(!tt_stage_partitions(&s, 4, 3, TT_BUF_OUTPUT, 200 * 4, p));
    /* A region that overlaps the first with other bounds: its slices cut
     * elsewhere, so a byte is in slice k of one and slice j of the other. */
    ck_assert_int_eq(tt_sched_copy(&s, tt_region(TT_BUF_OUTPUT, 50, 100), tt_region(TT_BUF_INPUT, 0, 100)),
                     TUTTI_SUCCESS);
    ck_assert(tt_stage_partitions(&s, 4, 1, TT_BUF_OUTPUT, 160 * 4, p)); /* one slice: still once */
    ck_assert(!tt_stage_partitions(&s, 4, 4, TT_BUF_OUTPUT, 160 * 4, p));
    tt_sched_free(&s);
}
END_TEST

static Suite *stage_suite(void)
{
    Suite *s = suite_create("stage");
    TCase *tc = tcase_create("stage");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, pieces_merge_and_follow_the_slice);
    tcase_add_test(tc, partitions_need_each_output_byte_in_one_slice);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tt_run_suite(stage_suite());
}
