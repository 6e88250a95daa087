/* SPDX-License-Identifier: MIT */
/*
 * fp16/bf16 conversions, exhaustively over all 65536 bit patterns: widening
 * against the format's definition (ldexp), narrowing at every representable
 * value, every midpoint (ties to even) and one fp32 ulp either side.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "core/half.h"
#include "tests/lib/harness.h"

/* fp16 value by definition: (-1)^s 2^(e-15) (1 + m/1024), subnormal 2^-14 m/1024. */
static double fp16_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    if (e == 31)
        v = m ? NAN : INFINITY;
    return s ? -v : v;
}

static double bf16_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 7) & 255, m = h & 127;
    double v = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    if (e == 255)
        v = m ? NAN : INFINITY;
    return s ? -v : v;
}

START_TEST(fp16_widening_is_exact_for_all_patterns)
{
    for (uint32_t h = 0; h < 65536; h++) {
        double want = fp16_value((uint16_t)h);
        float got = tt_fp16_to_f32((uint16_t)h);
        if (isnan(want)) {
            ck_assert_msg(isnan(got), "0x%04x should widen to NaN", h);
            ck_assert_uint_eq(tt_f32_bits(got) >> 31, h >> 15);
        } else {
            ck_assert_msg((double)got == want && !signbit(got) == !signbit(want), "0x%04x: %g != %g", h, got,
                          want);
        }
    }
}
END_TEST

START_TEST(bf16_widening_is_exact_for_all_patterns)
{
    for (uint32_t h = 0; h < 65536; h++) {
        double want = bf16_value((uint16_t)h);
        float got = tt_bf16_to_f32((uint16_t)h);
        if (isnan(want))
            ck_assert(isnan(got));
        else
            ck_assert_msg((double)got == want && !signbit(got) == !signbit(want), "0x%04x", h);
    }
}
END_TEST

typedef float (*widen_fn)(uint16_t);
typedef uint16_t (*narrow_fn)(float);

/* For every pattern h and its successor: both round-trip, the midpoint goes
 * to the even one, and the floats next to the midpoint go to the nearer one. */
static void check_narrowing(widen_fn widen, narrow_fn narrow, uint16_t inf_bits, const char *name)
{
    for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
        for (uint32_t h = 0; h < inf_bits; h++) {
            uint16_t lo_bits = (uint16_t)(sign | h), hi_bits = (uint16_t)(sign | (h + 1));
            float lo = widen(lo_bits), hi = widen(hi_bits);
            ck_assert_msg(narrow(lo) == lo_bits, "%s 0x%04x does not round-trip", name, lo_bits);
            if (h + 1 == inf_bits)
                continue; /* above the largest finite value: the overflow checks below */
            double mid_exact = ((double)lo + (double)hi) / 2;
            float mid = (float)mid_exact;
            ck_assert((double)mid == mid_exact); /* every midpoint is an fp32 */
            uint16_t even = (lo_bits & 1) ? hi_bits : lo_bits;
            ck_assert_msg(narrow(mid) == even, "%s midpoint above 0x%04x gives 0x%04x, want 0x%04x", name,
                          lo_bits, narrow(mid), even);
            float below = nextafterf(mid, lo), above = nextafterf(mid, hi);
            ck_assert_msg(narrow(below) == lo_bits, "%s just below midpoint of 0x%04x", name, lo_bits);
            ck_assert_msg(narrow(above) == hi_bits, "%s just above midpoint of 0x%04x", name, lo_bits);
        }
    }
    ck_assert_uint_eq(narrow(INFINITY), inf_bits);
    ck_assert_uint_eq(narrow(-INFINITY), inf_bits | 0x8000);
    ck_assert_uint_eq(narrow(FLT_MAX), inf_bits);
    float top = widen((uint16_t)(inf_bits - 1)), step = top - widen((uint16_t)(inf_bits - 2));
    ck_assert_uint_eq(narrow(top + step / 2), inf_bits); /* tie to even: the even neighbour is Inf */
    ck_assert_uint_eq(narrow(nextafterf(top + step / 2, 0)), inf_bits - 1);
    uint16_t qnan = narrow(NAN);
    ck_assert(isnan(widen(qnan)));
    /* A signalling NaN whose payload sits only in low bits must stay NaN. */
    uint16_t snan = narrow(tt_f32_from_bits(0x7f800001u));
    ck_assert_msg(isnan(widen(snan)), "%s: sNaN became 0x%04x", name, snan);
    ck_assert_uint_eq(narrow(-0.0f), 0x8000);
}

START_TEST(fp16_narrowing_rounds_to_nearest_even)
{
    check_narrowing(tt_fp16_to_f32, tt_f32_to_fp16, 0x7c00, "fp16");
    /* Below half the smallest subnormal: zero; exactly half: tie to zero. */
    ck_assert_uint_eq(tt_f32_to_fp16(ldexpf(1, -25)), 0);
    ck_assert_uint_eq(tt_f32_to_fp16(nextafterf(ldexpf(1, -25), 1)), 1);
    ck_assert_uint_eq(tt_f32_to_fp16(65520.0f), 0x7c00);
    ck_assert_uint_eq(tt_f32_to_fp16(nextafterf(65520.0f, 0)), 0x7bff);
}
END_TEST

START_TEST(bf16_narrowing_rounds_to_nearest_even)
{
    check_narrowing(tt_bf16_to_f32, tt_f32_to_bf16, 0x7f80, "bf16");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("half");
    TCase *tc = tcase_create("half");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fp16_widening_is_exact_for_all_patterns);
    tcase_add_test(tc, bf16_widening_is_exact_for_all_patterns);
    tcase_add_test(tc, fp16_narrowing_rounds_to_nearest_even);
    tcase_add_test(tc, bf16_narrowing_rounds_to_nearest_even);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
