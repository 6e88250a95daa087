/* SPDX-License-Identifier: MIT */
/*
 * The compression kernels (src/cuda/compress.cu, compress_coll.cu) on the
 * kernel stand-in against the CPU codec (src/codec), bit for bit, in every
 * order: the quantizers' encoding, error and decoding for every kind,
 * block size and rounding, in the shapes the compressed all-reduce uses
 * (chunks at any element offset, encodings 16 bytes apart); exact and
 * sampled top-k with ties; the fp16/bf16 conversions of every bit pattern;
 * the top-k pairs and the average; past the grid's cap. Part of
 * test-kernels-cpu.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/half.h"
#include "cuda/kernels.h"
#include "tests/cuda/kernels_cpu.h"

/* (count, block) pairs: one scale for all, and blocks that end inside a
 * code byte, a tile, a chunk. */
static const size_t shapes[][2] = {
    {1, 0},   {2, 0},   {7, 0},     {8, 0},      {9, 0},       {100, 0},      {4097, 0},  {20001, 0},  {9, 1},
    {100, 7}, {100, 8}, {257, 256}, {4097, 256}, {8200, 4096}, {20001, 5000}, {70001, 0}, {4099, 4097}};

static const tutti_compress_kind_t kinds[] = {TUTTI_COMPRESS_INT8, TUTTI_COMPRESS_INT4, TUTTI_COMPRESS_SIGN};

/* One encoding and its decoding, on both, from g (at element offset off
 * of a device buffer) and e (NULL: none). */
static void quant_case(const tt_quant_t *q, const float *hg, const float *he, size_t n, size_t off,
                       uint64_t stream, int order, const char *values)
{
    size_t bytes = tt_quant_bytes(q, n), f = n * sizeof(float);
    float *g = kc_dev(f + off * 4), *e = he ? kc_dev(f) : NULL, *out = kc_dev(f + 64);
    unsigned char *enc = kc_dev(bytes), *want = malloc(bytes + 1);
    float *scratch = kc_dev(tt_cuda_quant_scratch(q, n) + 4), *we = malloc(f + 1), *wo = malloc(f + 1);
    ck_assert(want && we && wo);
    memcpy(g + off, hg, f);
    if (he) {
        memcpy(e, he, f);
        memcpy(we, he, f);
    }
    tt_quant_encode(q, hg, he ? we : NULL, n, stream, want);
    kc_order(order, stream + n);
    char what[200];
    snprintf(what, sizeof what,
             "%s block %zu %s%s n=%zu at +%zu, %s values, %s: ", tutti_compress_kind_name(q->kind), q->block,
             tutti_rounding_name(q->rounding), he ? " with error" : "", n, off, values, kc_order_name(order));
    size_t at = strlen(what);
    ck_assert_int_eq(tt_cuda_quant_encode(q, g + off, e, n, stream, enc, scratch, NULL), 0);
    snprintf(what + at, sizeof what - at, "the encoding");
    kc_same(enc, want, bytes, 1, what);
    if (he) {
        snprintf(what + at, sizeof what - at, "the error");
        kc_same(e, we, f, 4, what);
    }
    for (int add = 0; add < 2; add++) { /* decoded into, then added to, the output */
        tt_quant_decode(q, want, n, wo, add);
        ck_assert_int_eq(tt_cuda_quant_decode(q, enc, n, out + 1, add, NULL), 0);
        snprintf(what + at, sizeof what - at, add ? "the decoding added" : "the decoding");
        kc_same(out + 1, wo, f, 4, what);
    }
    free(want);
    free(we);
    free(wo);
    kc_free_all();
}

/* One kind (the loop's index) in every shape, rounding, with and without
 * an error, at a chunk's offset. */
START_TEST(quantizers_match_the_cpu_codec)
{
    kc_begin();
    tutti_compress_kind_t kind = kinds[_i];
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        size_t n = shapes[s][0];
        float *g = malloc(n * 4), *e = malloc(n * 4);
        ck_assert(g && e);
        kc_fill_f32(g, n, -20, 20, n);
        kc_fill_f32(e, n, -30, 18, n + 1);
        for (int r = 0; r < 2; r++)
            for (int with_e = 0; with_e < 2; with_e++) {
                tt_quant_t q = {
                    .kind = kind, .block = shapes[s][1], .rounding = (tutti_rounding_t)r, .seed = 17};
                int order = (int)((s + (size_t)r * 2 + (size_t)with_e) % KC_ORDERS);
                for (int o = 0; o < KC_ORDERS; o++)
                    if (o == order || kc_sweep() || n < 5000)
                        quant_case(&q, g, with_e ? e : NULL, n, s % 5, 1000 + s, o, "random");
            }
        free(g);
        free(e);
    }
    kc_end();
}
END_TEST

/* Gradients and errors with every special value, and magnitudes up to
 * FLT_MAX whose sums overflow; for finite ones the CPU codec stays finite. */
START_TEST(quantizers_match_on_special_values)
{
    kc_begin();
    enum { N = 4111 };
    float *g = malloc(N * 4), *e = malloc(N * 4), *big = malloc(N * 4), *tiny = malloc(N * 4);
    ck_assert(g && e && big && tiny);
    kc_fill(g, N, TUTTI_FP32, 5);
    kc_fill(e, N, TUTTI_FP32, 6);
    kc_fill_f32(big, N, 120, 127, 7);
    kc_fill_f32(tiny, N, -149 + 24, -125, 8); /* normal and subnormal magnitudes, near FLT_MIN */
    for (size_t i = 0; i < N; i += 3)
        tiny[i] *= 0x1p-24f;
    const struct {
        const float *g, *e;
        const char *name;
    } sets[] = {{g, NULL, "special"},         {g, e, "special"},
                {big, NULL, "near FLT_MAX"},  {big, big, "near FLT_MAX"},
                {tiny, NULL, "near FLT_MIN"}, {tiny, tiny, "near FLT_MIN"}};
    for (size_t k = 0; k < 3; k++)
        for (size_t s = 0; s < sizeof sets / sizeof *sets; s++)
            for (size_t block = 0; block <= 256; block += 256)
                for (int r = 0; r < 2; r++) {
                    tt_quant_t q = {
                        .kind = kinds[k], .block = block, .rounding = (tutti_rounding_t)r, .seed = 3};
                    quant_case(&q, sets[s].g, sets[s].e, N, 1, 77, (int)(k + s) % KC_ORDERS, sets[s].name);
                }
    free(g);
    free(e);
    free(big);
    free(tiny);
    kc_end();
}
END_TEST

/* Finite gradients near FLT_MAX or FLT_MIN give finite scales, codes and
 * errors (nothing overflows inside the codec), on the CPU. */
START_TEST(quantizers_stay_finite_on_finite_extremes)
{
    enum { N = 1000 };
    float g[N], e[N], out[N];
    unsigned char enc[N * 4 + 64];
    for (int set = 0; set < 4; set++) {
        for (size_t i = 0; i < N; i++) /* all at or near the largest finite value, or tiny */
            g[i] = set == 0   ? FLT_MAX
                   : set == 1 ? (i % 2 ? -FLT_MAX : nextafterf(FLT_MAX, 0))
                   : set == 2 ? FLT_MIN * (float)(i % 7) / 8
                              : 0x1p-149f * (float)(i % 5);
        for (size_t k = 0; k < 3; k++)
            for (size_t block = 0; block <= 64; block += 64) {
                tt_quant_t q = {.kind = kinds[k], .block = block};
                memset(e, 0, sizeof e);
                tt_quant_encode(&q, g, e, N, 0, enc);
                tt_quant_decode(&q, enc, N, out, 0);
                for (size_t i = 0; i < N; i++)
                    ck_assert_msg(isfinite(out[i]) && isfinite(e[i]),
                                  "%s block %zu, values set %d: element %zu decodes to %g with error %g",
                                  tutti_compress_kind_name(kinds[k]), block, set, i, (double)out[i],
                                  (double)e[i]);
            }
    }
}
END_TEST

/* Magnitudes with many ties (a few levels, both signs, both zeros) or all
 * distinct; NaNs and infinities too for the exact selection. */
static void topk_values(float *x, size_t n, int kind, uint64_t seed)
{
    if (kind == 2) {
        kc_fill(x, n, TUTTI_FP32, seed);
        return;
    }
    kc_fill_f32(x, n, -10, 10, seed);
    for (size_t i = 0; kind == 1 && i < n; i++)
        x[i] = (float)(kc_mix(seed, i) % 5) * (kc_mix(seed + 1, i) % 2 ? -1.0f : 1.0f);
}

START_TEST(exact_topk_matches_the_cpu)
{
    kc_begin();
    static const size_t ns[] = {2, 3, 17, 1000, 4096, 4097, 10007, 70001};
    for (size_t s = 0; s < sizeof ns / sizeof *ns; s++) {
        size_t n = ns[s], ks[] = {1, 2, n / 100 + 1, n / 2, n - 1};
        float *hx = malloc(n * 4), *x = kc_dev(n * 4);
        uint32_t *want = malloc(n * 4), *idx = kc_dev(n * 4);
        void *scratch = kc_dev(tt_cuda_topk_scratch(n));
        ck_assert(hx && want);
        for (int values = 0; values < 3; values++) {
            topk_values(hx, n, values, n + (uint64_t)values);
            memcpy(x, hx, n * 4);
            for (size_t k = 0; k < 5; k++) {
                if (ks[k] >= n)
                    continue;
                int o = (int)(s + k + (size_t)values) % KC_ORDERS;
                size_t got = tt_topk_exact(hx, n, ks[k], want);
                ck_assert_uint_eq(got, ks[k]);
                kc_order(o, n);
                ck_assert_int_eq(tt_cuda_topk_exact(x, n, ks[k], idx, scratch, NULL), 0);
                char what[120];
                snprintf(what, sizeof what, "top-%zu of %zu (values %d), %s", ks[k], n, values,
                         kc_order_name(o));
                kc_same(idx, want, got * 4, 4, what);
            }
        }
        free(hx);
        free(want);
        kc_free_all();
    }
    kc_end();
}
END_TEST

START_TEST(sampled_topk_matches_the_cpu)
{
    kc_begin();
    static const size_t ns[] = {500, 2000, 5003, 70001, 250000};
    for (size_t s = 0; s < sizeof ns / sizeof *ns; s++) {
        size_t n = ns[s], ks[] = {1, n / 100 + 1, n / 10};
        float *hx = malloc(n * 4), *x = kc_dev(n * 4), *mag = malloc(n * 4);
        uint32_t *want = malloc(n * 8), *idx = kc_dev(n * 8);
        ck_assert(hx && want && mag);
        for (int values = 0; values < 2; values++) {
            topk_values(hx, n, values, n + 7 + (uint64_t)values);
            memcpy(x, hx, n * 4);
            for (size_t k = 0; k < 3; k++) {
                void *scratch = kc_dev(tt_cuda_topk_sampled_scratch(n, ks[k]));
                int o = (int)(s + k + (size_t)values) % KC_ORDERS;
                size_t got = tt_topk_sampled(hx, n, ks[k], 11, 5 + s, want, mag), kept = 0;
                kc_order(o, n);
                ck_assert_int_eq(tt_cuda_topk_sampled(x, n, ks[k], 11, 5 + s, idx, &kept, scratch, NULL), 0);
                char what[120];
                snprintf(what, sizeof what, "sampled top-%zu of %zu (values %d), %s", ks[k], n, values,
                         kc_order_name(o));
                ck_assert_msg(kept == got, "%s: %zu picked, %zu on the CPU", what, kept, got);
                kc_same(idx, want, got * 4, 4, what);
            }
        }
        free(hx);
        free(mag);
        free(want);
        kc_free_all();
    }
    kc_end();
}
END_TEST

/* fp16 and bf16 to fp32 for every bit pattern, and fp32 back for specials
 * and random bits: half.h's conversions, as the CPU path uses them. */
START_TEST(conversions_match_half_h)
{
    kc_begin();
    enum { N = 65536 };
    uint16_t *h = kc_dev(N * 2), *back = kc_dev(N * 2), *want16 = malloc(N * 2);
    float *f = kc_dev(N * 4), *want = malloc(N * 4);
    ck_assert(want && want16);
    for (int bf = 0; bf < 2; bf++) {
        tutti_dtype_t dt = bf ? TUTTI_BF16 : TUTTI_FP16;
        for (uint32_t i = 0; i < N; i++) {
            h[i] = (uint16_t)i;
            want[i] = bf ? tt_bf16_to_f32((uint16_t)i) : tt_fp16_to_f32((uint16_t)i);
        }
        kc_order(bf + 1, 3);
        ck_assert_int_eq(tt_cuda_to_f32(h, dt, N, f, NULL), 0);
        kc_same(f, want, N * 4, 4, bf ? "bf16 to fp32" : "fp16 to fp32");
        kc_fill(f, N, TUTTI_FP32, 4);
        for (int i = 0; i < N; i += 2)
            memcpy(f + i, &(uint32_t){(uint32_t)kc_mix(9, (uint64_t)i)}, 4);
        for (uint32_t i = 0; i < N; i++)
            want16[i] = bf ? tt_f32_to_bf16(f[i]) : tt_f32_to_fp16(f[i]);
        ck_assert_int_eq(tt_cuda_from_f32(f, dt, N, back, NULL), 0);
        kc_same(back, want16, N * 2, 2, bf ? "fp32 to bf16" : "fp32 to fp16");
    }
    ck_assert_int_eq(tt_cuda_to_f32(h, TUTTI_FP32, 1, f, NULL), 1); /* cudaErrorInvalidValue */
    free(want);
    free(want16);
    kc_end();
}
END_TEST

/* The top-k pairs as the CPU path makes and sums them (compress/
 * allreduce.c): padding past kept, the error cleared where sent, ranks'
 * pairs placed then added in order, the average one division, NaNs
 * canonical. */
START_TEST(pairs_and_average_match_the_cpu_path)
{
    kc_begin();
    enum { N = 5000, K = 300, P = 3 };
    float *x = kc_dev(N * 4), *e = kc_dev(N * 4), *out = kc_dev(N * 4), hx[N], he[N], want[N];
    uint32_t *idx = kc_dev(K * 4);
    tt_pair_t *pairs = kc_dev(P * K * sizeof *pairs), hp[P * K];
    kc_fill(hx, N, TUTTI_FP32, 1);
    memcpy(x, hx, sizeof hx);
    for (int o = 0; o < KC_ORDERS; o++) {
        kc_order(o, 8);
        for (int r = 0; r < P; r++) {
            size_t kept = K - 10 * (size_t)r;
            uint32_t hidx[K];
            for (size_t i = 0; i < kept; i++) /* ascending, distinct, as top-k gives them */
                hidx[i] = (uint32_t)(i * (N / K) + (size_t)r);
            memcpy(idx, hidx, sizeof hidx);
            memcpy(e, hx, sizeof hx);
            memcpy(he, hx, sizeof hx);
            ck_assert_int_eq(tt_cuda_pairs_pack(x, idx, kept, K, pairs + r * K, e, NULL), 0);
            for (size_t i = 0; i < K; i++) {
                hp[r * K + i] = i < kept ? (tt_pair_t){hidx[i], hx[hidx[i]]} : (tt_pair_t){UINT32_MAX, 0};
                if (i < kept)
                    he[hidx[i]] = 0;
            }
            kc_same(pairs + r * K, hp + r * K, K * sizeof *hp, sizeof *hp, "the packed pairs");
            kc_same(e, he, sizeof he, 4, "the error after packing");
        }
        memset(want, 0, sizeof want);
        memset(out, 0, sizeof want);
        for (int r = 0; r < P; r++) {
            for (size_t i = 0; i < K; i++)
                if (hp[r * K + i].index < N)
                    want[hp[r * K + i].index] =
                        r == 0 ? hp[r * K + i].value
                               : tt_codec_canon(want[hp[r * K + i].index] + hp[r * K + i].value);
            ck_assert_int_eq(tt_cuda_pairs_add(pairs + r * K, K, N, out, r == 0, NULL), 0);
        }
        kc_same(out, want, sizeof want, 4, "the pairs' sum");
        for (size_t i = 0; i < N; i++)
            want[i] = tt_codec_canon(want[i] / (float)P);
        ck_assert_int_eq(tt_cuda_divide(out, N, (float)P, NULL), 0);
        kc_same(out, want, sizeof want, 4, "the average");
    }
    kc_end();
}
END_TEST

/* Past 65535 blocks of 256 threads, where each thread loops again: the
 * conversions and the average; the quantizers and top-k too in the
 * sweep. */
START_TEST(codec_past_the_grid_cap)
{
    kc_begin();
    size_t n = (size_t)65535 * 256 + 7;
    uint16_t *h = kc_dev(n * 2);
    float *f = kc_dev(n * 4), *want = malloc(n * 4);
    ck_assert_ptr_nonnull(want);
    kc_fill(h, n, TUTTI_FP16, 1);
    for (size_t i = 0; i < n; i++)
        want[i] = tt_fp16_to_f32(h[i]);
    ck_assert_int_eq(tt_cuda_to_f32(h, TUTTI_FP16, n, f, NULL), 0);
    kc_same(f, want, n * 4, 4, "fp16 to fp32 past the grid's cap");
    kc_fill_f32(want, n, -20, 20, 2);
    memcpy(f, want, n * 4);
    for (size_t i = 0; i < n; i++)
        want[i] = tt_codec_canon(want[i] / 3.0f);
    ck_assert_int_eq(tt_cuda_divide(f, n, 3.0f, NULL), 0);
    kc_same(f, want, n * 4, 4, "the average past the grid's cap");
    if (kc_sweep()) {
        uint32_t *idx = kc_dev(n / 1000 * 4), *widx = malloc(n / 1000 * 4);
        ck_assert_ptr_nonnull(widx);
        ck_assert_uint_eq(tt_topk_exact(want, n, n / 1000, widx), n / 1000);
        ck_assert_int_eq(tt_cuda_topk_exact(f, n, n / 1000, idx, kc_dev(tt_cuda_topk_scratch(n)), NULL), 0);
        kc_same(idx, widx, n / 1000 * 4, 4, "top-k past the grid's cap");
        free(widx);
        for (size_t k = 0; k < 3; k++) {
            tt_quant_t q = {.kind = kinds[k], .block = k == 1 ? 4096 : 0};
            quant_case(&q, want, NULL, n, 0, 5, (int)k, "past the grid's cap");
        }
    }
    free(want);
    kc_end();
}
END_TEST

size_t kc_codec_cases(tt_case_t *cases)
{
    const tt_case_t mine[] = {
        {"quantizers", quantizers_match_the_cpu_codec, 0, 3},
        {"quantizer_specials", quantizers_match_on_special_values, 0, 0},
        {"quantizer_extremes", quantizers_stay_finite_on_finite_extremes, 0, 0},
        {"topk_exact", exact_topk_matches_the_cpu, 0, 0},
        {"topk_sampled", sampled_topk_matches_the_cpu, 0, 0},
        {"conversions", conversions_match_half_h, 0, 0},
        {"pairs", pairs_and_average_match_the_cpu_path, 0, 0},
        {"codec_past_cap", codec_past_the_grid_cap, 0, 0},
    };
    memcpy(cases, mine, sizeof mine);
    return sizeof mine / sizeof *mine;
}
