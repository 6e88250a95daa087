/* SPDX-License-Identifier: MIT */
/*
 * The CUDA kernels' own source, run on the CPU by the kernel stand-in
 * (tests/cuda/kernel_cpu), through the library's entry points to them
 * (src/cuda/kernels.h), against the CPU's code bit for bit, each case with
 * blocks and threads run forward, reversed and shuffled; TT_KCPU_SWEEP=1
 * runs a larger sweep. This file: the stand-in itself, the gate and signal
 * kernels, the reductions, the average's division and the scalings in
 * every dtype and op, counts from 0 to past the grid's cap, buffers at
 * every offset from a 16-byte boundary and misaligned to their element, in
 * place, special values.
 * test_kernels_codec.c: the compression kernels.
 * test_kernels_allreduce.c: the compressed all-reduce's GPU path.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/kernels.h"
#include "tests/lib/harness.h"
#include "tests/cuda/kernels_cpu.h"
#include "reduce/reduce.h"

static void *store_later(void *word)
{
    struct timespec t = {0, 20 * 1000 * 1000};
    nanosleep(&t, NULL);
    __atomic_store_n((unsigned *)word, 6u, __ATOMIC_RELEASE);
    return NULL;
}

/* The gate returns once the word reaches its ticket, in wrap-around
 * order; the signal stores its ticket. Both on mapped host words. */
START_TEST(gate_and_signal_kernels)
{
    kc_begin();
    unsigned *word = tt_kcpu_host_alloc(sizeof *word);
    ck_assert_int_eq(tt_cuda_signal_ticket(word, 41, NULL), 0);
    ck_assert_uint_eq(*word, 41);
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 41, NULL), 0); /* reached */
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 40, NULL), 0); /* passed */
    *word = 3;
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 0xfffffff0u, NULL), 0); /* passed, across the wrap */
    *word = 5;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, store_later, word), 0);
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 6, NULL), 0); /* returns once the host stores it */
    pthread_join(t, NULL);
    ck_assert_uint_eq(*word, 6);
    tt_kcpu_free(word);
    kc_end();
}
END_TEST

/* The stand-in itself: what it must catch, and what it must not mistake. */
START_TEST(stand_in_keeps_its_model)
{
    char *why = tt_kcpu_selftest();
    ck_assert_msg(why == NULL, "%s", why ? why : "");
}
END_TEST

/* Past 65535 blocks of 256 threads, where each thread loops again. */
#define PAST_CAP ((size_t)65535 * 256 + 7)

static const size_t counts[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 100, 257, 1023, 4097};
static const size_t more_counts[] = {65536 + 5, 300007};

/* Byte offsets of dst, a and b from a 256-byte boundary, in units of the
 * element (e) or of bytes (raw), and whether dst is a. */
typedef struct {
    unsigned d, a, b, raw, in_place;
} layout_t;
static const layout_t layouts[] = {
    {0, 0, 0, 0, 0}, /* all aligned: 16-byte vectors */
    {1, 1, 1, 0, 0}, /* one element in: a scalar head first */
    {0, 1, 2, 0, 0}, /* no common boundary: element by element */
    {1, 1, 1, 1, 0}, /* one byte in: misaligned elements */
    {3, 1, 0, 1, 0}, /* misaligned, each differently */
    {0, 0, 0, 0, 1}, /* in place */
    {5, 5, 0, 1, 1}, /* in place and misaligned */
};

static size_t off_of(unsigned o, const layout_t *l, size_t elem)
{
    return l->raw ? o : o * elem;
}

static void reduce_case(tutti_dtype_t dt, tutti_op_t op, size_t n, const layout_t *l, int order, char *dev_a,
                        char *dev_b, char *dev_d, char *host)
{
    size_t e = tutti_dtype_size(dt), bytes = n * e;
    size_t od = off_of(l->d, l, e), oa = off_of(l->a, l, e), ob = off_of(l->b, l, e);
    char *ha = host, *hb = host + bytes + 256, *want = hb + bytes + 256;
    uint64_t seed = (uint64_t)dt << 40 ^ (uint64_t)op << 32 ^ n;
    kc_fill(ha, n, dt, seed);
    kc_fill(hb, n, dt, seed + 1);
    memcpy(dev_a + oa, ha, bytes);
    memcpy(dev_b + ob, hb, bytes);
    memset(dev_d, 0xff, od + bytes);
    memcpy(want, ha, bytes);
    tt_reduce_get(dt, op == TUTTI_AVG ? TUTTI_SUM : op)(want, want, hb, n);
    kc_order(order, seed);
    char *dst = l->in_place ? dev_a + oa : dev_d + od;
    ck_assert_int_eq(tt_cuda_reduce(dst, dev_a + oa, dev_b + ob, n, dt, op, NULL), 0);
    char what[160];
    snprintf(what, sizeof what, "reduce %s %s n=%zu offsets %zu,%zu,%zu%s, %s", tutti_dtype_name(dt),
             tutti_op_name(op), n, od, oa, ob, l->in_place ? " in place" : "", kc_order_name(order));
    kc_same(dst, want, bytes, e, what);
    if (!l->in_place)
        kc_same(dev_a + oa, ha, bytes, e, "reduce left an input as it was");
}

/* Every op and count of one dtype (the loop's index). */
START_TEST(reduce_matches_the_cpu_kernels)
{
    tutti_dtype_t dt = (tutti_dtype_t)_i;
    size_t e = tutti_dtype_size(dt), most = 4097 * e + 64;
    kc_begin();
    char *a = kc_dev(most), *b = kc_dev(most), *d = kc_dev(most), *host = malloc(3 * (most + 256));
    ck_assert_ptr_nonnull(host);
    for (int op = 0; op < TUTTI_NUM_OPS; op++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++)
                for (int o = 0; o < KC_ORDERS; o++)
                    reduce_case(dt, (tutti_op_t)op, counts[c], &layouts[l], o, a, b, d, host);
    free(host);
    kc_end();
}
END_TEST

/* Large counts: a vector body of many blocks, and (bytes, element by
 * element) past the grid's cap; every dtype and order in the sweep. */
START_TEST(reduce_past_the_grid_cap)
{
    kc_begin();
    size_t big = (kc_sweep() ? PAST_CAP * 8 : PAST_CAP) + 64;
    char *a = kc_dev(big), *b = kc_dev(big), *d = kc_dev(big), *host = malloc(3 * (big + 256));
    ck_assert_ptr_nonnull(host);
    for (int t = 0; t < TUTTI_NUM_DTYPES; t++) {
        tutti_dtype_t dt = (tutti_dtype_t)t;
        for (size_t c = 0; c < sizeof more_counts / sizeof *more_counts; c++)
            if (kc_sweep() || c == (size_t)t % 2)
                reduce_case(dt, TUTTI_SUM, more_counts[c], &layouts[1], t % KC_ORDERS, a, b, d, host);
        if (!kc_sweep() && dt != TUTTI_INT8)
            continue;
        for (int o = 0; o < (kc_sweep() ? KC_ORDERS : 1); o++)
            reduce_case(dt, TUTTI_SUM, PAST_CAP, &layouts[2], o, a, b, d, host);
    }
    free(host);
    kc_end();
}
END_TEST

static const int rank_counts[] = {1, 2, 3, 7, 127, 128, 129, 255, 256, 257, 512, 1000, 65536, 2147483647};

/* avg's division by the number of ranks, as the CPU's average does it. */
START_TEST(avg_finish_matches_the_cpu)
{
    tutti_dtype_t dt = (tutti_dtype_t)_i;
    size_t e = tutti_dtype_size(dt), sizes[] = {1, 17, 1000, 4099};
    kc_begin();
    char *d = kc_dev(4099 * e + 16), *host = malloc(2 * (4099 * e + 16));
    ck_assert_ptr_nonnull(host);
    for (size_t r = 0; r < sizeof rank_counts / sizeof *rank_counts; r++)
        for (size_t c = 0; c < 4; c++)
            for (unsigned off = 0; off < 2; off++) /* aligned, then one byte in */
                for (int o = 0; o < KC_ORDERS; o++) {
                    size_t n = sizes[c], bytes = n * e;
                    char *want = host + bytes;
                    uint64_t seed = (uint64_t)r << 32 ^ n ^ (uint64_t)dt << 48;
                    kc_fill(host, n, dt, seed);
                    memcpy(d + off, host, bytes);
                    memcpy(want, host, bytes);
                    tt_reduce_avg_finish(want, n, dt, rank_counts[r]);
                    kc_order(o, seed);
                    ck_assert_int_eq(tt_cuda_avg_finish(d + off, n, dt, rank_counts[r], NULL), 0);
                    char what[128];
                    snprintf(what, sizeof what, "avg %s n=%zu over %d ranks at +%u, %s", tutti_dtype_name(dt),
                             n, rank_counts[r], off, kc_order_name(o));
                    kc_same(d + off, want, bytes, e, what);
                }
    if (dt == TUTTI_INT8) { /* past the grid's cap too */
        char *big = kc_dev(PAST_CAP), *hb = malloc(2 * PAST_CAP);
        ck_assert_ptr_nonnull(hb);
        kc_fill(hb, PAST_CAP, dt, 7);
        memcpy(big, hb, PAST_CAP);
        memcpy(hb + PAST_CAP, hb, PAST_CAP);
        tt_reduce_avg_finish(hb + PAST_CAP, PAST_CAP, dt, 3);
        ck_assert_int_eq(tt_cuda_avg_finish(big, PAST_CAP, dt, 3, NULL), 0);
        kc_same(big, hb + PAST_CAP, PAST_CAP, 1, "avg int8 past the grid's cap");
        free(hb);
    }
    free(host);
    kc_end();
}
END_TEST

/* dst = src * k, k passed by value or read from device memory, as
 * tt_reduce_scale gives it; src and dst at any offset (a pre-multiplied
 * sum scales the user's send buffer). */
START_TEST(scale_matches_the_cpu)
{
    tutti_dtype_t dt = (tutti_dtype_t)_i;
    size_t e = tutti_dtype_size(dt), most = 4097 * e + 64;
    kc_begin();
    char *src = kc_dev(most), *dst = kc_dev(most), *kdev = kc_dev(16), *host = malloc(2 * most);
    ck_assert_ptr_nonnull(host);
    for (int k = 0; k < 6; k++) {
        char scalar[8];
        kc_fill(scalar, 1, dt, 1000 + (uint64_t)k);
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++)
                for (int o = 0; o < KC_ORDERS; o++) {
                    const layout_t *lay = &layouts[l];
                    size_t n = counts[c], bytes = n * e, od = off_of(lay->d, lay, e),
                           os = off_of(lay->a, lay, e);
                    uint64_t seed = (uint64_t)dt << 40 ^ (uint64_t)k << 32 ^ n ^ l << 20;
                    char *want = host + most, *out = lay->in_place ? src + os : dst + od;
                    kc_fill(host, n, dt, seed);
                    memcpy(src + os, host, bytes);
                    tt_reduce_scale(want, host, n, dt, scalar);
                    memcpy(kdev + 1, scalar, e); /* the scalar need not be aligned either */
                    kc_order(o, seed);
                    int by_dev = (c + l) % 2;
                    ck_assert_int_eq(
                        tt_cuda_scale(out, src + os, n, dt, by_dev ? kdev + 1 : NULL, scalar, NULL), 0);
                    char what[160];
                    snprintf(what, sizeof what, "scale %s n=%zu by scalar %d (%s) offsets %zu,%zu%s, %s",
                             tutti_dtype_name(dt), n, k, by_dev ? "on the device" : "by value", od, os,
                             lay->in_place ? " in place" : "", kc_order_name(o));
                    kc_same(out, want, bytes, e, what);
                }
    }
    if (dt == TUTTI_UINT8) { /* past the grid's cap too */
        char *big = kc_dev(PAST_CAP + 1), *hb = malloc(2 * PAST_CAP);
        ck_assert_ptr_nonnull(hb);
        kc_fill(hb, PAST_CAP, dt, 9);
        memcpy(big + 1, hb, PAST_CAP);
        uint8_t three = 3;
        tt_reduce_scale(hb + PAST_CAP, hb, PAST_CAP, dt, &three);
        ck_assert_int_eq(tt_cuda_scale(big + 1, big + 1, PAST_CAP, dt, NULL, &three, NULL), 0);
        kc_same(big + 1, hb + PAST_CAP, PAST_CAP, 1, "scale uint8 past the grid's cap");
        free(hb);
    }
    free(host);
    kc_end();
}
END_TEST

#if defined(__SANITIZE_THREAD__)
#define KC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KC_TSAN 1
#endif
#endif

int main(int argc, char **argv)
{
#ifdef KC_TSAN
    /* Its threads are fibers switching stacks, which ThreadSanitizer would
     * take for threads racing on one. */
    printf("1..0 # SKIP the kernel stand-in does not run under ThreadSanitizer\n");
    return 0;
#endif
    tt_case_t cases[KC_MAX_CASES] = {
        {"stand_in", stand_in_keeps_its_model, 0, 0},
        {"gate_signal", gate_and_signal_kernels, 0, 0},
        {"reduce", reduce_matches_the_cpu_kernels, 0, TUTTI_NUM_DTYPES},
        {"reduce_past_cap", reduce_past_the_grid_cap, 0, 0},
        {"avg_finish", avg_finish_matches_the_cpu, 0, TUTTI_NUM_DTYPES},
        {"scale", scale_matches_the_cpu, 0, TUTTI_NUM_DTYPES},
    };
    size_t n = 0;
    while (cases[n].name)
        n++;
    n += kc_codec_cases(cases + n);
    n += kc_allreduce_cases(cases + n);
    return tt_run_cases("kernels-cpu", cases, n, 300, argc, argv);
}
