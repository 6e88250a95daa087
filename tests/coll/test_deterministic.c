/* SPDX-License-Identifier: MIT */
/*
 * Deterministic mode: fp32, bf16 and fp8 all-reduces of order-sensitive inputs
 * (values whose magnitudes span a million-fold range), run with every
 * algorithm forced in turn, over shm and tcp, with two slice sizes, on 3,
 * 4 and 8 ranks, on one host and spread over simulated hosts. Every rank's
 * result must have exactly the bits of the rank-order sum
 * ((x0 + x1) + x2) + ... computed here, so all runs agree with each other.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/registry.h"
#include "core/fp8.h"
#include "core/half.h"
#include "tests/lib/harness.h"
#include "reduce/reduce.h"

#define COUNT 100003 /* not a multiple of any rank count, spans many slices */

/* An order-sensitive value for (rank, index): mantissa and exponent from a hash. */
static float term(int rank, size_t i)
{
    uint64_t h = (uint64_t)rank * 0x9E3779B97F4A7C15ull ^ (uint64_t)i * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    float mant = (float)(h & 0xffff) / 65536.0f - 0.5f;
    int exp2 = (int)((h >> 16) % 21) - 10;
    return mant * (float)(1 << (exp2 + 10)) / 1024.0f;
}

static void fill(tutti_dtype_t t, void *buf, int rank, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (t == TUTTI_FP32)
            ((float *)buf)[i] = term(rank, i);
        else if (t == TUTTI_BF16)
            ((uint16_t *)buf)[i] = tt_f32_to_bf16(term(rank, i));
        else if (t == TUTTI_FP8_E4M3)
            ((uint8_t *)buf)[i] = tt_f32_to_e4m3(term(rank, i));
        else
            ((uint8_t *)buf)[i] = tt_f32_to_e5m2(term(rank, i));
    }
}

/* The rank-order sum, or with reverse the opposite order. */
static void fold(tutti_dtype_t t, void *want, void *scratch, int p, size_t n, int reverse)
{
    tt_reduce_fn add = tt_reduce_get(t, TUTTI_SUM);
    fill(t, want, reverse ? p - 1 : 0, n);
    for (int k = 1; k < p; k++) {
        fill(t, scratch, reverse ? p - 1 - k : k, n);
        add(want, want, scratch, n);
    }
}

static int same_bits_as_rank_order(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    static const tutti_dtype_t types[] = {TUTTI_FP32, TUTTI_BF16, TUTTI_FP8_E4M3, TUTTI_FP8_E5M2};
    char *in = malloc(COUNT * 4), *out = malloc(COUNT * 4), *want = malloc(COUNT * 4),
         *scratch = malloc(COUNT * 4);
    int bad = 0;
    for (int k = 0; k < 4 && !bad; k++) {
        tutti_dtype_t t = types[k];
        size_t bytes = COUNT * tutti_dtype_size(t);
        fill(t, in, r, COUNT);
        fold(t, want, scratch, p, COUNT, 0);
        if (tutti_allreduce(in, out, COUNT, t, TUTTI_SUM, comm, NULL) != TUTTI_SUCCESS ||
            memcmp(out, want, bytes) != 0) {
            fprintf(stderr, "rank %d: %s all-reduce differs from the rank-order sum\n", r,
                    tutti_dtype_name(t));
            bad = 1;
        }
        /* In place too: the input is overwritten as the result comes in. */
        memcpy(out, in, bytes);
        if (!bad && (tutti_allreduce(out, out, COUNT, t, TUTTI_SUM, comm, NULL) != TUTTI_SUCCESS ||
                     memcmp(out, want, bytes) != 0)) {
            fprintf(stderr, "rank %d: in-place %s all-reduce differs\n", r, tutti_dtype_name(t));
            bad = 1;
        }
    }
    free(in);
    free(out);
    free(want);
    free(scratch);
    return bad;
}

/* The test means something only if the order changes the bits. */
START_TEST(the_inputs_are_order_sensitive)
{
    char *a = malloc(COUNT * 4), *b = malloc(COUNT * 4), *scratch = malloc(COUNT * 4);
    static const tutti_dtype_t types[] = {TUTTI_FP32, TUTTI_FP8_E4M3, TUTTI_FP8_E5M2};
    for (int k = 0; k < 3; k++)
        for (int p = 3; p <= 8; p++) {
            fold(types[k], a, scratch, p, COUNT, 0);
            fold(types[k], b, scratch, p, COUNT, 1);
            ck_assert_msg(memcmp(a, b, COUNT * tutti_dtype_size(types[k])) != 0,
                          "%s p=%d: order makes no difference", tutti_dtype_name(types[k]), p);
        }
    free(a);
    free(b);
    free(scratch);
}
END_TEST

static const int sizes[] = {3, 4, 8};

/* _i picks the rank count: every algorithm that serves all-reduce (and
 * tutti's own choice), both transports, two slice sizes, one host and
 * (for even counts) hosts of two ranks. */
START_TEST(every_algorithm_transport_slice_and_layout_gives_the_same_bits)
{
    static const char *const transports[] = {"shm,tcp", "tcp"}, *const slices[] = {"4K", "64K"};
    int p = sizes[_i];
    setenv("TUTTI_DETERMINISTIC", "1", 1);
    for (int a = 0; a <= tt_num_algorithms; a++) {
        if (a < tt_num_algorithms && !tt_algorithms[a]->build[TT_COLL_ALLREDUCE])
            continue;
        if (a < tt_num_algorithms)
            setenv("TUTTI_ALGO", tt_algorithms[a]->name, 1);
        else
            unsetenv("TUTTI_ALGO");
        for (int t = 0; t < 2; t++)
            for (int sl = 0; sl < 2; sl++)
                for (int per_node = 0; per_node <= (p % 2 == 0 ? 2 : 0); per_node += 2) {
                    setenv("TUTTI_TRANSPORTS", transports[t], 1);
                    setenv("TUTTI_SLICE_BYTES", slices[sl], 1);
                    tt_set_ranks_per_node(per_node);
                    tt_run_ranks(p, same_bits_as_rank_order, NULL, 240);
                }
    }
    tt_set_ranks_per_node(0);
    unsetenv("TUTTI_ALGO");
    unsetenv("TUTTI_SLICE_BYTES");
    unsetenv("TUTTI_DETERMINISTIC");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("deterministic");
    TCase *tc = tcase_create("deterministic");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, the_inputs_are_order_sensitive);
    tcase_add_loop_test(tc, every_algorithm_transport_slice_and_layout_gives_the_same_bits, 0, 3);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
