/* SPDX-License-Identifier: MIT */
/*
 * Peer copies between every pair of GPUs, as p2pBandwidthLatencyTest lays
 * them out: one-way and two-way bandwidth and the latency of a 4-byte copy,
 * with each pair's connection from tutti's topology (NV#, PIX, PXB, PHB,
 * NODE, SYS) and whether CUDA allows peer access (else copies go through
 * host memory).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bw_gpu.h"
#include "bw_gpu_peak.h"
#include "topo/topo.h"

typedef struct {
    int n;
    char (*busid)[32];
    char (*cls)[12];
    int *p2p;
    void **buf; /* per GPU: two buffers of bytes each */
    cudaStream_t *stream;
} peers_t;

static int topo_index(const tt_topo_t *t, const char *busid)
{
    for (int d = 0; d < t->ndevs; d++)
        if (strcasecmp(t->devs[d].busid, busid) == 0)
            return d;
    return -1;
}

static int peers_open(peers_t *p, int n, size_t bytes)
{
    p->n = n;
    p->busid = calloc((size_t)n, sizeof *p->busid);
    p->cls = calloc((size_t)n * n, sizeof *p->cls);
    p->p2p = calloc((size_t)n * n, sizeof *p->p2p);
    p->buf = calloc(2 * (size_t)n, sizeof *p->buf);
    p->stream = calloc((size_t)n, sizeof *p->stream);
    if (!p->busid || !p->cls || !p->p2p || !p->buf || !p->stream)
        return -1;
    tt_topo_t *topo = calloc(1, sizeof *topo);
    char err[160];
    int have_topo = topo && tt_topo_load_local(topo, err, sizeof err) == TUTTI_SUCCESS;
    for (int g = 0; g < n; g++) {
        if (cudaSetDevice(g) || cudaMalloc(&p->buf[2 * g], bytes) || cudaMalloc(&p->buf[2 * g + 1], bytes) ||
            cudaStreamCreateWithFlags(&p->stream[g], cudaStreamNonBlocking))
            return -1;
        cudaDeviceGetPCIBusId(p->busid[g], sizeof p->busid[g], g);
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            int ta = have_topo ? topo_index(topo, p->busid[a]) : -1;
            int tb = have_topo ? topo_index(topo, p->busid[b]) : -1, links = 0;
            if (ta >= 0 && tb >= 0)
                tt_topo_path_name(tt_topo_path(topo, ta, tb, &links), links, p->cls[a * n + b], 12);
            else
                snprintf(p->cls[a * n + b], 12, a == b ? "X" : "?");
            if (a == b || cudaDeviceCanAccessPeer(&p->p2p[a * n + b], a, b))
                continue;
            if (p->p2p[a * n + b] && cudaSetDevice(a) == cudaSuccess &&
                cudaDeviceEnablePeerAccess(b, 0) != cudaSuccess)
                cudaGetLastError(); /* already enabled */
        }
    free(topo);
    return 0;
}

static void peers_close(peers_t *p)
{
    for (int g = 0; g < p->n; g++) {
        cudaSetDevice(g);
        if (p->buf) {
            cudaFree(p->buf[2 * g]);
            cudaFree(p->buf[2 * g + 1]);
        }
        if (p->stream && p->stream[g])
            cudaStreamDestroy(p->stream[g]);
    }
    free(p->busid);
    free(p->cls);
    free(p->p2p);
    free(p->buf);
    free(p->stream);
}

static void print_matrix(const peers_t *p, const char *title, const tt_stats_t *m)
{
    printf("\n%s\n   D\\D", title);
    for (int b = 0; b < p->n; b++)
        printf(" %8d", b);
    printf("\n");
    for (int a = 0; a < p->n; a++) {
        printf("%6d", a);
        for (int b = 0; b < p->n; b++)
            if (a == b)
                printf(" %8s", "X");
            else
                printf(" %8.2f", m[a * p->n + b].median);
        printf("\n");
    }
}

static void json_matrix(tt_bw_job_t *job, const peers_t *p, const char *key, const tt_stats_t *m)
{
    tt_json_arr(&job->json, key);
    for (int a = 0; a < p->n; a++)
        for (int b = 0; b < p->n; b++) {
            if (a == b)
                continue;
            const tt_stats_t *s = &m[a * p->n + b];
            tt_json_obj(&job->json, NULL);
            tt_json_int(&job->json, "a", a);
            tt_json_int(&job->json, "b", b);
            tt_json_str(&job->json, "class", p->cls[a * p->n + b]);
            tt_json_bool(&job->json, "p2p", p->p2p[a * p->n + b]);
            tt_json_num(&job->json, "median", s->median);
            tt_json_num(&job->json, "p5", s->p5);
            tt_json_num(&job->json, "p95", s->p95);
            tt_json_num(&job->json, "cv", s->cv);
            tt_json_bool(&job->json, "stable", s->stable);
            tt_json_end(&job->json);
        }
    tt_json_end(&job->json);
}

/* The peak a pair's copies could reach: its NVLinks, else the slower PCIe link. */
static void peer_verdict(tt_bw_job_t *job, const peers_t *p, int a, int b, double measured)
{
    char why[96];
    double nv = 0, peak = 0;
    int version = 0;
    const char *basis = "PCIe (sysfs)";
    if (strncmp(p->cls[a * p->n + b], "NV", 2) == 0 &&
        tt_bw_nvlinks(p->busid[a], &nv, &version, why, sizeof why))
        basis = "NVLink (NVML)", peak = nv;
    tt_pcie_link_t la, lb;
    if (peak == 0 && !tt_bw_pcie_link("", p->busid[a], &la) && !tt_bw_pcie_link("", p->busid[b], &lb))
        peak = la.gbps < lb.gbps ? la.gbps : lb.gbps;
    if (!job->text)
        return;
    if (peak <= 0) {
        printf("is this normal? GPU %d -> GPU %d: no link rate detected, so no verdict\n", a, b);
        return;
    }
    double f = measured / peak;
    printf("is this normal? GPU %d -> GPU %d (%s%s): %.2f GB/s = %.2f of %.1f GB/s (%s): %s\n", a, b,
           p->cls[a * p->n + b], p->p2p[a * p->n + b] ? "" : ", no peer access", measured, f, peak, basis,
           f >= 0.75  ? "normal"
           : f >= 0.4 ? "below the usual"
                      : "low");
}

int tt_bw_gpu_peers(tt_bw_job_t *job, int ngpus, size_t bytes, int iters)
{
    if (ngpus < 2) {
        if (job->text)
            printf("\npeer copies: one GPU, no pair to measure\n");
        return 0;
    }
    peers_t p = {0};
    int n = ngpus, rc = peers_open(&p, n, bytes);
    tt_stats_t *m[3] = {calloc((size_t)n * n, sizeof(tt_stats_t)), calloc((size_t)n * n, sizeof(tt_stats_t)),
                        calloc((size_t)n * n, sizeof(tt_stats_t))};
    rc = rc || !m[0] || !m[1] || !m[2] ? -1 : 0;
    for (int a = 0; a < n && !rc; a++)
        for (int b = 0; b < n && !rc; b++) {
            if (a == b)
                continue;
            tt_gpu_op_t o = {.op = OP_PEER,
                             .dst = p.buf[2 * b],
                             .src = p.buf[2 * a],
                             .bytes = bytes,
                             .from = a,
                             .to = b,
                             .dtype = TUTTI_UINT8,
                             .stream = p.stream[a]};
            rc = cudaSetDevice(a) || tt_bw_gpu_measure(job, &o, iters, (double)bytes, &m[0][a * n + b]);
            o.op = OP_PEER_BI;
            o.dst2 = p.buf[2 * a + 1];
            o.src2 = p.buf[2 * b + 1];
            o.stream2 = p.stream[b];
            rc = rc || tt_bw_gpu_measure(job, &o, iters, (double)bytes, &m[1][a * n + b]);
            o = (tt_gpu_op_t){.op = OP_PEER,
                              .dst = p.buf[2 * b],
                              .src = p.buf[2 * a],
                              .bytes = 4,
                              .from = a,
                              .to = b,
                              .dtype = TUTTI_UINT8,
                              .stream = p.stream[a],
                              .latency = 1};
            rc = rc || tt_bw_gpu_measure(job, &o, 100, 4, &m[2][a * n + b]);
        }
    if (!rc && job->text) {
        printf("\nGPU pairs: connection (tutti-topo) and peer access\n");
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                if (a != b)
                    printf("  GPU %d -> GPU %d: %s, %s\n", a, b, p.cls[a * n + b],
                           p.p2p[a * n + b] ? "peer access" : "through the host");
        print_matrix(&p, "Peer copy bandwidth (GB/s), row copies to column", m[0]);
        print_matrix(&p, "Bidirectional peer copy bandwidth (GB/s each way)", m[1]);
        print_matrix(&p, "Peer copy latency (us, one 4-byte copy and a stream synchronize)", m[2]);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                if (a != b)
                    peer_verdict(job, &p, a, b, m[0][a * n + b].median);
    }
    if (!rc && job->o->json) {
        tt_json_obj(&job->json, "peer");
        json_matrix(job, &p, "uni", m[0]);
        json_matrix(job, &p, "bi", m[1]);
        json_matrix(job, &p, "lat", m[2]);
        tt_json_end(&job->json);
    }
    if (rc && job->text)
        printf("peer copies: a CUDA call failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    for (int k = 0; k < 3; k++)
        free(m[k]);
    peers_close(&p);
    return rc;
}
