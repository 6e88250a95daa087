/* SPDX-License-Identifier: MIT */
/*
 * Compression: the kernels (quantizer error bounds, unbiased stochastic
 * rounding, exact and sampled top-k), and the compressed all-reduce on
 * forked ranks: error-feedback conservation, top-k against the dense
 * rank-order sum bit for bit, bytes on the wire against the formulas, the
 * sign compressor's error staying bounded where gradients are always zero,
 * fp16/bf16 and avg, and bad arguments.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "sched/schedule.h"
#include "core/half.h"
#include "tests/lib/harness.h"

static float gauss(uint64_t seed, uint64_t i)
{
    float u1 = tt_uniform01(seed, 1, i) + 1e-7f, u2 = tt_uniform01(seed, 2, i);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

START_TEST(quantizers_stay_within_half_a_step_and_sign_keeps_the_mean_magnitude)
{
    enum { N = 1000 };
    static const tutti_compress_kind_t kinds[] = {TUTTI_COMPRESS_INT8, TUTTI_COMPRESS_INT4,
                                                  TUTTI_COMPRESS_SIGN};
    float x[N], y[N], lost[N];
    unsigned char enc[N * 2 + 64];
    for (int i = 0; i < N; i++)
        x[i] = gauss(7, (uint64_t)i) * (i % 100 == 0 ? 50.0f : 1.0f);
    for (int k = 0; k < 3; k++)
        for (size_t block = 0; block <= 64; block += 64) {
            tt_quant_t q = {.kind = kinds[k], .block = block};
            size_t nb = block ? (N + block - 1) / block : 1;
            size_t codes = kinds[k] == TUTTI_COMPRESS_INT8   ? N
                           : kinds[k] == TUTTI_COMPRESS_INT4 ? N / 2
                                                             : N / 8;
            ck_assert_uint_eq(tt_quant_bytes(&q, N), nb * 4 + codes);
            memset(lost, 0, sizeof lost);
            tt_quant_encode(&q, x, lost, N, 0, enc); /* x + 0, and what was lost */
            tt_quant_decode(&q, enc, N, y, 0);
            size_t bs = block ? block : N;
            for (size_t b = 0; b < nb; b++) {
                float max = 0, sum = 0;
                size_t lo = b * bs, hi = lo + bs < N ? lo + bs : N;
                for (size_t i = lo; i < hi; i++) {
                    max = fmaxf(max, fabsf(x[i]));
                    sum += fabsf(x[i]);
                }
                for (size_t i = lo; i < hi; i++) {
                    ck_assert_float_eq(lost[i], x[i] - y[i]); /* what is lost is exactly the difference */
                    if (kinds[k] == TUTTI_COMPRESS_SIGN)
                        ck_assert_float_eq_tol(fabsf(y[i]), sum / (float)(hi - lo),
                                               1e-3f * sum / (float)(hi - lo));
                    else
                        ck_assert(fabsf(lost[i]) <=
                                  0.5001f * max / (kinds[k] == TUTTI_COMPRESS_INT8 ? 127 : 7));
                }
            }
        }
}
END_TEST

START_TEST(stochastic_rounding_is_unbiased_and_seeded)
{
    tt_quant_t q = {.kind = TUTTI_COMPRESS_INT4, .rounding = TUTTI_ROUND_STOCHASTIC, .seed = 42};
    float x[2] = {7.0f, 1.3f}, y[2], mean = 0; /* scale 1: 1.3 lies between codes 1 and 2 */
    unsigned char enc[16], again[16];
    for (int s = 0; s < 4000; s++) {
        tt_quant_encode(&q, x, NULL, 2, (uint64_t)s, enc);
        tt_quant_decode(&q, enc, 2, y, 0);
        ck_assert(y[1] == 1.0f || y[1] == 2.0f);
        mean += y[1] / 4000;
    }
    ck_assert_float_eq_tol(mean, 1.3f, 0.03f);
    tt_quant_encode(&q, x, NULL, 2, 5, enc);
    tt_quant_encode(&q, x, NULL, 2, 5, again);
    ck_assert_mem_eq(enc, again, tt_quant_bytes(&q, 2)); /* same seed and stream, same codes */
}
END_TEST

static int by_magnitude_desc(const void *a, const void *b)
{
    float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
    return (x < y) - (x > y);
}

START_TEST(topk_selects_the_largest_magnitudes)
{
    enum { N = 100000, K = 1000 };
    float *x = malloc(N * sizeof *x), *sorted = malloc(N * sizeof *sorted), *mag = malloc(N * sizeof *mag);
    uint32_t *idx = malloc(2 * K * sizeof *idx);
    for (int i = 0; i < N; i++)
        x[i] = i % 7 == 0 ? 0.0f : gauss(3, (uint64_t)i); /* many equal magnitudes too */
    memcpy(sorted, x, N * sizeof *x);
    qsort(sorted, N, sizeof *sorted, by_magnitude_desc);
    ck_assert_uint_eq(tt_topk_exact(x, N, K, idx), K);
    float smallest = INFINITY;
    for (int i = 0; i < K; i++) {
        ck_assert(i == 0 || idx[i] > idx[i - 1]);
        smallest = fminf(smallest, fabsf(x[idx[i]]));
    }
    ck_assert_float_eq(smallest, fabsf(sorted[K - 1]));
    size_t got = tt_topk_sampled(x, N, K, 9, 0, idx, mag);
    ck_assert_msg(got >= K / 2 && got <= 2 * K, "sampled top-k chose %zu of %d", got, K);
    for (size_t i = 0; i < got; i++)
        ck_assert(fabsf(x[idx[i]]) >= fabsf(sorted[3 * K])); /* all among the largest */
    /* all zeros: k ties, the lowest indices */
    memset(x, 0, N * sizeof *x);
    ck_assert_uint_eq(tt_topk_exact(x, N, 3, idx), 3);
    ck_assert_uint_eq(idx[2], 2);
    free(x);
    free(sorted);
    free(mag);
    free(idx);
}
END_TEST

/* Integer-valued gradients: every fp32 sum below is exact. */
static float int_grad(int rank, int step, size_t i)
{
    return (float)((int)(tt_uniform01((uint64_t)step, (uint64_t)rank, i) * 200.0f) - 100);
}

typedef struct {
    tutti_compress_t how;
    size_t n;
    int steps;
} conserve_t;

/* After every step, outputs so far + (sum of workers' errors)/p + server
 * errors == sum of the dense means so far. */
static int conservation(tutti_comm_t comm, int r, int p, void *arg)
{
    const conserve_t *c = arg;
    size_t n = c->n;
    float *g = malloc(n * 4), *out = malloc(n * 4), *dense = malloc(n * 4), *werr = malloc(n * 4);
    double *sum_out = calloc(n, sizeof(double)), *sum_mean = calloc(n, sizeof(double));
    float *server_all = malloc((n + (size_t)p) * 4);
    tutti_ef_state_t ef;
    int bad = tutti_ef_create(&ef, n, p) != TUTTI_SUCCESS;
    for (int s = 0; s < c->steps && !bad; s++) {
        for (size_t i = 0; i < n; i++)
            g[i] = int_grad(r, s, i);
        bad |= tutti_allreduce_compressed(g, out, n, TUTTI_FP32, TUTTI_AVG, &c->how, ef, comm, NULL) != 0;
        bad |= tutti_allreduce(g, dense, n, TUTTI_FP32, TUTTI_AVG, comm, NULL) != 0;
        for (size_t i = 0; i < n; i++) {
            sum_out[i] += out[i];
            sum_mean[i] += dense[i];
        }
        const float *we, *se;
        size_t wn, sn;
        bad |= tutti_ef_errors(ef, &we, &wn, &se, &sn) != 0;
        bad |= tutti_allreduce(we, werr, n, TUTTI_FP32, TUTTI_AVG, comm, NULL) != 0;
        /* every rank's server error, gathered in chunk order (padded to the largest chunk) */
        size_t most = tt_block_count(n, p, 0);
        float *mine = calloc(most + 1, 4);
        if (se)
            memcpy(mine, se, sn * 4);
        bad |= tutti_allgather(mine, server_all, most, TUTTI_FP32, comm, NULL) != 0;
        free(mine);
        for (size_t i = 0; i < n && !bad; i++) {
            int owner = 0;
            while (tt_block_off(n, p, owner + 1) <= i && owner + 1 < p)
                owner++;
            double server = se ? server_all[(size_t)owner * most + (i - tt_block_off(n, p, owner))] : 0;
            double lhs = sum_out[i] + werr[i] + server, rhs = sum_mean[i];
            double tol = c->how.kind == TUTTI_COMPRESS_TOPK ? 1e-9 : 1e-4 * (1 + fabs(rhs)) * (s + 1);
            if (fabs(lhs - rhs) > tol) {
                fprintf(stderr, "rank %d step %d element %zu: outputs+errors %.9g, dense %.9g\n", r, s, i,
                        lhs, rhs);
                bad = 1;
            }
        }
    }
    tutti_ef_destroy(ef);
    free(g);
    free(out);
    free(dense);
    free(werr);
    free(sum_out);
    free(sum_mean);
    free(server_all);
    return bad;
}

START_TEST(error_feedback_conserves_what_was_not_sent)
{
    conserve_t cases[] = {
        {.how = {.kind = TUTTI_COMPRESS_TOPK, .k = 40}, .n = 3001, .steps = 6},
        {.how = {.kind = TUTTI_COMPRESS_TOPK, .k = 40, .sampled = 1, .seed = 3}, .n = 3001, .steps = 4},
        {.how = {.kind = TUTTI_COMPRESS_SIGN}, .n = 3001, .steps = 6},
        {.how = {.kind = TUTTI_COMPRESS_INT8, .block = 128}, .n = 3001, .steps = 4},
        {.how = {.kind = TUTTI_COMPRESS_INT4, .rounding = TUTTI_ROUND_STOCHASTIC, .seed = 1},
         .n = 3001,
         .steps = 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tt_run_ranks(_i == 0 ? 4 : 8, conservation, &cases[i], 120);
}
END_TEST

/* Top-k equals the deterministic (rank-order) dense all-reduce of the
 * vectors each rank actually sent, bit for bit. */
static int topk_is_the_sparse_sum(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    size_t n = 50000;
    float *g = malloc(n * 4), *out = malloc(n * 4), *sparse = malloc(n * 4), *want = malloc(n * 4);
    tutti_ef_state_t ef;
    int bad = tutti_ef_create(&ef, n, p) != 0;
    tutti_compress_t how = {.kind = TUTTI_COMPRESS_TOPK, .density = 0.01};
    for (size_t i = 0; i < n; i++)
        g[i] = gauss((uint64_t)r + 100, i) * (float)(1 + i % 13);
    bad |= tutti_allreduce_compressed(g, out, n, TUTTI_FP32, TUTTI_SUM, &how, ef, comm, NULL) != 0;
    const float *we, *se;
    size_t wn, sn;
    tutti_ef_errors(ef, &we, &wn, &se, &sn);
    size_t sent = 0;
    for (size_t i = 0; i < n; i++) { /* sent where the error was cleared */
        sparse[i] = we[i] == 0 ? g[i] : 0.0f;
        sent += we[i] == 0;
    }
    tutti_compress_stats_t st;
    tutti_compress_last_stats(comm, &st);
    bad |= st.k_sent != 500 || sent != 500;
    bad |= tutti_allreduce(sparse, want, n, TUTTI_FP32, TUTTI_SUM, comm, NULL) != 0;
    bad |= memcmp(out, want, n * 4) != 0;
    if (bad)
        fprintf(stderr, "rank %d: top-k %s the rank-order sum of the sparse vectors (k sent %llu)\n", r,
                memcmp(out, want, n * 4) ? "differs from" : "matches", (unsigned long long)st.k_sent);
    tutti_ef_destroy(ef);
    free(g);
    free(out);
    free(sparse);
    free(want);
    return bad;
}

START_TEST(topk_is_bitwise_the_rank_order_sum_of_the_sparse_vectors)
{
    setenv("TUTTI_DETERMINISTIC", "1", 1); /* the dense reference adds in rank order */
    tt_run_ranks(8, topk_is_the_sparse_sum, NULL, 120);
    unsetenv("TUTTI_DETERMINISTIC");
}
END_TEST

/* 2^20 fp32 on 8 ranks: bytes against the formulas. */
static int bytes_match_the_formulas(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    size_t n = 1 << 20, chunk = n / 8;
    float *g = calloc(n, 4), *out = malloc(n * 4);
    tutti_ef_state_t ef;
    tutti_ef_create(&ef, n, p);
    struct {
        tutti_compress_t how;
        uint64_t bytes;
        double ratio;
    } cases[] = {
        {{.kind = TUTTI_COMPRESS_TOPK, .density = 0.01}, 7ull * 10486 * 8, 12.5},
        {{.kind = TUTTI_COMPRESS_SIGN}, 14ull * (4 + chunk / 8), 32},
        {{.kind = TUTTI_COMPRESS_INT8}, 14ull * (4 + chunk), 4},
        {{.kind = TUTTI_COMPRESS_INT4, .block = 256}, 14ull * (chunk / 256 * 4 + chunk / 2), 8 * 256.0 / 264},
    };
    int bad = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (size_t i = 0; i < n; i++)
            g[i] = gauss((uint64_t)(r * 10 + (int)k), i);
        tutti_compress_stats_t st;
        bad |=
            tutti_allreduce_compressed(g, out, n, TUTTI_FP32, TUTTI_SUM, &cases[k].how, ef, comm, NULL) != 0;
        bad |= tutti_compress_last_stats(comm, &st) != 0;
        double ratio = (double)st.dense_bytes_sent / (double)st.bytes_sent;
        if (st.dense_bytes_sent != 7ull * chunk * 2 * 4 || st.bytes_sent != cases[k].bytes ||
            fabs(ratio / cases[k].ratio - 1) > 0.001) {
            fprintf(stderr,
                    "rank %d case %zu: sent %llu (formula %llu), dense %llu, ratio %.4f (formula %.4f)\n", r,
                    k, (unsigned long long)st.bytes_sent, (unsigned long long)cases[k].bytes,
                    (unsigned long long)st.dense_bytes_sent, ratio, cases[k].ratio);
            bad = 1;
        }
    }
    tutti_ef_destroy(ef);
    free(g);
    free(out);
    return bad;
}

START_TEST(bytes_on_the_wire_equal_the_formulas)
{
    tt_run_ranks(8, bytes_match_the_formulas, NULL, 120);
}
END_TEST

/* Half the coordinates never get a gradient: sign's error there must stay
 * within a few scales, whatever the number of steps. */
static int sign_error_stays_bounded(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    size_t n = 4096;
    float *g = malloc(n * 4), *out = malloc(n * 4);
    tutti_ef_state_t ef;
    tutti_ef_create(&ef, n, p);
    tutti_compress_t how = {.kind = TUTTI_COMPRESS_SIGN, .block = 64};
    float worst = 0, largest_g = 0;
    int bad = 0;
    for (int s = 0; s < 300 && !bad; s++) {
        for (size_t i = 0; i < n; i++) {
            g[i] = (i / 32) % 2 ? 0.0f : gauss((uint64_t)(s * 16 + r), i);
            largest_g = fmaxf(largest_g, fabsf(g[i]));
        }
        bad |= tutti_allreduce_compressed(g, out, n, TUTTI_FP32, TUTTI_AVG, &how, ef, comm, NULL) != 0;
        const float *we, *se;
        size_t wn, sn;
        tutti_ef_errors(ef, &we, &wn, &se, &sn);
        for (size_t i = 0; i < n; i++)
            if ((i / 32) % 2)
                worst = fmaxf(worst, fabsf(we[i]));
    }
    if (worst > 4 * largest_g) {
        fprintf(stderr, "rank %d: error on always-zero coordinates reached %g (largest gradient %g)\n", r,
                worst, largest_g);
        bad = 1;
    }
    tutti_ef_destroy(ef);
    free(g);
    free(out);
    return bad;
}

START_TEST(sign_error_stays_bounded_where_gradients_are_zero)
{
    tt_run_ranks(2, sign_error_stays_bounded, NULL, 120);
}
END_TEST

/* fp16 and bf16 in and out, avg, in place; and the dense fallback. */
static int half_types_and_fallback(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    size_t n = 999;
    uint16_t *h = malloc(n * 2);
    float *want = malloc(n * 4), *g = malloc(n * 4);
    int bad = 0;
    static const tutti_dtype_t types[] = {TUTTI_FP16, TUTTI_BF16};
    for (int t = 0; t < 2; t++) {
        tutti_compress_t how = {.kind = TUTTI_COMPRESS_INT8, .no_error_feedback = 1};
        for (size_t i = 0; i < n; i++)
            g[i] = (float)(r + 1) * (float)(i % 17) / 16.0f;
        for (size_t i = 0; i < n; i++)
            h[i] = types[t] == TUTTI_FP16 ? tt_f32_to_fp16(g[i]) : tt_f32_to_bf16(g[i]);
        bad |= tutti_allreduce_compressed(h, h, n, types[t], TUTTI_AVG, &how, NULL, comm, NULL) != 0;
        for (size_t i = 0; i < n; i++) {
            float got = types[t] == TUTTI_FP16 ? tt_fp16_to_f32(h[i]) : tt_bf16_to_f32(h[i]);
            float exact = (float)(p + 1) / 2.0f * (float)(i % 17) / 16.0f;
            bad |= fabsf(got - exact) >
                   0.02f * (float)(p + 1); /* two int8 steps of the largest value, and the type */
        }
    }
    /* top-k at density 1/p would send more than dense: it runs dense, exactly */
    tutti_compress_t dense = {.kind = TUTTI_COMPRESS_TOPK, .density = 1.0 / p};
    tutti_ef_state_t ef;
    tutti_ef_create(&ef, n, p);
    bad |= tutti_allreduce_compressed(g, want, n, TUTTI_FP32, TUTTI_SUM, &dense, ef, comm, NULL) != 0;
    tutti_compress_stats_t st;
    tutti_compress_last_stats(comm, &st);
    bad |= !st.fell_back;
    for (size_t i = 0; i < n; i++)
        bad |= want[i] != (float)(p * (p + 1) / 2) * (float)(i % 17) / 16.0f;
    tutti_ef_destroy(ef);
    free(h);
    free(want);
    free(g);
    return bad;
}

START_TEST(half_types_avg_in_place_and_the_dense_fallback)
{
    tt_run_ranks(4, half_types_and_fallback, NULL, 120);
}
END_TEST

static int bad_arguments(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)r;
    (void)arg;
    float x[8] = {0}, y[8];
    int32_t ix[8] = {0};
    tutti_ef_state_t ef, other;
    tutti_ef_create(&ef, 8, p);
    tutti_ef_create(&other, 9, p);
    tutti_compress_t sign = {.kind = TUTTI_COMPRESS_SIGN};
    int bad = 0;
    bad |= tutti_allreduce_compressed(ix, ix, 8, TUTTI_INT32, TUTTI_SUM, &sign, ef, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    bad |= !strstr(tutti_comm_last_error(comm), "only fp32, fp16 and bf16");
    uint8_t x8[8] = {0}; /* fp8 is refused too: quantizing 1-byte values saves little */
    bad |= tutti_allreduce_compressed(x8, x8, 8, TUTTI_FP8_E4M3, TUTTI_SUM, &sign, ef, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    bad |= !strstr(tutti_comm_last_error(comm), "dtype: fp8e4m3; only fp32, fp16 and bf16");
    bad |= tutti_allreduce_compressed(x, y, 8, TUTTI_FP32, TUTTI_MAX, &sign, ef, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    bad |= tutti_allreduce_compressed(x, y, 8, TUTTI_FP32, TUTTI_SUM, &sign, NULL, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    bad |= !strstr(tutti_comm_last_error(comm), "error feedback is on");
    bad |= tutti_allreduce_compressed(x, y, 8, TUTTI_FP32, TUTTI_SUM, &sign, other, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    bad |= !strstr(tutti_comm_last_error(comm), "made for 9 elements");
    bad |= tutti_allreduce_compressed(x, y, 8, TUTTI_FP32, TUTTI_SUM, NULL, ef, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    tutti_compress_t odd = {.kind = (tutti_compress_kind_t)99};
    bad |= tutti_allreduce_compressed(x, y, 8, TUTTI_FP32, TUTTI_SUM, &odd, ef, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    tutti_compress_t int8 = {.kind = TUTTI_COMPRESS_INT8, .no_error_feedback = 1};
    bad |= tutti_allreduce_compressed(x, x + 1, 4, TUTTI_FP32, TUTTI_SUM, &int8, NULL, comm, NULL) !=
           TUTTI_ERR_INVALID_ARG;
    bad |= !strstr(tutti_comm_last_error(comm), "tutti_allreduce_compressed: sendbuf and recvbuf overlap");
    /* after all that, a good call still works on every rank */
    bad |= tutti_allreduce_compressed(x, y, 8, TUTTI_FP32, TUTTI_SUM, &sign, ef, comm, NULL) != TUTTI_SUCCESS;
    tutti_ef_destroy(ef);
    tutti_ef_destroy(other);
    return bad;
}

/* The GPU sign quantizer's tiles per block (codec.h, which its kernels and
 * scratch size use): never zero, which its threads divide by (a block of
 * fewer than eight elements, as n < 8 with the whole vector as one block,
 * had none), and just enough 512-group tiles to cover a block's groups. */
START_TEST(gpu_sign_tiles_cover_every_block)
{
    for (size_t bsize = 1; bsize < 40000; bsize++) {
        size_t tiles = tt_sign_tiles_per_block(bsize), groups = bsize / 8;
        ck_assert_uint_ge(tiles, 1);
        ck_assert_uint_ge(tiles * 512, groups);
        if (groups)
            ck_assert_uint_lt((tiles - 1) * 512, groups);
    }
}
END_TEST

START_TEST(bad_arguments_are_named)
{
    tt_run_ranks(2, bad_arguments, NULL, 60);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compress");
    TCase *tc = tcase_create("compress");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, quantizers_stay_within_half_a_step_and_sign_keeps_the_mean_magnitude);
    tcase_add_test(tc, stochastic_rounding_is_unbiased_and_seeded);
    tcase_add_test(tc, topk_selects_the_largest_magnitudes);
    tcase_add_loop_test(tc, error_feedback_conserves_what_was_not_sent, 0, 2);
    tcase_add_test(tc, topk_is_bitwise_the_rank_order_sum_of_the_sparse_vectors);
    tcase_add_test(tc, bytes_on_the_wire_equal_the_formulas);
    tcase_add_test(tc, sign_error_stays_bounded_where_gradients_are_zero);
    tcase_add_test(tc, half_types_avg_in_place_and_the_dense_fallback);
    tcase_add_test(tc, gpu_sign_tiles_cover_every_block);
    tcase_add_test(tc, bad_arguments_are_named);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
