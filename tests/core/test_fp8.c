/* SPDX-License-Identifier: MIT */
/*
 * fp8 (e4m3, e5m2) exhaustively: widening of all 256 patterns against the
 * formats' definitions; narrowing against a reference that picks the
 * nearest value from the table of all 256 (ties to the even code, beyond
 * the largest finite value: that value, NaN: 0x7f), at every value,
 * midpoint and the floats either side, and on a sweep of fp32 patterns
 * (and, where the CUDA headers are installed, against cuda_fp8.h's own
 * host conversion); every one of the 256 x 256 input pairs for sum, prod,
 * min and max in every instruction set's kernels, and the avg division of
 * every pattern, against the exact result computed in double and rounded
 * once; then collectives on forked ranks, saturation and NaN included.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "tests/lib/harness.h"
#include "reduce/reduce.h"
#ifdef TT_HAVE_CUDA
#include <cuda_fp8.h>
#endif

typedef struct {
    const char *name;
    tutti_dtype_t dtype;
    int ebits, mbits, bias;
    uint8_t max_code;
    double max;
    float (*widen)(uint8_t);
    uint8_t (*narrow)(float);
} fmt_t;

static const fmt_t formats[2] = {
    {"e4m3", TUTTI_FP8_E4M3, 4, 3, 7, 0x7e, 448.0, tt_e4m3_to_f32, tt_f32_to_e4m3},
    {"e5m2", TUTTI_FP8_E5M2, 5, 2, 15, 0x7b, 57344.0, tt_e5m2_to_f32, tt_f32_to_e5m2},
};

/* The value of a pattern by the format's definition: (-1)^s 2^(e-bias)
 * (1 + m/2^mbits), subnormal 2^(1-bias) m/2^mbits. e4m3 gives its top
 * pattern to NaN and has no Inf; e5m2's top exponent is Inf and NaN. */
static double fp8_value(const fmt_t *f, uint8_t b)
{
    int s = b >> 7, e = (b >> f->mbits) & ((1 << f->ebits) - 1), m = b & ((1 << f->mbits) - 1);
    int emax = (1 << f->ebits) - 1;
    double v = e == 0 ? ldexp(m, 1 - f->bias - f->mbits) : ldexp((1 << f->mbits) + m, e - f->bias - f->mbits);
    if (f->dtype == TUTTI_FP8_E4M3 && (b & 0x7f) == 0x7f)
        v = NAN;
    if (f->dtype == TUTTI_FP8_E5M2 && e == emax)
        v = m ? NAN : INFINITY;
    return s ? -v : v;
}

/* Reference narrowing, by search rather than bit arithmetic: the nearest
 * finite pattern, ties to the even one, saturating beyond the largest. */
static uint8_t ref_round(const fmt_t *f, double x)
{
    static double values[2][256];
    static int filled[2];
    int k = f->dtype == TUTTI_FP8_E5M2;
    if (!filled[k]) {
        for (unsigned c = 0; c < 256; c++)
            values[k][c] = fp8_value(f, (uint8_t)c);
        filled[k] = 1;
    }
    if (isnan(x))
        return 0x7f;
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double a = fabs(x);
    if (a >= f->max)
        return sign | f->max_code;
    unsigned best = 0;
    for (unsigned c = 1; c <= f->max_code; c++) {
        double d = fabs(values[k][c] - a), db = fabs(values[k][best] - a);
        if (d < db || (d == db && !(c & 1)))
            best = c;
    }
    return sign | (uint8_t)best;
}

static int same_value(double want, float got)
{
    if (isnan(want))
        return isnan(got);
    return (double)got == want && !signbit(got) == !signbit(want);
}

START_TEST(widening_is_exact_for_all_patterns)
{
    for (int k = 0; k < 2; k++)
        for (unsigned b = 0; b < 256; b++) {
            double want = fp8_value(&formats[k], (uint8_t)b);
            float got = formats[k].widen((uint8_t)b);
            ck_assert_msg(same_value(want, got), "%s 0x%02x widens to %g, not %g", formats[k].name, b, got,
                          want);
        }
    /* the facts the man page states */
    ck_assert(tt_e4m3_to_f32(0x7e) == 448.0f && isnan(tt_e4m3_to_f32(0xff)) &&
              tt_e4m3_to_f32(0x01) == 0x1p-9f);
    ck_assert(tt_e5m2_to_f32(0x7b) == 57344.0f && tt_e5m2_to_f32(0x7c) == INFINITY &&
              tt_e5m2_to_f32(0xfc) == -INFINITY && tt_e5m2_to_f32(0x01) == 0x1p-16f);
}
END_TEST

static void check_narrow(const fmt_t *f, float x)
{
    uint8_t want = ref_round(f, x), got = f->narrow(x);
    ck_assert_msg(got == want, "%s: %a narrows to 0x%02x, want 0x%02x", f->name, (double)x, got, want);
}

START_TEST(narrowing_matches_the_nearest_value_search)
{
    const fmt_t *f = &formats[_i];
    for (unsigned c = 0; c <= f->max_code; c++) {
        float lo = f->widen((uint8_t)c);
        ck_assert_uint_eq(f->narrow(lo), c);
        ck_assert_uint_eq(f->narrow(-lo), c | 0x80);
        /* the midpoint to the next pattern (above the largest: half an ulp
         * past it), and the floats beside it, both signs */
        double step = c < f->max_code ? f->widen((uint8_t)(c + 1)) - lo : lo - f->widen((uint8_t)(c - 1));
        float mid = (float)(lo + step / 2);
        ck_assert((double)mid == lo + step / 2);
        float xs[] = {mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), nextafterf(lo, 0),
                      nextafterf(lo, INFINITY)};
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
            check_narrow(f, xs[i]);
            check_narrow(f, -xs[i]);
        }
    }
    /* A sweep of fp32 patterns: every range, NaNs and fp32 subnormals included. */
    for (uint64_t u = 0; u < (1ull << 32); u += 16381) {
        float x = tt_f32_from_bits((uint32_t)u);
        check_narrow(f, x);
    }
    float specials[] = {INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, 0.0f, -0.0f, FLT_MIN, -FLT_MIN, 1e-45f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        check_narrow(f, specials[i]);
}
END_TEST

START_TEST(overflow_saturates_and_nan_is_0x7f)
{
    /* e4m3: 464 is the tie between 448 and the NaN pattern's place; everything
     * from there up, Inf included, saturates to +-448 */
    ck_assert_uint_eq(tt_f32_to_e4m3(464.0f), 0x7e);
    ck_assert_uint_eq(tt_f32_to_e4m3(1e6f), 0x7e);
    ck_assert_uint_eq(tt_f32_to_e4m3(INFINITY), 0x7e);
    ck_assert_uint_eq(tt_f32_to_e4m3(-INFINITY), 0xfe);
    ck_assert_uint_eq(tt_f32_to_e4m3(NAN), 0x7f);
    ck_assert_uint_eq(tt_f32_to_e4m3(-NAN), 0x7f);
    /* e5m2 has infinities, but a stored result saturates as in NCCL */
    ck_assert_uint_eq(tt_f32_to_e5m2(61440.0f), 0x7b);
    ck_assert_uint_eq(tt_f32_to_e5m2(INFINITY), 0x7b);
    ck_assert_uint_eq(tt_f32_to_e5m2(-INFINITY), 0xfb);
    ck_assert_uint_eq(tt_f32_to_e5m2(-NAN), 0x7f);
    ck_assert_uint_eq(tt_f32_to_e5m2(tt_f32_from_bits(0x7f800001u)), 0x7f); /* a signalling NaN */
    /* underflow: half the smallest subnormal ties to zero, keeping the sign */
    ck_assert_uint_eq(tt_f32_to_e4m3(0x1p-10f), 0x00);
    ck_assert_uint_eq(tt_f32_to_e4m3(-0x1p-10f), 0x80);
    ck_assert_uint_eq(tt_f32_to_e4m3(nextafterf(0x1p-10f, 1)), 0x01);
    ck_assert_uint_eq(tt_f32_to_e5m2(0x1p-17f), 0x00);
    ck_assert_uint_eq(tt_f32_to_e5m2(0x3p-17f), 0x02); /* 1.5 units: to even */
}
END_TEST

#ifdef TT_HAVE_CUDA
/* The same conversions as CUDA's (__NV_SATFINITE, the mode of the
 * __nv_fp8_e4m3/e5m2 constructors NCCL's kernels store through). */
START_TEST(conversions_match_cuda_fp8_h)
{
    static const __nv_fp8_interpretation_t kinds[2] = {__NV_E4M3, __NV_E5M2};
    const fmt_t *f = &formats[_i];
    for (uint64_t u = 0; u < (1ull << 32); u += 8191) {
        float x = tt_f32_from_bits((uint32_t)u);
        ck_assert_msg(f->narrow(x) == __nv_cvt_float_to_fp8(x, __NV_SATFINITE, kinds[_i]), "%s: %a", f->name,
                      (double)x);
    }
    for (unsigned b = 0; b < 256; b++) {
        __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, kinds[_i]);
        float got = f->widen((uint8_t)b), want = tt_fp16_to_f32(h.x);
        ck_assert_msg(isnan(want) ? isnan(got) : tt_f32_bits(got) == tt_f32_bits(want), "%s 0x%02x", f->name,
                      b);
    }
}
END_TEST
#endif

/* op of two values as tutti defines it (min/max: NaN wins; equal: the second). */
static double exact_op(tutti_op_t op, double x, double y)
{
    switch (op) {
    case TUTTI_PROD: return x * y;
    case TUTTI_MIN: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
    case TUTTI_MAX: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
    default: return x + y;
    }
}

/* _i: instruction set. a[i] = i & 255 and b[i] = i >> 8: all 65536 pairs.
 * Sums and products of two fp8 values are exact in double. */
START_TEST(every_pair_in_every_kernel)
{
    tt_isa_t isa = (tt_isa_t)_i;
    uint8_t *a = malloc(65536 + 1), *b = malloc(65536), *d = malloc(65536 + 1);
    for (unsigned i = 0; i < 65536; i++) {
        a[i + 1] = (uint8_t)i; /* one byte in: no alignment to lean on */
        b[i] = (uint8_t)(i >> 8);
    }
    for (int k = 0; k < 2; k++) {
        const fmt_t *f = &formats[k];
        for (int op = 0; op < TUTTI_NUM_OPS; op++) {
            tt_reduce_fn fn = tt_reduce_get_isa(isa, f->dtype, (tutti_op_t)op);
            ck_assert_ptr_nonnull(fn);
            fn(d + 1, a + 1, b, 65536);
            for (unsigned i = 0; i < 65536; i++) {
                double x = fp8_value(f, a[i + 1]), y = fp8_value(f, b[i]);
                uint8_t want = ref_round(f, exact_op((tutti_op_t)op, x, y));
                ck_assert_msg(d[i + 1] == want, "%s %s %s 0x%02x, 0x%02x: got 0x%02x, want 0x%02x",
                              tt_isa_name(isa), f->name, tutti_op_name((tutti_op_t)op), a[i + 1], b[i],
                              d[i + 1], want);
            }
        }
    }
    free(a);
    free(b);
    free(d);
}
END_TEST

/* avg's division, for every pattern and several rank counts: the quotient
 * in double rounded once equals tutti's fp32 division rounded to fp8. */
START_TEST(avg_divides_every_pattern)
{
    static const int nranks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 31, 64, 100, 1000};
    for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < sizeof nranks / sizeof nranks[0]; j++) {
            uint8_t buf[256];
            for (unsigned c = 0; c < 256; c++)
                buf[c] = (uint8_t)c;
            tt_reduce_avg_finish(buf, 256, formats[k].dtype, nranks[j]);
            for (unsigned c = 0; c < 256; c++) {
                uint8_t want = ref_round(&formats[k], fp8_value(&formats[k], (uint8_t)c) / nranks[j]);
                ck_assert_msg(buf[c] == want, "%s 0x%02x / %d: got 0x%02x, want 0x%02x", formats[k].name, c,
                              nranks[j], buf[c], want);
            }
        }
}
END_TEST

START_TEST(names_sizes_and_enum_values)
{
    /* appended after fp64: the values existing callers compiled in stay */
    ck_assert_int_eq(TUTTI_FP64, 9);
    ck_assert_int_eq(TUTTI_FP8_E4M3, 10);
    ck_assert_int_eq(TUTTI_FP8_E5M2, 11);
    ck_assert_uint_eq(tutti_dtype_size(TUTTI_FP8_E4M3), 1);
    ck_assert_uint_eq(tutti_dtype_size(TUTTI_FP8_E5M2), 1);
    ck_assert_str_eq(tutti_dtype_name(TUTTI_FP8_E4M3), "fp8e4m3");
    ck_assert_str_eq(tutti_dtype_name(TUTTI_FP8_E5M2), "fp8e5m2");
    static const struct {
        const char *name;
        tutti_dtype_t t;
    } names[] = {{"fp8e4m3", TUTTI_FP8_E4M3},
                 {"f8e4m3", TUTTI_FP8_E4M3},
                 {"fp8e5m2", TUTTI_FP8_E5M2},
                 {"f8e5m2", TUTTI_FP8_E5M2}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tutti_dtype_t t = TUTTI_FP32;
        ck_assert_int_eq(tt_dtype_parse(names[i].name, &t), 0);
        ck_assert_int_eq(t, names[i].t);
    }
}
END_TEST

/* Every reducing collective with every op on tt_test_value's exact inputs,
 * then sums that saturate and a NaN that must reach every rank. */
static int fp8_collectives(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    enum { N = 1001 };
    uint8_t in[N * 8], out[N * 8], want[N * 8], term[N * 8];
    TT_FAIL_IF(p > 8, "at most 8 ranks");
    for (int k = 0; k < 2; k++) {
        tutti_dtype_t t = formats[k].dtype;
        for (int op = 0; op < TUTTI_NUM_OPS; op++) {
            for (size_t i = 0; i < N; i++)
                tt_test_value(t, (tutti_op_t)op, in, i, r, i);
            TT_FAIL_IF(tutti_allreduce(in, out, N, t, (tutti_op_t)op, comm, NULL), "allreduce: %s",
                       tutti_comm_last_error(comm));
            tt_expect_reduced((char *)want, (char *)term, N, 0, p, t, (tutti_op_t)op);
            TT_FAIL_IF(memcmp(want, out, N), "%s %s allreduce wrong", formats[k].name,
                       tutti_op_name((tutti_op_t)op));
            for (size_t i = 0; i < N * (size_t)p; i++)
                tt_test_value(t, (tutti_op_t)op, in, i, r, i);
            TT_FAIL_IF(tutti_reduce_scatter(in, out, N, t, (tutti_op_t)op, comm, NULL), "reduce_scatter: %s",
                       tutti_comm_last_error(comm));
            tt_expect_reduced((char *)want, (char *)term, N, (size_t)r * N, p, t, (tutti_op_t)op);
            TT_FAIL_IF(memcmp(want, out, N), "%s %s reduce_scatter wrong", formats[k].name,
                       tutti_op_name((tutti_op_t)op));
        }
        /* Order-free overflow: positive terms past the largest value give it,
         * e5m2's Inf included; a NaN anywhere gives 0x7f everywhere. */
        uint8_t big = k == 0 ? 0x7c /* 384 */ : (r == 0 ? 0x7c /* Inf */ : 0x3c /* 1 */);
        memset(in, big, 3);
        in[1] = r == p - 1 ? 0x7f : in[1];
        TT_FAIL_IF(tutti_allreduce(in, out, 3, t, TUTTI_SUM, comm, NULL), "allreduce: %s",
                   tutti_comm_last_error(comm));
        uint8_t sat = p > 1 ? formats[k].max_code : big; /* one rank: nothing is added */
        TT_FAIL_IF(out[0] != sat || out[1] != 0x7f || out[2] != sat, "%s saturating sum gave %02x %02x %02x",
                   formats[k].name, out[0], out[1], out[2]);
        TT_FAIL_IF(tutti_allreduce(in, out, 3, t, TUTTI_MAX, comm, NULL), "allreduce: %s",
                   tutti_comm_last_error(comm));
        TT_FAIL_IF(out[1] != 0x7f, "%s max dropped a NaN", formats[k].name);
    }
    return 0;
}

static const int sizes[] = {1, 2, 3, 5, 8};

START_TEST(collectives_over_shm)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(sizes[_i], fp8_collectives, NULL, 120);
}
END_TEST

START_TEST(collectives_over_tcp)
{
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_run_ranks(3, fp8_collectives, NULL, 120);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fp8");
    TCase *tc = tcase_create("fp8");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, widening_is_exact_for_all_patterns);
    tcase_add_loop_test(tc, narrowing_matches_the_nearest_value_search, 0, 2);
    tcase_add_test(tc, overflow_saturates_and_nan_is_0x7f);
#ifdef TT_HAVE_CUDA
    tcase_add_loop_test(tc, conversions_match_cuda_fp8_h, 0, 2);
#endif
    for (int isa = 0; isa < TT_ISA_COUNT; isa++) {
        if (tt_isa_usable((tt_isa_t)isa))
            tcase_add_loop_test(tc, every_pair_in_every_kernel, isa, isa + 1);
        else
            fprintf(stderr, "fp8: %s kernels are not usable on this CPU or build: not tested here\n",
                    tt_isa_name((tt_isa_t)isa));
    }
    tcase_add_test(tc, avg_divides_every_pattern);
    tcase_add_test(tc, names_sizes_and_enum_values);
    tcase_add_loop_test(tc, collectives_over_shm, 0, 5);
    tcase_add_test(tc, collectives_over_tcp);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
