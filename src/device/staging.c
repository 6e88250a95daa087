/* SPDX-License-Identifier: MIT */
/* Staged runs of collectives on device buffers (see staging.h); built with CUDA. */
#include <stdlib.h>

#include "device/layer.h"
#include "device/staging.h"

#define STAGE_ALIGN 256

tt_stage_layout_t tt_stage_layout(const tt_call_t *c)
{
    tt_stage_layout_t l = {0};
    if (c->in_place && c->send_on_device && c->recv_on_device) {
        /* In-place forms keep their layout: one span covers both buffers. */
        const char *s = c->send, *r = c->recv;
        const char *lo = s < r ? s : r,
                   *hi = s + c->in_bytes > r + c->out_bytes ? s + c->in_bytes : r + c->out_bytes;
        return (tt_stage_layout_t){(size_t)(hi - lo), (size_t)(s - lo), (size_t)(r - lo)};
    }
    if (c->send_on_device)
        l.bytes = (c->in_bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    if (c->recv_on_device) {
        l.recv_off = l.bytes;
        l.bytes += c->out_bytes;
    }
    return l;
}

tt_call_t tt_stage_stand_in(const tt_call_t *c, const tt_stage_layout_t *l, void *pinned)
{
    tt_call_t host = *c;
    if (c->send_on_device)
        host.send = (char *)pinned + l->send_off;
    if (c->recv_on_device)
        host.recv = (char *)pinned + l->recv_off;
    return host;
}

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>

/* A staged call in flight: slice by slice, inputs in on the copies stream
 * and results out on the results stream while the engine runs the others. */
typedef struct {
    tutti_comm_t comm;
    tt_device_layer_t *d;
    const tt_device_ctx_t *ctx;
    const char *name;
    const tt_call_t *dev, *host; /* the caller's buffers, their stand-ins */
    cudaError_t failed;          /* the first copy that failed */
} staging_t;

static char *piece_at(const tt_call_t *c, tt_piece_t p)
{
    return (char *)(p.buf == TT_BUF_INPUT ? c->send : c->recv) + p.off;
}

/* The events outlive the call, for the next; one per slice. */
static cudaError_t slice_event(tt_device_layer_t *d, int slice)
{
    if (slice < d->nfetched)
        return cudaSuccess;
    cudaEvent_t *grown = realloc(d->fetched, (size_t)(slice + 1) * sizeof *grown);
    if (!grown)
        return cudaErrorMemoryAllocation;
    d->fetched = grown;
    cudaError_t e = cudaSuccess;
    for (; !e && d->nfetched <= slice; d->nfetched++)
        e = cudaEventCreateWithFlags(&grown[d->nfetched], cudaEventDisableTiming);
    return e;
}

static void fetch_slice(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    staging_t *sg = arg;
    cudaStream_t copies = sg->ctx->copies;
    cudaError_t e = sg->failed ? sg->failed : slice_event(sg->d, slice);
    for (int i = 0; i < n && !e; i++)
        e = cudaMemcpyAsync(piece_at(sg->host, pieces[i]), piece_at(sg->dev, pieces[i]), pieces[i].bytes,
                            cudaMemcpyDeviceToHost, copies);
    if (!e)
        e = cudaEventRecord(((cudaEvent_t *)sg->d->fetched)[slice], copies);
    sg->failed = e;
}

static int slice_fetched(void *arg, int slice)
{
    staging_t *sg = arg;
    cudaError_t e = sg->failed ? sg->failed : cudaEventQuery(((cudaEvent_t *)sg->d->fetched)[slice]);
    if (e == cudaSuccess || e == cudaErrorNotReady)
        return e == cudaSuccess;
    sg->failed = e;
    tt_device_error(sg->comm, sg->name, "copying between the device buffers and the staging", e);
    return -1;
}

static void deliver_slice(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    (void)slice;
    staging_t *sg = arg;
    for (int i = 0; i < n && !sg->failed; i++)
        sg->failed = cudaMemcpyAsync(piece_at(sg->dev, pieces[i]), piece_at(sg->host, pieces[i]),
                                     pieces[i].bytes, cudaMemcpyHostToDevice, sg->ctx->results);
}

/* An average is divided after the engine, so its results go back whole. */
tutti_status_t tt_stage_run(tutti_comm_t comm, const tt_device_ctx_t *ctx, const tt_call_t *c,
                            tt_call_t *host, uint64_t seq, const char *name)
{
    int divides = c->op == TUTTI_AVG && c->out_bytes && c->coll != TT_COLL_BROADCAST;
    staging_t sg = {.comm = comm,
                    .d = tt_comm_layer(comm, TT_LAYER_DEVICE),
                    .ctx = ctx,
                    .name = name,
                    .dev = c,
                    .host = host};
    tt_stage_hooks_t hooks = {.fetch_bufs = (c->send_on_device ? 1u << TT_BUF_INPUT : 0) |
                                            (c->in_place && c->recv_on_device ? 1u << TT_BUF_OUTPUT : 0),
                              .deliver_bufs = c->recv_on_device && !divides ? 1u << TT_BUF_OUTPUT : 0,
                              .fetch = fetch_slice,
                              .fetched = slice_fetched,
                              .deliver = deliver_slice,
                              .arg = &sg};
    host->stage = &hooks;
    tutti_status_t st = tt_coll_run_at(comm, host, seq, NULL);
    /* Fetches the engine did not wait for still write the staging. */
    cudaError_t e = cudaStreamSynchronize(ctx->copies);
    if (!e)
        e = cudaStreamSynchronize(ctx->results);
    if (st)
        return st;
    if (!e)
        e = sg.failed;
    if (!e && c->recv_on_device && !hooks.deliver_bufs) {
        e = cudaMemcpyAsync(c->recv, host->recv, c->out_bytes, cudaMemcpyHostToDevice, ctx->results);
        if (!e)
            e = cudaStreamSynchronize(ctx->results);
    }
    return e ? tt_device_error(comm, name, "copying between the device buffers and the staging", e)
             : TUTTI_SUCCESS;
}
#endif
