/* SPDX-License-Identifier: MIT */
/*
 * test-device's kernel cases (src/cuda on a GPU): the reduction kernels
 * (and the avg division) against the CPU's portable ones, bit for bit, for
 * every dtype and op, several sizes and misalignments (shared by the three
 * buffers, different, and not even element-aligned), with NaN (any
 * payload: both give the canonical NaN), Inf and subnormals in the inputs
 * (every pair of fp8 patterns), and one reduction of more than 2^31
 * elements; a launch reporting its own error only; the quantizers and the
 * top-k selections (exact and sampled) of the compressed all-reduce against
 * their CPU code, bit for bit.
 */
#include <check.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "cuda/kernels.h"
#include "reduce/reduce.h"
#include "tests/device/device_kernels.h"
#include "tests/lib/harness.h"

/* Bytes that cover every value class: random bits, with NaN, Inf, zero
 * and subnormal patterns sprinkled in for the float types. */
static void fill_bytes(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
}

/* Offsets in bytes of (dst and a, b) from a 256-byte boundary: aligned;
 * one element off for all three (vectorised after a scalar head); a and b
 * apart (element by element); 2 bytes off, which only 1- and 2-byte
 * elements are aligned to (byte-wise otherwise). */
static const size_t skews[][2] = {{0, 0}, {1, 1}, {1, 3}, {2, 2}};

START_TEST(cuda_kernels_match_the_cpu_bit_for_bit)
{
    static const size_t counts[] = {1, 7, 8, 100, 4099, 1 << 20};
    for (int t = 0; t < TUTTI_NUM_DTYPES; t++)
        for (int op = 0; op < TUTTI_NUM_OPS; op++) {
            if (op == TUTTI_AVG)
                continue;
            size_t elem = tutti_dtype_size((tutti_dtype_t)t);
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                for (size_t k = 0; k < sizeof skews / sizeof skews[0]; k++) {
                    size_t n = counts[ci], bytes = (n + 8) * elem + 16;
                    size_t sa = k == 3 ? 2 : skews[k][0] * elem, sb = k == 3 ? 2 : skews[k][1] * elem;
                    unsigned char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
                                  *got = malloc(bytes);
                    fill_bytes(a, bytes, (unsigned)(t * 31 + op * 7 + (int)ci));
                    fill_bytes(b, bytes, (unsigned)(t * 17 + op * 5 + (int)ci + 1000));
                    if (t == TUTTI_FP8_E4M3 || t == TUTTI_FP8_E5M2) /* every pair of patterns */
                        for (size_t i = 0; i < bytes; i++) {
                            a[i] = (unsigned char)i;
                            b[i] = (unsigned char)(i >> 8);
                        }
                    /* The portable kernels: the ones every machine's suite checks the
                     * others against (test-reduce), not whichever this CPU picks. */
                    tt_reduce_get_isa(TT_ISA_PORTABLE, (tutti_dtype_t)t, (tutti_op_t)op)(want, a + sa, b + sb,
                                                                                         n);
                    void *da, *db;
                    ck_assert_int_eq(cudaMalloc(&da, bytes), cudaSuccess);
                    ck_assert_int_eq(cudaMalloc(&db, bytes), cudaSuccess);
                    cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
                    cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice);
                    char *x = (char *)da + sa, *y = (char *)db + sb;
                    ck_assert_int_eq(tt_cuda_reduce(x, x, y, n, (tutti_dtype_t)t, (tutti_op_t)op, NULL), 0);
                    ck_assert_int_eq(cudaMemcpy(got, x, n * elem, cudaMemcpyDeviceToHost), cudaSuccess);
                    ck_assert_msg(memcmp(want, got, n * elem) == 0, "%s %s n=%zu skew %zu/%zu differs",
                                  tutti_dtype_name((tutti_dtype_t)t), tutti_op_name((tutti_op_t)op), n, sa,
                                  sb);
                    cudaFree(da);
                    cudaFree(db);
                    free(a);
                    free(b);
                    free(want);
                    free(got);
                }
        }
}
END_TEST

/* fp8's avg division on the GPU against the CPU's, every pattern, for
 * several rank counts. (NaN comes out as 0x7f on both, so the bits compare.) */
START_TEST(cuda_fp8_avg_division_matches_the_cpu_bit_for_bit)
{
    static const tutti_dtype_t types[] = {TUTTI_FP8_E4M3, TUTTI_FP8_E5M2};
    for (int t = 0; t < 2; t++)
        for (int nranks = 1; nranks <= 10; nranks += 3) {
            unsigned char want[256], got[256];
            void *d;
            for (int i = 0; i < 256; i++)
                want[i] = (unsigned char)i;
            ck_assert_int_eq(cudaMalloc(&d, 256), cudaSuccess);
            cudaMemcpy(d, want, 256, cudaMemcpyHostToDevice);
            tt_reduce_avg_finish(want, 256, types[t], nranks);
            ck_assert_int_eq(tt_cuda_avg_finish(d, 256, types[t], nranks, NULL), 0);
            ck_assert_int_eq(cudaMemcpy(got, d, 256, cudaMemcpyDeviceToHost), cudaSuccess);
            ck_assert_msg(memcmp(want, got, 256) == 0, "%s avg over %d ranks differs",
                          tutti_dtype_name(types[t]), nranks);
            cudaFree(d);
        }
}
END_TEST

/* A launch reports its own error only: an older, unrelated failure still
 * pending on the thread (a bad device number here) is not "a reduction
 * failed", and stays for its owner to read. */
START_TEST(a_launch_reports_its_own_error_only)
{
    float *d;
    ck_assert_int_eq(cudaMalloc((void **)&d, 64 * sizeof *d), cudaSuccess);
    ck_assert_int_ne(cudaSetDevice(1 << 20), cudaSuccess); /* fails, and stays pending */
    ck_assert_int_eq(tt_cuda_reduce(d, d, d + 32, 32, TUTTI_FP32, TUTTI_SUM, NULL), 0);
    ck_assert_int_eq(tt_cuda_avg_finish(d, 32, TUTTI_FP32, 2, NULL), 0);
    ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidDevice);
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(d);
}
END_TEST

/* avg's division on the GPU against the CPU's, NaN rule included. */
START_TEST(cuda_avg_division_matches_the_cpu)
{
    for (int t = 0; t < TUTTI_NUM_DTYPES; t++) {
        size_t n = 4099, elem = tutti_dtype_size((tutti_dtype_t)t), bytes = n * elem;
        unsigned char *want = malloc(bytes), *got = malloc(bytes);
        fill_bytes(want, bytes, (unsigned)t + 77);
        void *d;
        ck_assert_int_eq(cudaMalloc(&d, bytes), cudaSuccess);
        cudaMemcpy(d, want, bytes, cudaMemcpyHostToDevice);
        tt_reduce_avg_finish(want, n, (tutti_dtype_t)t, 3);
        ck_assert_int_eq(tt_cuda_avg_finish(d, n, (tutti_dtype_t)t, 3, NULL), 0);
        ck_assert_int_eq(cudaMemcpy(got, d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        ck_assert_msg(memcmp(want, got, bytes) == 0, "%s avg differs", tutti_dtype_name((tutti_dtype_t)t));
        cudaFree(d);
        free(want);
        free(got);
    }
}
END_TEST

/* More than 2^31 int8 elements in one launch: sizes and indices are 64-bit. */
START_TEST(a_reduction_of_more_than_2_31_elements)
{
    size_t n = ((size_t)1 << 31) + 4099;
    char *da, *db;
    ck_assert_int_eq(cudaMalloc((void **)&da, n), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&db, n), cudaSuccess);
    ck_assert_int_eq(cudaMemset(da, 3, n), cudaSuccess);
    ck_assert_int_eq(cudaMemset(db, 4, n), cudaSuccess);
    ck_assert_int_eq(tt_cuda_reduce(da + 1, da + 1, db + 1, n - 1, TUTTI_INT8, TUTTI_SUM, NULL), 0);
    static const size_t at[] = {
        0, 1, 2, 15, 16, ((size_t)1 << 31) - 1, (size_t)1 << 31, ((size_t)1 << 31) + 4098};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        char v;
        ck_assert_int_eq(cudaMemcpy(&v, da + at[i], 1, cudaMemcpyDeviceToHost), cudaSuccess);
        ck_assert_msg(v == (at[i] ? 7 : 3), "element %zu is %d", at[i], v);
    }
    cudaFree(da);
    cudaFree(db);
}
END_TEST

START_TEST(cuda_quantizers_match_the_cpu_bit_for_bit)
{
    static const tutti_compress_kind_t kinds[] = {TUTTI_COMPRESS_INT8, TUTTI_COMPRESS_INT4,
                                                  TUTTI_COMPRESS_SIGN};
    static const size_t counts[] = {1, 13, 4096, 100003, 1 << 20}, blocks[] = {0, 100, 256};
    for (int k = 0; k < 3; k++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
            for (size_t bi = 0; bi < 3; bi++)
                for (int stochastic = 0; stochastic < 2; stochastic++) {
                    size_t n = counts[ci];
                    tt_quant_t q = {.kind = kinds[k],
                                    .block = blocks[bi],
                                    .seed = 9,
                                    .rounding = stochastic ? TUTTI_ROUND_STOCHASTIC : TUTTI_ROUND_NEAREST};
                    size_t bytes = tt_quant_bytes(&q, n);
                    float *g = malloc(n * 4), *e = malloc(n * 4), *e2 = malloc(n * 4), *y = malloc(n * 4),
                          *y2 = malloc(n * 4);
                    unsigned char *enc = malloc(bytes), *enc2 = malloc(bytes);
                    for (size_t i = 0; i < n; i++) {
                        g[i] = (tt_uniform01(1, 1, i) - 0.5f) * (i % 97 == 0 ? 100.0f : 1.0f);
                        e[i] = (tt_uniform01(1, 2, i) - 0.5f) * 0.1f;
                    }
                    float *dg, *de, *dy, *scratch;
                    unsigned char *denc;
                    cudaMalloc((void **)&dg, n * 4);
                    cudaMalloc((void **)&de, n * 4);
                    cudaMalloc((void **)&dy, n * 4);
                    cudaMalloc((void **)&denc, bytes);
                    cudaMalloc((void **)&scratch, tt_cuda_quant_scratch(&q, n) + 4);
                    cudaMemcpy(dg, g, n * 4, cudaMemcpyHostToDevice);
                    cudaMemcpy(de, e, n * 4, cudaMemcpyHostToDevice);
                    tt_quant_encode(&q, g, e, n, 5, enc);
                    tt_quant_decode(&q, enc, n, y, 0);
                    ck_assert_int_eq(tt_cuda_quant_encode(&q, dg, de, n, 5, denc, scratch, NULL), 0);
                    ck_assert_int_eq(tt_cuda_quant_decode(&q, denc, n, dy, 0, NULL), 0);
                    cudaMemcpy(enc2, denc, bytes, cudaMemcpyDeviceToHost);
                    cudaMemcpy(e2, de, n * 4, cudaMemcpyDeviceToHost);
                    cudaMemcpy(y2, dy, n * 4, cudaMemcpyDeviceToHost);
                    ck_assert_msg(memcmp(enc, enc2, bytes) == 0 && memcmp(e, e2, n * 4) == 0 &&
                                      memcmp(y, y2, n * 4) == 0,
                                  "kind %d n=%zu block=%zu stochastic=%d: the GPU differs", k, n, blocks[bi],
                                  stochastic);
                    cudaFree(dg);
                    cudaFree(de);
                    cudaFree(dy);
                    cudaFree(denc);
                    cudaFree(scratch);
                    free(g);
                    free(e);
                    free(e2);
                    free(y);
                    free(y2);
                    free(enc);
                    free(enc2);
                }
}
END_TEST

START_TEST(cuda_topk_selects_what_the_cpu_selects)
{
    static const size_t counts[] = {100, 4097, 100003, 1 << 22};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int zeros = 0; zeros < 2; zeros++) { /* many equal magnitudes too */
            size_t n = counts[ci], k = n / 100 + 1;
            float *x = malloc(n * 4);
            uint32_t *want = malloc(k * 4), *got = malloc(k * 4);
            for (size_t i = 0; i < n; i++)
                x[i] = zeros && i % 3 ? 0.0f : tt_uniform01(4, 4, i) - 0.5f;
            ck_assert_uint_eq(tt_topk_exact(x, n, k, want), k);
            float *dx;
            uint32_t *didx;
            void *scratch;
            cudaMalloc((void **)&dx, n * 4);
            cudaMalloc((void **)&didx, k * 4);
            cudaMalloc(&scratch, tt_cuda_topk_scratch(n));
            cudaMemcpy(dx, x, n * 4, cudaMemcpyHostToDevice);
            ck_assert_int_eq(tt_cuda_topk_exact(dx, n, k, didx, scratch, NULL), 0);
            ck_assert_int_eq(cudaMemcpy(got, didx, k * 4, cudaMemcpyDeviceToHost), cudaSuccess);
            ck_assert_msg(memcmp(want, got, k * 4) == 0, "n=%zu k=%zu zeros=%d: the GPU chose otherwise", n,
                          k, zeros);
            cudaFree(dx);
            cudaFree(didx);
            cudaFree(scratch);
            free(x);
            free(want);
            free(got);
        }
}
END_TEST

START_TEST(cuda_sampled_topk_selects_what_the_cpu_selects)
{
    static const size_t counts[] = {100, 100003, 1 << 22}; /* 100: the sample is everything */
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int shape = 0; shape < 3; shape++) { /* spread; mostly zeros; all equal (2k pass) */
            size_t n = counts[ci], k = n / 100 + 1, want_n, got_n;
            float *x = malloc(n * 4), *mag = malloc(n * 4);
            uint32_t *want = malloc(2 * k * 4), *got = malloc(2 * k * 4);
            for (size_t i = 0; i < n; i++) {
                float u = tt_uniform01(5, 5, i) - 0.5f;
                x[i] = shape == 0 ? u : shape == 1 ? (i % 3 ? 0.0f : u) : (u < 0 ? -0.25f : 0.25f);
            }
            want_n = tt_topk_sampled(x, n, k, 7, 3, want, mag);
            float *dx;
            uint32_t *didx;
            void *scratch;
            ck_assert(cudaMalloc((void **)&dx, n * 4) == cudaSuccess &&
                      cudaMalloc((void **)&didx, 2 * k * 4) == cudaSuccess &&
                      cudaMalloc(&scratch, tt_cuda_topk_sampled_scratch(n, k)) == cudaSuccess);
            cudaMemcpy(dx, x, n * 4, cudaMemcpyHostToDevice);
            ck_assert_int_eq(tt_cuda_topk_sampled(dx, n, k, 7, 3, didx, &got_n, scratch, NULL), 0);
            ck_assert_msg(got_n == want_n, "n=%zu shape=%d: the GPU kept %zu, the CPU %zu", n, shape, got_n,
                          want_n);
            ck_assert_int_eq(cudaMemcpy(got, didx, got_n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
            ck_assert_msg(memcmp(want, got, got_n * 4) == 0, "n=%zu shape=%d: the GPU chose otherwise", n,
                          shape);
            cudaFree(dx);
            cudaFree(didx);
            cudaFree(scratch);
            free(x);
            free(mag);
            free(want);
            free(got);
        }
}
END_TEST
size_t tt_device_kernel_cases(tt_case_t *out)
{
    const tt_case_t cases[] = {
        {"kernels", cuda_kernels_match_the_cpu_bit_for_bit, 0, 0},
        {"avg", cuda_avg_division_matches_the_cpu, 0, 0},
        {"fp8_avg", cuda_fp8_avg_division_matches_the_cpu_bit_for_bit, 0, 0},
        {"launch_errors", a_launch_reports_its_own_error_only, 0, 0},
        {"big_reduction", a_reduction_of_more_than_2_31_elements, 0, 0},
        {"quantizers", cuda_quantizers_match_the_cpu_bit_for_bit, 0, 0},
        {"topk", cuda_topk_selects_what_the_cpu_selects, 0, 0},
        {"sampled_topk", cuda_sampled_topk_selects_what_the_cpu_selects, 0, 0},
    };
    memcpy(out, cases, sizeof cases);
    return sizeof cases / sizeof *cases;
}
