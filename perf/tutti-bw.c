/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw: the copy and reduction rates of this machine's GPUs, measured
 * in one run so they can be compared: host to device and back (pinned and
 * pageable), device to device, between GPUs, and tutti's reduction kernels
 * next to the device-to-device copy. Rates count bytes read plus bytes
 * written for the device-only lines (a copy of S bytes moves 2S, a
 * reduction of n elements 3n), and bytes moved across the link otherwise.
 */
#include <cuda_runtime_api.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "cuda/kernels.h"
#include "core/env_config.h"
#include "tutti.h"

typedef struct {
    size_t bytes;
    int iters;
    cudaStream_t stream;
    int src_gpu, dst_gpu; /* of PEER copies */
} bw_t;

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "tutti-bw: %s: %s\n", #call, cudaGetErrorString(e_));                            \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

typedef enum { COPY, COPY_SYNC, PEER, REDUCE } kind_t;

/* Seconds per iteration of one copy or reduction, best of three batches. */
static double time_it(const bw_t *b, kind_t kind, void *dst, const void *src, enum cudaMemcpyKind dir,
                      tutti_dtype_t dtype)
{
    double best = 1e30;
    size_t n = b->bytes / tutti_dtype_size(dtype);
    for (int batch = 0; batch < 4; batch++) { /* the first batch warms up */
        int64_t t0 = tt_now_ns();
        for (int i = 0; i < b->iters; i++) {
            if (kind == COPY)
                CHECK(cudaMemcpyAsync(dst, src, b->bytes, dir, b->stream));
            else if (kind == COPY_SYNC)
                CHECK(cudaMemcpy(dst, src, b->bytes, dir));
            else if (kind == PEER)
                CHECK(cudaMemcpyPeerAsync(dst, b->dst_gpu, src, b->src_gpu, b->bytes, b->stream));
            else if (tt_cuda_reduce(dst, dst, src, n, dtype, TUTTI_SUM, b->stream))
                CHECK(cudaGetLastError());
        }
        CHECK(cudaStreamSynchronize(b->stream));
        double s = (double)(tt_now_ns() - t0) / 1e9 / b->iters;
        if (batch > 0 && s < best)
            best = s;
    }
    return best;
}

static void line(const char *what, double bytes_moved, double seconds, double reference)
{
    double gbps = bytes_moved / seconds / 1e9;
    if (reference > 0)
        printf("%-34s %9.2f GB/s  %5.1f%% of the line above it\n", what, gbps, 100 * gbps / reference);
    else
        printf("%-34s %9.2f GB/s\n", what, gbps);
}

int main(int argc, char **argv)
{
    uint64_t size = 256 << 20;
    int iters = 10, opt;
    static const struct option longs[] = {{"size", required_argument, 0, 's'},
                                          {"iters", required_argument, 0, 'n'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, "s:n:h", longs, NULL)) != -1) {
        if (opt == 's' && tt_parse_size(optarg, &size) == 0 && size >= 4)
            continue;
        if (opt == 'n' && (iters = atoi(optarg)) > 0)
            continue;
        fprintf(opt == 'h' ? stdout : stderr,
                "usage: tutti-bw [-s SIZE (default 256M)] [-n ITERATIONS per batch (default 10)]\n");
        return opt == 'h' ? 0 : 2;
    }
    int ngpus = 0;
    cudaError_t e = cudaGetDeviceCount(&ngpus);
    if (e || ngpus == 0) {
        printf("tutti-bw: no usable GPU: %s\n", e ? cudaGetErrorString(e) : "the driver reports none");
        return 77; /* skipped, as the test suites say it */
    }
    bw_t b = {.bytes = (size_t)size / 4 * 4, .iters = iters};
    struct cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# tutti-bw: GPU 0 of %d: %s; %zu bytes per transfer, best of 3 batches of %d\n", ngpus, prop.name,
           b.bytes, iters);
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    void *d0, *d1, *pinned, *pageable = malloc(b.bytes);
    CHECK(cudaMalloc(&d0, b.bytes));
    CHECK(cudaMalloc(&d1, b.bytes));
    CHECK(cudaHostAlloc(&pinned, b.bytes, cudaHostAllocDefault));
    if (!pageable)
        return fprintf(stderr, "tutti-bw: out of host memory\n"), 1;
    memset(pageable, 0, b.bytes);
    memset(pinned, 0, b.bytes);
    CHECK(cudaMemset(d0, 0, b.bytes));
    CHECK(cudaMemset(d1, 0, b.bytes));

    double pinned_h2d = time_it(&b, COPY, d0, pinned, cudaMemcpyHostToDevice, TUTTI_UINT8);
    line("host->device, pinned (async)", (double)b.bytes, pinned_h2d, 0);
    line("host->device, pageable cudaMemcpy", (double)b.bytes,
         time_it(&b, COPY_SYNC, d0, pageable, cudaMemcpyHostToDevice, TUTTI_UINT8),
         (double)b.bytes / pinned_h2d);
    double pinned_d2h = time_it(&b, COPY, pinned, d0, cudaMemcpyDeviceToHost, TUTTI_UINT8);
    line("device->host, pinned (async)", (double)b.bytes, pinned_d2h, 0);
    line("device->host, pageable cudaMemcpy", (double)b.bytes,
         time_it(&b, COPY_SYNC, pageable, d0, cudaMemcpyDeviceToHost, TUTTI_UINT8),
         (double)b.bytes / pinned_d2h);
    printf("# tutti stages device buffers with pinned async copies like the first line of each pair\n");

    double d2d = time_it(&b, COPY, d1, d0, cudaMemcpyDeviceToDevice, TUTTI_UINT8);
    line("device->device cudaMemcpy (r+w)", 2.0 * (double)b.bytes, d2d, 0);
    static const tutti_dtype_t sums[] = {TUTTI_FP32, TUTTI_FP16, TUTTI_BF16, TUTTI_FP8_E4M3, TUTTI_FP8_E5M2};
    for (int i = 0; i < 5; i++) {
        char what[64];
        snprintf(what, sizeof what, "tutti %s sum kernel (2r+w)", tutti_dtype_name(sums[i]));
        line(what, 3.0 * (double)b.bytes, time_it(&b, REDUCE, d1, d0, cudaMemcpyDeviceToDevice, sums[i]),
             2.0 * (double)b.bytes / d2d);
    }

    if (ngpus < 2)
        printf("# peer copies: one GPU, nothing to measure\n");
    for (int a = 0; a < ngpus; a++)
        for (int c = 0; c < ngpus; c++) {
            if (a == c)
                continue;
            int can = 0;
            CHECK(cudaDeviceCanAccessPeer(&can, a, c));
            void *src, *dst;
            CHECK(cudaSetDevice(c));
            CHECK(cudaMalloc(&dst, b.bytes));
            CHECK(cudaSetDevice(a));
            if (can && cudaDeviceEnablePeerAccess(c, 0) != cudaSuccess)
                cudaGetLastError(); /* already enabled */
            CHECK(cudaMalloc(&src, b.bytes));
            b.src_gpu = a;
            b.dst_gpu = c;
            double best = time_it(&b, PEER, dst, src, cudaMemcpyDefault, TUTTI_UINT8);
            char what[64];
            snprintf(what, sizeof what, "GPU %d -> GPU %d (%s)", a, c,
                     can ? "peer access" : "through the host");
            line(what, (double)b.bytes, best, 0);
            cudaFree(src);
            CHECK(cudaSetDevice(c));
            cudaFree(dst);
            CHECK(cudaSetDevice(0));
        }
    cudaFree(d0);
    cudaFree(d1);
    cudaFreeHost(pinned);
    free(pageable);
    cudaStreamDestroy(b.stream);
    return 0;
}
