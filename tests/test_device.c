/* SPDX-License-Identifier: MIT */
/*
 * GPU suite (built with CUDA; skips with one line where no GPU is usable):
 * the CUDA reduction kernels against the CPU kernels, bit for bit, for
 * every dtype and op, several sizes and misalignments, with NaN, Inf and
 * subnormals in the inputs; the quantizers of the compressed all-reduce
 * against their CPU code, bit for bit; device buffers recognised and refused
 * by the collectives with a clear error until the device path exists.
 */
#include <check.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "cuda/kernels.h"
#include "harness.h"
#include "memkind.h"
#include "reduce.h"

/* Bytes that cover every value class: random bits, with NaN, Inf, zero
 * and subnormal patterns sprinkled in for the float types. */
static void fill_bytes(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
}

START_TEST(cuda_kernels_match_the_cpu_bit_for_bit)
{
    static const size_t counts[] = {1, 7, 8, 100, 4099, 1 << 20};
    for (int t = 0; t < TUTTI_NUM_DTYPES; t++)
        for (int op = 0; op < TUTTI_NUM_OPS; op++) {
            if (op == TUTTI_AVG)
                continue;
            size_t elem = tutti_dtype_size((tutti_dtype_t)t);
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                for (size_t skew = 0; skew < 2; skew++) { /* aligned, and one element off */
                    size_t n = counts[ci], bytes = (n + 1) * elem;
                    unsigned char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
                                  *got = malloc(bytes);
                    fill_bytes(a, bytes, (unsigned)(t * 31 + op * 7 + (int)ci));
                    fill_bytes(b, bytes, (unsigned)(t * 17 + op * 5 + (int)ci + 1000));
                    tt_reduce_get((tutti_dtype_t)t, (tutti_op_t)op)(want, a + skew * elem, b + skew * elem,
                                                                    n);
                    void *da, *db;
                    ck_assert_int_eq(cudaMalloc(&da, bytes), cudaSuccess);
                    ck_assert_int_eq(cudaMalloc(&db, bytes), cudaSuccess);
                    cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
                    cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice);
                    char *x = (char *)da + skew * elem, *y = (char *)db + skew * elem;
                    ck_assert_int_eq(tt_cuda_reduce(x, x, y, n, (tutti_dtype_t)t, (tutti_op_t)op, NULL), 0);
                    ck_assert_int_eq(cudaMemcpy(got, x, n * elem, cudaMemcpyDeviceToHost), cudaSuccess);
                    ck_assert_msg(memcmp(want, got, n * elem) == 0, "%s %s n=%zu skew=%zu differs",
                                  tutti_dtype_name((tutti_dtype_t)t), tutti_op_name((tutti_op_t)op), n, skew);
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
            float *x = malloc(n * 4), *mag = malloc(n * 4);
            uint32_t *want = malloc(k * 4), *got = malloc(k * 4);
            for (size_t i = 0; i < n; i++)
                x[i] = zeros && i % 3 ? 0.0f : tt_uniform01(4, 4, i) - 0.5f;
            ck_assert_uint_eq(tt_topk_exact(x, n, k, want, mag), k);
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
            free(mag);
            free(want);
            free(got);
        }
}
END_TEST

static int device_buffers_are_refused(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)r;
    (void)p;
    (void)arg;
    void *d;
    float host[4] = {0};
    if (cudaMalloc(&d, 64) != cudaSuccess || tt_mem_kind(d) != TT_MEM_DEVICE ||
        tt_mem_kind(host) != TT_MEM_HOST)
        return 1;
    int bad = tutti_allreduce(d, d, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL) != TUTTI_ERR_UNSUPPORTED ||
              !strstr(tutti_comm_last_error(comm), "sendbuf is CUDA device memory");
    bad |= tutti_allreduce(host, host, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL) != TUTTI_SUCCESS;
    cudaFree(d);
    return bad;
}

START_TEST(device_buffers_are_recognised_and_refused_clearly)
{
    tt_run_ranks(2, device_buffers_are_refused, NULL, 60);
}
END_TEST

int main(void)
{
    char why[200];
    if (!tt_cuda_usable(why, sizeof why)) {
        printf("1..0 # SKIP %s\n", why);
        return 0;
    }
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("device");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cuda_kernels_match_the_cpu_bit_for_bit);
    tcase_add_test(tc, cuda_quantizers_match_the_cpu_bit_for_bit);
    tcase_add_test(tc, cuda_topk_selects_what_the_cpu_selects);
    tcase_add_test(tc, device_buffers_are_recognised_and_refused_clearly);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
