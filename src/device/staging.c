/* SPDX-License-Identifier: MIT */
/* Staged runs of collectives on device buffers (see staging.h). */
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

/* ---- through the caller's stream: the proxy touches host memory only ---- */

int tt_stage_in(const tt_device_ctx_t *ctx, const tt_call_t *c, const tt_stage_layout_t *l, void *stream)
{
    char *pinned = ctx->pinned;
    if (c->in_place && c->send_on_device && c->recv_on_device) { /* one span holds both */
        const char *lo = (const char *)c->send < (const char *)c->recv ? c->send : c->recv;
        return l->bytes ? ctx->rt->copy(pinned, lo, l->bytes, stream) : 0;
    }
    return c->send_on_device && c->in_bytes
               ? ctx->rt->copy(pinned + l->send_off, c->send, c->in_bytes, stream)
               : 0;
}

int tt_stage_out(const tt_device_ctx_t *ctx, const tt_call_t *c, const tt_stage_layout_t *l, void *stream)
{
    char *pinned = ctx->pinned;
    return c->recv_on_device && c->out_bytes
               ? ctx->rt->copy(c->recv, pinned + l->recv_off, c->out_bytes, stream)
               : 0;
}

/* ---- by the proxy, slice by slice ---- */

/* A staged call in flight: slice by slice, inputs in on the copies stream
 * and results out on the results stream while the engine runs the others. */
typedef struct {
    tutti_comm_t comm;
    tt_device_layer_t *d;
    const tt_device_ctx_t *ctx;
    const char *name;
    const tt_call_t *dev, *host; /* the caller's buffers, their stand-ins */
    int failed;                  /* the first copy that failed */
} staging_t;

static char *piece_at(const tt_call_t *c, tt_piece_t p)
{
    return (char *)(p.buf == TT_BUF_INPUT ? c->send : c->recv) + p.off;
}

/* The events outlive the call, for the next; one per slice. */
static int slice_event(tt_device_layer_t *d, const tt_device_rt_t *rt, int slice)
{
    if (slice < d->nfetched)
        return 0;
    void **grown = realloc(d->fetched, (size_t)(slice + 1) * sizeof *grown);
    if (!grown)
        return -1;
    d->fetched = grown;
    int e = 0;
    for (; !e && d->nfetched <= slice; d->nfetched++)
        e = rt->event_create(&grown[d->nfetched]);
    return e;
}

static void fetch_slice(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    staging_t *sg = arg;
    const tt_device_rt_t *rt = sg->ctx->rt;
    int e = sg->failed ? sg->failed : slice_event(sg->d, rt, slice);
    for (int i = 0; i < n && !e; i++)
        e = rt->copy(piece_at(sg->host, pieces[i]), piece_at(sg->dev, pieces[i]), pieces[i].bytes,
                     sg->ctx->copies);
    if (!e)
        e = rt->event_record(((void **)sg->d->fetched)[slice], sg->ctx->copies);
    sg->failed = e;
}

static int slice_fetched(void *arg, int slice)
{
    staging_t *sg = arg;
    int done = 0,
        e = sg->failed ? sg->failed : sg->ctx->rt->event_query(((void **)sg->d->fetched)[slice], &done);
    if (!e)
        return done;
    sg->failed = e;
    if (e > 0)
        tt_device_error(sg->comm, sg->name, "copying between the device buffers and the staging", e);
    else
        tt_comm_error(sg->comm, TUTTI_ERR_NO_MEMORY, "%s: no memory for the staging's events", sg->name);
    return -1;
}

static void deliver_slice(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    (void)slice;
    staging_t *sg = arg;
    for (int i = 0; i < n && !sg->failed; i++)
        sg->failed = sg->ctx->rt->copy(piece_at(sg->dev, pieces[i]), piece_at(sg->host, pieces[i]),
                                       pieces[i].bytes, sg->ctx->results);
}

/* An average is divided after the engine, so its results go back whole. */
tutti_status_t tt_stage_run(tutti_comm_t comm, const tt_device_ctx_t *ctx, const tt_call_t *c,
                            tt_call_t *host, uint64_t seq, const char *name)
{
    const tt_device_rt_t *rt = ctx->rt;
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
    int e = rt->stream_sync(ctx->copies);
    if (!e)
        e = rt->stream_sync(ctx->results);
    if (st)
        return st;
    if (!e)
        e = sg.failed;
    if (!e && c->recv_on_device && !hooks.deliver_bufs) {
        e = rt->copy(c->recv, host->recv, c->out_bytes, ctx->results);
        if (!e)
            e = rt->stream_sync(ctx->results);
    }
    if (e < 0)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory for the staging's events", name);
    return e ? tt_device_error(comm, name, "copying between the device buffers and the staging", e)
             : TUTTI_SUCCESS;
}
