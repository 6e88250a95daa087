/* SPDX-License-Identifier: MIT */
/*
 * Every reduction kernel of every usable instruction set, for every dtype
 * and op, against an element-at-a-time reference written here: odd lengths,
 * unaligned pointers, in-place use, nothing written past the end, and
 * NaN/Inf/subnormal/-0 inputs. A NaN result must be the canonical NaN of
 * its type, bit for bit, whatever the NaN operands were (negative,
 * signalling, with a payload): every instruction set, and the GPU kernels,
 * give the same bits. (Every pair of fp8 inputs is checked in test_fp8.c.)
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp8.h"
#include "core/half.h"
#include "tests/lib/harness.h"
#include "cuda/vec_split.h"
#include "reduce/float_ops.h"
#include "reduce/reduce.h"

static const size_t lengths[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257, 1023};

static double fop(tutti_op_t op, double x, double y)
{
    if ((op == TUTTI_MIN || op == TUTTI_MAX) && (isnan(x) || isnan(y)))
        return NAN;
    switch (op) {
    case TUTTI_PROD: return x * y;
    case TUTTI_MIN: return x < y ? x : y;
    case TUTTI_MAX: return x > y ? x : y;
    default: return x + y;
    }
}

#define INT_REF(T, UT)                                                                                       \
    {                                                                                                        \
        T x, y, r;                                                                                           \
        memcpy(&x, (const char *)a + i * sizeof x, sizeof x);                                                \
        memcpy(&y, (const char *)b + i * sizeof y, sizeof y);                                                \
        switch (op) {                                                                                        \
        case TUTTI_PROD: r = (T)((UT)x * (UT)y); break;                                                      \
        case TUTTI_MIN: r = x < y ? x : y; break;                                                            \
        case TUTTI_MAX: r = x > y ? x : y; break;                                                            \
        default: r = (T)((UT)x + (UT)y); break;                                                              \
        }                                                                                                    \
        memcpy(out, &r, sizeof r);                                                                           \
        return;                                                                                              \
    }

/* The reference result of element i, written to out. Floats are computed
 * in double and rounded once, which equals fp32 arithmetic for + * min max
 * of fp32 inputs (double holds the exact product and sum). */
static void reference(tutti_dtype_t t, tutti_op_t op, const void *a, const void *b, size_t i, void *out)
{
    switch (t) {
    case TUTTI_INT8: INT_REF(int8_t, uint8_t)
    case TUTTI_UINT8: INT_REF(uint8_t, uint8_t)
    case TUTTI_INT32: INT_REF(int32_t, uint32_t)
    case TUTTI_UINT32: INT_REF(uint32_t, uint32_t)
    case TUTTI_INT64: INT_REF(int64_t, uint64_t)
    case TUTTI_UINT64: INT_REF(uint64_t, uint64_t)
    case TUTTI_FP32: {
        float x, y;
        memcpy(&x, (const char *)a + i * 4, 4);
        memcpy(&y, (const char *)b + i * 4, 4);
        float r = (float)fop(op, x, y);
        uint32_t u = 0x7fc00000u; /* the canonical NaN */
        memcpy(out, isnan(r) ? (void *)&u : (void *)&r, 4);
        return;
    }
    case TUTTI_FP64: {
        double x, y;
        memcpy(&x, (const char *)a + i * 8, 8);
        memcpy(&y, (const char *)b + i * 8, 8);
        double r = op == TUTTI_PROD ? x * y : op == TUTTI_MIN || op == TUTTI_MAX ? fop(op, x, y) : x + y;
        uint64_t u = 0x7ff8000000000000ull;
        memcpy(out, isnan(r) ? (void *)&u : (void *)&r, 8);
        return;
    }
    case TUTTI_FP16: {
        uint16_t x, y;
        memcpy(&x, (const char *)a + i * 2, 2);
        memcpy(&y, (const char *)b + i * 2, 2);
        float r = (float)fop(op, tt_fp16_to_f32(x), tt_fp16_to_f32(y));
        uint16_t h = isnan(r) ? 0x7e00 : tt_f32_to_fp16(r);
        memcpy(out, &h, 2);
        return;
    }
    case TUTTI_BF16: {
        uint16_t x, y;
        memcpy(&x, (const char *)a + i * 2, 2);
        memcpy(&y, (const char *)b + i * 2, 2);
        float r = (float)fop(op, tt_bf16_to_f32(x), tt_bf16_to_f32(y));
        uint16_t h = isnan(r) ? 0x7fc0 : tt_f32_to_bf16(r);
        memcpy(out, &h, 2);
        return;
    }
    case TUTTI_FP8_E4M3: {
        const uint8_t *x = a, *y = b;
        *(uint8_t *)out = tt_f32_to_e4m3((float)fop(op, tt_e4m3_to_f32(x[i]), tt_e4m3_to_f32(y[i])));
        return;
    }
    case TUTTI_FP8_E5M2: {
        const uint8_t *x = a, *y = b;
        *(uint8_t *)out = tt_f32_to_e5m2((float)fop(op, tt_e5m2_to_f32(x[i]), tt_e5m2_to_f32(y[i])));
        return;
    }
    default: return;
    }
}

/* Random bytes, with float special values sprinkled in: among them NaNs
 * that are negative, signalling or carry a payload. */
static void fill(tutti_dtype_t t, void *buf, size_t n, unsigned *seed)
{
    size_t size = tutti_dtype_size(t);
    unsigned char *p = buf;
    for (size_t i = 0; i < n * size; i++)
        p[i] = (unsigned char)rand_r(seed);
    for (size_t i = 0; i < n; i++) {
        int pick = rand_r(seed) % 14;
        if (t == TUTTI_FP32) {
            static const float sp[] = {NAN, INFINITY, -INFINITY, 1e-40f, -0.0f, 3.0f, 1e30f};
            static const uint32_t nans[] = {0xffc00000u, 0x7f800001u, 0x7fc12345u, 0xff912345u};
            float v = pick < 7 ? sp[pick] : (float)(rand_r(seed) % 2001 - 1000) / 8;
            memcpy(p + i * 4, pick >= 10 ? (const void *)&nans[pick - 10] : (const void *)&v, 4);
        } else if (t == TUTTI_FP64) {
            static const double sp[] = {NAN, INFINITY, -INFINITY, 1e-310, -0.0, 3.0, 1e300};
            static const uint64_t nans[] = {0xfff8000000000000ull, 0x7ff0000000000001ull,
                                            0x7ff8000012345678ull, 0xfff4000000000005ull};
            double v = pick < 7 ? sp[pick] : (double)(rand_r(seed) % 2001 - 1000) / 8;
            memcpy(p + i * 8, pick >= 10 ? (const void *)&nans[pick - 10] : (const void *)&v, 8);
        } else if ((t == TUTTI_FP16 || t == TUTTI_BF16) && pick < 9) {
            /* NaN, Inf, a subnormal, -0, max finite, other NaNs; else random bits */
            static const uint16_t h16[] = {0x7e00, 0x7c00, 0x0003, 0x8000, 0x7bff,
                                           0x3c00, 0xfe00, 0x7c01, 0x7e55};
            static const uint16_t b16[] = {0x7fc0, 0x7f80, 0x0005, 0x8000, 0x7f7f,
                                           0x3f80, 0xffc0, 0x7f81, 0x7fd5};
            memcpy(p + i * 2, t == TUTTI_FP16 ? &h16[pick] : &b16[pick], 2);
        } else if ((t == TUTTI_FP8_E4M3 || t == TUTTI_FP8_E5M2) && pick < 6) {
            /* NaN, largest finite (e5m2: Inf), a subnormal, -0, -largest, 1 */
            static const uint8_t e4[] = {0x7f, 0x7e, 0x03, 0x80, 0xfe, 0x38};
            static const uint8_t e5[] = {0x7e, 0x7c, 0x02, 0x80, 0xfb, 0x3c};
            p[i] = t == TUTTI_FP8_E4M3 ? e4[pick] : e5[pick];
        }
    }
}

START_TEST(kernels_match_the_reference)
{
    tt_isa_t isa = (tt_isa_t)_i;
    unsigned seed = 1234u + (unsigned)_i;
    char *a = malloc(8 * 1100 + 16), *b = malloc(8 * 1100 + 16), *d = malloc(8 * 1100 + 16);
    for (int t = 0; t < TUTTI_NUM_DTYPES; t++)
        for (int op = 0; op < TUTTI_NUM_OPS; op++) {
            tt_reduce_fn fn = tt_reduce_get_isa(isa, (tutti_dtype_t)t, (tutti_op_t)op);
            ck_assert_ptr_nonnull(fn);
            size_t size = tutti_dtype_size((tutti_dtype_t)t);
            for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
                for (int misalign = 0; misalign < 3; misalign++) {
                    size_t n = lengths[li];
                    char *pa = a + misalign, *pb = b + 2 * misalign, *pd = d + 3 * misalign;
                    fill((tutti_dtype_t)t, pa, n, &seed);
                    fill((tutti_dtype_t)t, pb, n, &seed);
                    int in_place = li % 2;
                    if (in_place)
                        pd = pa;
                    char *copy_a = malloc(n * size + 1);
                    memcpy(copy_a, pa, n * size);
                    memset(pd + n * size, 0x5a, 16); /* a kernel must not write past n elements */
                    fn(pd, pa, pb, n);
                    for (size_t g = 0; g < 16; g++)
                        ck_assert_msg((unsigned char)pd[n * size + g] == 0x5a,
                                      "%s %s %s n=%zu wrote past the end", tt_isa_name(isa),
                                      tutti_dtype_name((tutti_dtype_t)t), tutti_op_name((tutti_op_t)op), n);
                    for (size_t i = 0; i < n; i++) {
                        char want[8];
                        reference((tutti_dtype_t)t, (tutti_op_t)op, copy_a, pb, i, want);
                        ck_assert_msg(memcmp(want, pd + i * size, size) == 0,
                                      "%s %s %s n=%zu element %zu differs", tt_isa_name(isa),
                                      tutti_dtype_name((tutti_dtype_t)t), tutti_op_name((tutti_op_t)op), n,
                                      i);
                    }
                    free(copy_a);
                }
        }
    free(a);
    free(b);
    free(d);
}
END_TEST

START_TEST(portable_kernels_always_exist_and_avg_divides)
{
    ck_assert(tt_isa_usable(TT_ISA_PORTABLE));
    ck_assert_ptr_nonnull(tt_reduce_get(TUTTI_FP32, TUTTI_SUM));
    int32_t iv[3] = {7, -7, 9};
    tt_reduce_avg_finish(iv, 3, TUTTI_INT32, 2);
    ck_assert_int_eq(iv[0], 3);
    ck_assert_int_eq(iv[1], -3);
    ck_assert_int_eq(iv[2], 4);
    uint16_t h = tt_f32_to_fp16(3.0f);
    tt_reduce_avg_finish(&h, 1, TUTTI_FP16, 2);
    ck_assert(tt_fp16_to_f32(h) == 1.5f);
}
END_TEST

/* The average's division keeps the rule: a NaN sum divides to the canonical NaN. */
START_TEST(avg_and_scale_of_a_nan_give_the_canonical_nan)
{
    uint32_t f[2] = {0xffc12345u, 0x40400000u}; /* a negative NaN with a payload; 3.0 */
    tt_reduce_avg_finish(f, 2, TUTTI_FP32, 2);
    ck_assert_uint_eq(f[0], 0x7fc00000u);
    ck_assert_uint_eq(f[1], 0x3fc00000u); /* 1.5 */
    uint64_t d = 0xfff0000000000001ull;
    tt_reduce_avg_finish(&d, 1, TUTTI_FP64, 3);
    ck_assert(d == 0x7ff8000000000000ull);
    uint16_t h[2] = {0xfe01, 0xffc3};
    tt_reduce_avg_finish(&h[0], 1, TUTTI_FP16, 2);
    tt_reduce_avg_finish(&h[1], 1, TUTTI_BF16, 2);
    ck_assert_uint_eq(h[0], 0x7e00);
    ck_assert_uint_eq(h[1], 0x7fc0);
    /* The pre-multiplication of a pre-multiplied sum keeps it too. */
    uint32_t x[2] = {0xffc12345u, 0x3f800000u}, k = 0x40000000u, y[2]; /* a NaN and 1.0, times 2.0 */
    tt_reduce_scale(y, x, 2, TUTTI_FP32, &k);
    ck_assert_uint_eq(y[0], 0x7fc00000u);
    ck_assert_uint_eq(y[1], 0x40000000u);
    uint32_t inf = 0x7f800000u, zero = 0;
    tt_reduce_scale(y, &inf, 1, TUTTI_FP32, &zero); /* Inf * 0: x86 makes it 0xffc00000 */
    ck_assert_uint_eq(y[0], 0x7fc00000u);
}
END_TEST

/* The scalar ops the CUDA kernels compile (float_ops.h), here compiled for
 * the host: the same bits as the CPU kernels for every pair of special
 * values, so the GPU, which runs this code, agrees with the CPU. */
START_TEST(shared_scalar_ops_give_the_cpu_kernels_bits)
{
    static const uint32_t v[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc12345u,
                                 0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,
                                 0x00000001u, 0x3f800000u, 0xbf800000u, 0x7f7fffffu};
    size_t nv = sizeof v / sizeof *v;
    for (int isa = 0; isa < TT_ISA_COUNT; isa++)
        for (int op = 0; op < TUTTI_NUM_OPS && tt_isa_usable((tt_isa_t)isa); op++)
            for (size_t i = 0; i < nv; i++)
                for (size_t j = 0; j < nv; j++) {
                    float x = tt_f32_from_bits(v[i]), y = tt_f32_from_bits(v[j]), cpu;
                    tt_reduce_get_isa((tt_isa_t)isa, TUTTI_FP32, (tutti_op_t)op)(&cpu, &x, &y, 1);
                    float shared = tt_float_op(op, x, y);
                    ck_assert_msg(tt_f32_bits(cpu) == tt_f32_bits(shared),
                                  "%s %s 0x%08x 0x%08x: 0x%08x, not 0x%08x", tt_isa_name((tt_isa_t)isa),
                                  tutti_op_name((tutti_op_t)op), v[i], v[j], tt_f32_bits(shared),
                                  tt_f32_bits(cpu));
                    uint16_t hx = tt_f32_to_bf16(x), hy = tt_f32_to_bf16(y), hcpu;
                    tt_reduce_get_isa((tt_isa_t)isa, TUTTI_BF16, (tutti_op_t)op)(&hcpu, &hx, &hy, 1);
                    uint16_t hshared =
                        tt_f32_to_bf16(tt_float_op(op, tt_bf16_to_f32(hx), tt_bf16_to_f32(hy)));
                    ck_assert_msg(hcpu == hshared, "%s bf16 %s: 0x%04x, not 0x%04x",
                                  tt_isa_name((tt_isa_t)isa), tutti_op_name((tutti_op_t)op), hshared, hcpu);
                    double dx = x, dy = y, dcpu;
                    tt_reduce_get_isa((tt_isa_t)isa, TUTTI_FP64, (tutti_op_t)op)(&dcpu, &dx, &dy, 1);
                    double dshared = tt_double_op(op, dx, dy);
                    ck_assert_msg(memcmp(&dcpu, &dshared, 8) == 0, "%s fp64 %s differs",
                                  tt_isa_name((tt_isa_t)isa), tutti_op_name((tutti_op_t)op));
                }
}
END_TEST

/* The GPU kernels' split of a reduction (cuda/vec_split.h, compiled here
 * for the host): every element exactly once; 16-byte vectors for all
 * three pointers whenever they share their offset from a 16-byte boundary
 * (a skewed buffer vectorises after a short head, not element by element);
 * element by element when they do not. */
START_TEST(gpu_split_vectorises_after_a_head)
{
    static const size_t elems[] = {1, 2, 4, 8};
    for (size_t ei = 0; ei < 4; ei++)
        for (uintptr_t off = 0; off < 32; off++)
            for (size_t n = 0; n < 100; n++)
                for (int same = 0; same < 2; same++) {
                    size_t elem = elems[ei], per = 16 / elem;
                    uintptr_t d = 0x10000 + off, a = 0x20000 + off, b = 0x30000 + (same ? off : off + elem);
                    tt_vec_split_t sp = tt_vec_split(d, a, b, n, elem);
                    ck_assert_uint_eq(sp.head + sp.nvec * per + sp.tail, n);
                    ck_assert_int_eq(sp.aligned, off % elem == 0);
                    if (sp.nvec) {
                        ck_assert_uint_eq((d + sp.head * elem) % 16, 0);
                        ck_assert_uint_eq((a + sp.head * elem) % 16, 0);
                        ck_assert_uint_eq((b + sp.head * elem) % 16, 0);
                        ck_assert_uint_lt(sp.head, per);
                        ck_assert_uint_lt(sp.tail, per);
                    }
                    int can = same && off % elem == 0;
                    size_t head = (16 - off % 16) % 16 / elem;
                    if (can && n >= head + per)
                        ck_assert_msg(sp.nvec == (n - head) / per, "elem %zu off %zu n %zu: %zu vectors",
                                      elem, (size_t)off, n, sp.nvec);
                    if (!can && elem < 16)
                        ck_assert_uint_eq(sp.nvec, 0);
                }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("reduce");
    tcase_set_timeout(tc, 120);
    for (int isa = 0; isa < TT_ISA_COUNT; isa++) {
        if (tt_isa_usable((tt_isa_t)isa))
            tcase_add_loop_test(tc, kernels_match_the_reference, isa, isa + 1);
        else
            fprintf(stderr, "reduce: %s kernels are not usable on this CPU or build: not tested here\n",
                    tt_isa_name((tt_isa_t)isa));
    }
    tcase_add_test(tc, portable_kernels_always_exist_and_avg_divides);
    tcase_add_test(tc, avg_and_scale_of_a_nan_give_the_canonical_nan);
    tcase_add_test(tc, shared_scalar_ops_give_the_cpu_kernels_bits);
    tcase_add_test(tc, gpu_split_vectorises_after_a_head);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
