/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce on device buffers, between its two files: the
 * queued call (allreduce_queue.c, every build) and its GPU path's kernels
 * on the caller's stream (allreduce_gpu.c, built with CUDA).
 */
#ifndef TT_COMPRESS_ALLREDUCE_GPU_H
#define TT_COMPRESS_ALLREDUCE_GPU_H

#include "compress/allreduce.h"
#include "device/queue.h"
#include "device/staging.h"

/* One call's working memory: GPU pieces, then host (stand-in) pieces. */
enum { D_G32, D_OUT32, D_X, D_IDX, D_PAIRS, D_ALL, D_SCRATCH, D_IN, D_N };
enum { H_MINE, H_ALL, H_SERVER, H_ERROR, H_N };

/* How a queued call runs: the GPU path's three forms, or the CPU path on
 * the proxy on staged copies. */
typedef enum { GPU_QUANT, GPU_TOPK, GPU_DENSE, CPU_STAGED } tt_cpath_t;

typedef struct {
    size_t k;                   /* top-k: elements kept */
    tt_quant_t q;               /* the quantizers */
    size_t slot, pitch;         /* one chunk's encoding: on the wire, on the GPU */
    size_t dev[D_N], host[H_N]; /* bytes of each piece */
    /* The user's input, or output, is not aligned to its element, which
     * the kernels need: an aligned copy of it takes its place (D_G32 for
     * fp32, else D_IN). */
    int stage_in, stage_out;
} tt_cplan_t;

/* A queued call. */
typedef struct {
    tt_call_t call;
    tutti_compress_t how;
    tutti_ef_state_t ef;
    tt_cpath_t path;
    int p, rank;
    tt_cplan_t pl;
    size_t doff[D_N], hoff[H_N];
    tt_stage_layout_t layout; /* CPU_STAGED: the user's device buffers in the stand-in */
    uint64_t seqs[TT_COMPRESS_INNER_MAX], rng;
    int nseqs;
    tt_device_span_t *spans; /* nin, then nout */
    int nin, nout;
} tt_cqueued_t;

/* The path of call c (some buffer on the device) and its plan: a GPU path
 * with CUDA, when both buffers are on the GPU and the scheme has one; else
 * CPU_STAGED. */
tt_cpath_t tt_compress_gpu_plan(const tt_call_t *c, const tutti_compress_t *how, int p, tt_cplan_t *pl);
/* Lays out q (planned: its path and plan set) in the GPU working memory
 * and the host stand-in, whose sizes *gpu_bytes and *host_bytes get, and
 * fills the spans between them (q->spans holds 2 p + 2). */
void tt_compress_layout(tt_cqueued_t *q, size_t *gpu_bytes, size_t *host_bytes);
/* A GPU path's exchange, on the proxy: on the host stand-in h, the
 * messages of the CPU path. */
tutti_status_t tt_compress_exchange(tt_comm_t *comm, const tt_cqueued_t *q, char *h);
/* A GPU path on the caller's stream: compressing before the proxy's part,
 * decompressing after it. Each says its own failure. */
tutti_status_t tt_compress_gpu_before(const tt_device_ctx_t *ctx, void *stream, const tt_cqueued_t *q);
tutti_status_t tt_compress_gpu_after(const tt_device_ctx_t *ctx, void *stream, const tt_cqueued_t *q);

#endif
