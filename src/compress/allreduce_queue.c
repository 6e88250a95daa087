/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce on device buffers, queued on the caller's
 * stream as a staged call (src/device/queue.h): the GPU path's kernels
 * compress before the proxy's part and decompress after it
 * (allreduce_gpu.c), or, with a buffer on the host, sampled top-k or
 * nothing to compress, the CPU path runs on the proxy on staged copies.
 * Either way the proxy does host work only (the exchange, the two-phase
 * server step), and the call's collectives take their sequence numbers as
 * it is queued. The worker error stays on the GPU from a state's first
 * device call on (ef_device.c): the CPU path stages it too.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "compress/allreduce_gpu.h"
#include "device/rt.h"

#ifndef TT_HAVE_CUDA
tt_cpath_t tt_compress_gpu_plan(const tt_call_t *c, const tutti_compress_t *how, int p, tt_cplan_t *pl)
{
    (void)c;
    (void)how;
    (void)p;
    (void)pl;
    return CPU_STAGED; /* no kernels */
}

tutti_status_t tt_compress_gpu_before(const tt_device_ctx_t *ctx, void *stream, const tt_cqueued_t *q)
{
    (void)ctx;
    (void)stream;
    (void)q;
    return TUTTI_ERR_INTERNAL;
}

tutti_status_t tt_compress_gpu_after(const tt_device_ctx_t *ctx, void *stream, const tt_cqueued_t *q)
{
    (void)ctx;
    (void)stream;
    (void)q;
    return TUTTI_ERR_INTERNAL;
}
#endif

/* Offsets of the pieces (each 256-byte aligned); returns the total. */
static size_t carve(const size_t *sizes, int n, size_t *off)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        off[i] = at;
        at += (sizes[i] + 255) / 256 * 256;
    }
    return at;
}

static tt_device_span_t gpu_span(size_t gpu_off, size_t host_off, size_t bytes)
{
    return (tt_device_span_t){.gpu_off = gpu_off, .host_off = host_off, .bytes = bytes};
}

static tt_device_span_t dev_span(const void *dev, size_t host_off, size_t bytes)
{
    return (tt_device_span_t){.dev = dev, .host_off = host_off, .bytes = bytes};
}

/* What goes between the GPU and the host; q->spans holds 2 p + 2. */
static void spans_of(tt_cqueued_t *q)
{
    tt_device_span_t *in = q->spans;
    size_t f = q->call.count * sizeof(float), slot = q->pl.slot, pitch = q->pl.pitch;
    q->nin = q->nout = 0;
    if (q->path == GPU_QUANT) {
        for (int j = 0; j < q->p; j++)
            in[q->nin++] =
                gpu_span(q->doff[D_PAIRS] + pitch * (size_t)j, q->hoff[H_MINE] + slot * (size_t)j, slot);
        for (int j = 0; j < q->p; j++)
            in[q->nin + q->nout++] =
                gpu_span(q->doff[D_ALL] + pitch * (size_t)j, q->hoff[H_ALL] + slot * (size_t)j, slot);
    } else if (q->path == GPU_TOPK) {
        in[q->nin++] = gpu_span(q->doff[D_PAIRS], q->hoff[H_MINE], q->pl.dev[D_PAIRS]);
        in[q->nin + q->nout++] = gpu_span(q->doff[D_ALL], q->hoff[H_ALL], q->pl.dev[D_ALL]);
    } else if (q->path == GPU_DENSE) {
        in[q->nin++] = gpu_span(q->doff[D_X], q->hoff[H_MINE], f);
        in[q->nin + q->nout++] = q->call.dtype == TUTTI_FP32 ? dev_span(q->call.recv, q->hoff[H_MINE], f)
                                                             : gpu_span(q->doff[D_OUT32], q->hoff[H_MINE], f);
    } else {
        tt_device_span_t buf_in, buf_out;
        int bi, bo;
        tt_stage_spans(&q->call, &q->layout, &buf_in, &bi, &buf_out, &bo);
        if (bi)
            in[q->nin++] = buf_in;
        if (q->ef)
            in[q->nin++] = dev_span(q->ef->worker_dev, q->hoff[H_ERROR], f);
        if (bo)
            in[q->nin + q->nout++] = buf_out;
        if (q->ef)
            in[q->nin + q->nout++] = dev_span(q->ef->worker_dev, q->hoff[H_ERROR], f);
    }
}

void tt_compress_layout(tt_cqueued_t *q, size_t *gpu_bytes, size_t *host_bytes)
{
    *gpu_bytes = carve(q->pl.dev, D_N, q->doff);
    if (q->path == CPU_STAGED) {
        q->layout = tt_stage_layout(&q->call);
        q->pl.host[H_MINE] = q->layout.bytes; /* the staged buffers first */
        q->pl.host[H_ERROR] = q->ef ? q->call.count * sizeof(float) : 0;
    }
    *host_bytes = carve(q->pl.host, H_N, q->hoff);
    spans_of(q);
}

/* ---- on the proxy: host memory only ---- */

tutti_status_t tt_compress_exchange(tt_comm_t *comm, const tt_cqueued_t *q, char *h)
{
    size_t n = q->call.count;
    if (q->path == GPU_DENSE) {
        tt_compress_topk_dense(comm, q->pl.k, n); /* the debug line and the stats, as on the CPU */
        return tt_compress_host_coll(comm, TT_COLL_ALLREDUCE, h + q->hoff[H_MINE], h + q->hoff[H_MINE], n,
                                     TUTTI_FP32, q->call.op);
    }
    if (q->path == GPU_TOPK) {
        tt_compress_stats(comm)->k_sent = q->pl.k;
        return tt_compress_host_coll(comm, TT_COLL_ALLGATHER, h + q->hoff[H_MINE], h + q->hoff[H_ALL],
                                     q->pl.k * sizeof(tt_pair_t), TUTTI_UINT8, TUTTI_SUM);
    }
    int p = q->p;
    size_t slot = q->pl.slot, mine = tt_block_count(n, p, q->rank);
    unsigned char *enc = (unsigned char *)h + q->hoff[H_MINE], *got = (unsigned char *)h + q->hoff[H_ALL];
    uint64_t base = q->rng * 2 * (uint64_t)p;
    TT_TRY(tt_compress_host_coll(comm, TT_COLL_ALLTOALL, enc, got, slot, TUTTI_UINT8, TUTTI_SUM));
    tt_compress_server(&q->pl.q, got, slot, tt_block_off(n, p, q->rank), mine, p, q->call.op,
                       base + (uint64_t)p + (uint64_t)q->rank, q->ef, (float *)(h + q->hoff[H_SERVER]), enc);
    return tt_compress_host_coll(comm, TT_COLL_ALLGATHER, enc, got, slot, TUTTI_UINT8, TUTTI_SUM);
}

/* The CPU path on the staged copies, the worker error among them. */
static tutti_status_t run_staged(tt_comm_t *comm, const tt_cqueued_t *q, char *h)
{
    tt_call_t host = tt_stage_stand_in(&q->call, &q->layout, h);
    if (!q->ef)
        return tt_compress_run(comm, &host, &q->how, NULL);
    struct tutti_ef_state view = *q->ef; /* its server error is the state's own */
    view.worker = (float *)(h + q->hoff[H_ERROR]);
    view.worker_on_device = 0;
    tutti_status_t st = tt_compress_run(comm, &host, &q->how, &view);
    q->ef->server_count = view.server_count;
    return st;
}

static tutti_status_t run(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *arg)
{
    const tt_cqueued_t *q = arg;
    tt_compress_use(comm, q->seqs, q->nseqs, q->rng);
    tutti_status_t st;
    if (q->path == CPU_STAGED) {
        st = run_staged(comm, q, ctx->host);
    } else {
        *tt_compress_stats(comm) = (tutti_compress_stats_t){0};
        uint64_t before = tt_coll_bytes_sent(comm);
        st = tt_compress_exchange(comm, q, ctx->host);
        if (!st)
            tt_compress_account(comm, before, q->call.count, q->call.dtype);
    }
    tutti_status_t done = tt_compress_done(comm, TT_COMPRESS_CALL);
    return st ? st : done;
}

/* ---- on the caller's stream ---- */

static tutti_status_t begin(tt_comm_t *comm, void *arg, int *direct)
{
    tt_cqueued_t *q = arg;
    *direct = 0;
    return tt_compress_reserve(comm, &q->how, q->call.count, q->seqs, &q->nseqs, &q->rng);
}

static tutti_status_t before(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const tt_cqueued_t *q = arg;
    return q->path == CPU_STAGED ? TUTTI_SUCCESS : tt_compress_gpu_before(ctx, stream, q);
}

/* After the results: decompressed, and the error's last update marked, for
 * a read of the state (tt_ef_worker_to_host). */
static tutti_status_t after(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const tt_cqueued_t *q = arg;
    if (q->path != CPU_STAGED)
        TT_TRY(tt_compress_gpu_after(ctx, stream, q));
    tutti_status_t st = q->ef ? ctx->rt->event_record(q->ef->updated, stream) : TUTTI_SUCCESS;
    return st ? tt_device_error(ctx->comm, TT_COMPRESS_CALL, "recording the error's update", st)
              : TUTTI_SUCCESS;
}

static void release(void *arg)
{
    tt_cqueued_t *q = arg;
    if (q->ef)
        tt_ef_call_finished(q->ef);
    free(q->spans);
    free(q);
}

/* ---- queuing ---- */

tutti_status_t tt_compress_enqueue(tt_comm_t *comm, const tt_call_t *c, const tutti_compress_t *how,
                                   tutti_ef_state_t ef, void *stream)
{
    int device;
    TT_TRY(tt_device_refuse_capture(comm, TT_COMPRESS_CALL, stream));
    TT_TRY(tt_device_of(comm, c->send_on_device ? c->send : c->recv, TT_COMPRESS_CALL, &device));
    if (ef && ef->worker_dev && ef->device != device)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                             TT_COMPRESS_CALL
                             ": state keeps its error on GPU %d, but the buffers are on GPU %d",
                             ef->device, device);
    if (ef && !ef->worker_on_device)
        TT_TRY(tt_ef_to_gpu(comm, ef, device, stream));
    tt_cqueued_t *q = calloc(1, sizeof *q);
    tt_device_span_t *spans = calloc(2 * (size_t)comm->nranks + 2, sizeof *spans);
    if (!q || !spans) {
        free(q);
        free(spans);
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, TT_COMPRESS_CALL ": no memory to queue the call");
    }
    *q = (tt_cqueued_t){
        .call = *c, .how = *how, .ef = ef, .p = comm->nranks, .rank = comm->rank, .spans = spans};
    q->path = tt_compress_gpu_plan(c, how, q->p, &q->pl);
    size_t gpu_bytes, host_bytes;
    tt_compress_layout(q, &gpu_bytes, &host_bytes);
    if (ef)
        tt_ef_call_queued(ef); /* finished with q, once the proxy is done with it */
    tt_device_work_t work = {.name = TT_COMPRESS_CALL,
                             .begin = begin,
                             .before = before,
                             .run = run,
                             .after = after,
                             .in = q->spans,
                             .nin = q->nin,
                             .out = q->spans + q->nin,
                             .nout = q->nout,
                             .release = release,
                             .arg = q,
                             .host_bytes = host_bytes,
                             .gpu_bytes = gpu_bytes};
    return tt_device_enqueue(comm, device, &work, stream);
}
