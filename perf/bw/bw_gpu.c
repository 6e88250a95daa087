/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw's GPU rows, on rank 0's host: host to device and back (pinned
 * and pageable), device to device, tutti's reduction kernels beside the
 * device copy, and the matrices of peer copies between GPUs (the path
 * cuda_ipc's ranks use: NVLink or PCIe P2P, else through the host), each
 * with its link class and the peak expected from sysfs and NVML. Rates
 * count the bytes that cross the link; device-only lines count bytes read
 * plus bytes written (a copy of S bytes moves 2S, a reduction of n bytes 3n).
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "bw.h"
#include "bw_gpu.h"
#include "bw_gpu_peak.h"
#include "core/clock.h"
#include "device/memkind.h"
#include "topo/topo.h"

void tt_bw_gpu_row(tt_bw_job_t *job, const char *what, const tt_stats_t *s, double reference)
{
    if (job->text) {
        printf("%-38s %9.2f GB/s  cv %4.1f%%", what, s->median, 100 * s->cv);
        if (reference > 0)
            printf("  %5.1f%% of the line above", 100 * s->median / reference);
        printf("\n");
    }
    if (job->o->csv)
        printf("gpu,%s,,,,,%.6g,%.6g,%.6g,,%.4f,%d,%d,%d,\n", what, s->median, s->p5, s->p95, s->cv, s->n,
               s->outliers, s->stable);
    if (job->o->json) {
        tt_json_obj(&job->json, NULL);
        tt_json_str(&job->json, "what", what);
        tt_json_num(&job->json, "median", s->median);
        tt_json_num(&job->json, "p5", s->p5);
        tt_json_num(&job->json, "p95", s->p95);
        tt_json_num(&job->json, "cv", s->cv);
        tt_json_int(&job->json, "samples", s->n);
        tt_json_bool(&job->json, "stable", s->stable);
        tt_json_end(&job->json);
    }
}

static void skip(tt_bw_job_t *job, const char *why)
{
    if (job->text || job->o->csv)
        printf("%sgpu: %s: host<->device, device<->device and cuda_ipc peer rows not measured\n",
               job->o->csv ? "# " : "", why);
    if (job->o->json) {
        tt_json_obj(&job->json, "gpu");
        tt_json_str(&job->json, "status", "skipped");
        tt_json_str(&job->json, "why", why);
        tt_json_end(&job->json);
    }
}

/* The PCIe verdict of GPU g, whose host copy reached measured GB/s. */
static void pcie_verdict(tt_bw_job_t *job, int g, const char *busid, double measured)
{
    tt_pcie_link_t link;
    if (tt_bw_pcie_link("", busid, &link)) {
        if (job->text)
            printf(
                "is this normal? GPU %d host<->device: sysfs does not give %s's PCIe link, so no verdict\n",
                g, busid);
        return;
    }
    double f = measured / link.gbps;
    if (job->text)
        printf("is this normal? GPU %d host<->device: %.2f GB/s = %.2f of PCIe gen %d x%d (%.1f GB/s, "
               "sysfs): %s\n",
               g, measured, f, link.gen, link.width, link.gbps,
               f >= 0.75  ? "normal"
               : f >= 0.4 ? "below the usual"
                          : "low (check the slot's width and speed)");
}

/* Host<->device and device-only rows of GPU g. */
static int gpu_rows(tt_bw_job_t *job, int g, size_t bytes, int iters)
{
    void *d0 = NULL, *d1 = NULL, *pinned = NULL, *pageable = malloc(bytes);
    cudaStream_t stream = NULL;
    char busid[32] = "", what[64];
    struct cudaDeviceProp prop;
    int rc = -1;
    if (!pageable || cudaSetDevice(g) || cudaGetDeviceProperties(&prop, g) ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) || cudaMalloc(&d0, bytes) ||
        cudaMalloc(&d1, bytes) || cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault))
        goto out;
    cudaDeviceGetPCIBusId(busid, sizeof busid, g);
    for (char *c = busid; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c); /* sysfs spells it in lower case */
    memset(pageable, 0, bytes);
    if (job->text)
        printf("\nGPU %d: %s (%s), %zu-byte transfers\n", g, prop.name, busid, bytes);
    if (job->o->json) {
        tt_json_obj(&job->json, NULL);
        tt_json_int(&job->json, "index", g);
        tt_json_str(&job->json, "name", prop.name);
        tt_json_str(&job->json, "busid", busid);
        tt_json_arr(&job->json, "rows");
    }
    tt_stats_t s, pin_h2d;
    tt_gpu_op_t o = {.op = OP_COPY,
                     .dst = d0,
                     .src = pinned,
                     .bytes = bytes,
                     .dir = cudaMemcpyHostToDevice,
                     .dtype = TUTTI_UINT8,
                     .stream = stream};
    if (tt_bw_gpu_measure(job, &o, iters, (double)bytes, &pin_h2d))
        goto out;
    tt_bw_gpu_row(job, "host->device, pinned (async)", &pin_h2d, 0);
    o = (tt_gpu_op_t){.op = OP_COPY_SYNC,
                      .dst = d0,
                      .src = pageable,
                      .bytes = bytes,
                      .dir = cudaMemcpyHostToDevice,
                      .dtype = TUTTI_UINT8,
                      .stream = stream};
    if (tt_bw_gpu_measure(job, &o, iters, (double)bytes, &s))
        goto out;
    tt_bw_gpu_row(job, "host->device, pageable cudaMemcpy", &s, pin_h2d.median);
    o = (tt_gpu_op_t){.op = OP_COPY,
                      .dst = pinned,
                      .src = d0,
                      .bytes = bytes,
                      .dir = cudaMemcpyDeviceToHost,
                      .dtype = TUTTI_UINT8,
                      .stream = stream};
    tt_stats_t pin_d2h;
    if (tt_bw_gpu_measure(job, &o, iters, (double)bytes, &pin_d2h))
        goto out;
    tt_bw_gpu_row(job, "device->host, pinned (async)", &pin_d2h, 0);
    o.op = OP_COPY_SYNC;
    o.dst = pageable;
    if (tt_bw_gpu_measure(job, &o, iters, (double)bytes, &s))
        goto out;
    tt_bw_gpu_row(job, "device->host, pageable cudaMemcpy", &s, pin_d2h.median);
    o = (tt_gpu_op_t){.op = OP_COPY,
                      .dst = d1,
                      .src = d0,
                      .bytes = bytes,
                      .dir = cudaMemcpyDeviceToDevice,
                      .dtype = TUTTI_UINT8,
                      .stream = stream};
    tt_stats_t d2d;
    if (tt_bw_gpu_measure(job, &o, iters, 2.0 * (double)bytes, &d2d))
        goto out;
    tt_bw_gpu_row(job, "device->device cudaMemcpy (r+w)", &d2d, 0);
    static const tutti_dtype_t sums[] = {TUTTI_FP32, TUTTI_FP16, TUTTI_BF16, TUTTI_FP8_E4M3, TUTTI_FP8_E5M2};
    for (int i = 0; i < 5; i++) {
        o.op = OP_REDUCE;
        o.dtype = sums[i];
        snprintf(what, sizeof what, "tutti %s sum kernel (2r+w)", tutti_dtype_name(sums[i]));
        if (tt_bw_gpu_measure(job, &o, iters, 3.0 * (double)bytes, &s))
            goto out;
        tt_bw_gpu_row(job, what, &s, d2d.median);
    }
    /* The same fp32 sum with the source 4 bytes off the destination's
     * place from a 16-byte boundary: no common offset, so element by
     * element (what a direct run avoids by reducing in its windows). */
    o = (tt_gpu_op_t){.op = OP_REDUCE,
                      .dst = d1,
                      .src = (char *)d0 + 4,
                      .bytes = bytes - 16,
                      .dtype = TUTTI_FP32,
                      .stream = stream};
    if (tt_bw_gpu_measure(job, &o, iters, 3.0 * (double)o.bytes, &s))
        goto out;
    tt_bw_gpu_row(job, "tutti fp32 sum kernel, misaligned by 4 bytes (2r+w)", &s, d2d.median);
    if (job->o->json) {
        tt_json_end(&job->json);
        tt_json_end(&job->json);
    }
    pcie_verdict(job, g, busid, pin_h2d.median > pin_d2h.median ? pin_h2d.median : pin_d2h.median);
    rc = 0;
out:
    if (rc && job->text)
        printf("GPU %d: a CUDA call failed: %s\n", g, cudaGetErrorString(cudaGetLastError()));
    cudaFree(d0);
    cudaFree(d1);
    cudaFreeHost(pinned);
    free(pageable);
    if (stream)
        cudaStreamDestroy(stream);
    return rc;
}

void tt_bw_gpu(tt_bw_job_t *job)
{
    if (job->rank != 0)
        return;
    int ngpus = 0;
    char none[160];
    if (tt_device_usable(none, sizeof none) !=
        TUTTI_SUCCESS) { /* no driver, no GPU, or a driver older than the runtime */
        skip(job, none);
        return;
    }
    cudaError_t e = cudaGetDeviceCount(&ngpus);
    if (e) {
        char why[160];
        snprintf(why, sizeof why, "CUDA cannot list the GPUs: %s", cudaGetErrorString(e));
        skip(job, why);
        return;
    }
    size_t bytes = (size_t)job->o->size / 4 * 4;
    int iters = 10;
    if (job->o->json) {
        tt_json_obj(&job->json, "gpu");
        tt_json_str(&job->json, "status", "measured");
        tt_json_arr(&job->json, "devices");
    }
    for (int g = 0; g < ngpus; g++)
        if (gpu_rows(job, g, bytes, iters))
            job->status = 1;
    if (job->o->json)
        tt_json_end(&job->json);
    if (tt_bw_gpu_peers(job, ngpus, bytes, iters))
        job->status = 1;
    if (job->o->json)
        tt_json_end(&job->json);
}
