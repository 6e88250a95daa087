/* SPDX-License-Identifier: MIT */
/*
 * A batch of sends and receives (tt_coll_run_batch) with device buffers,
 * queued on the caller's stream like any device call, and staged through
 * it as calls that cannot go direct are: the device buffers that are sent
 * are copied into pinned stand-ins before the gate, the proxy runs the
 * batch on the host stand-ins (host memory only), and what arrived is
 * copied back after the gate. Whole buffers are staged (no slice overlap):
 * batches serve NCCL's grouped point-to-point calls, which are mostly
 * small.
 */
#include <stdlib.h>

#include "device/device_coll.h"
#include "device/queue.h"

#define STAGE_ALIGN 256

typedef struct {
    int n;
    const char *name;
    tt_call_t *calls; /* the caller's, then their stand-ins after them */
    size_t *offs;     /* each device buffer's place in the pinned memory */
    size_t bytes;
} batch_t;

static void batch_free(void *arg)
{
    batch_t *b = arg;
    free(b->calls);
    free(b->offs);
    free(b);
}

static int staged(const tt_call_t *c)
{
    return c->coll == TT_COLL_SEND ? c->send_on_device : c->recv_on_device;
}

/* On the caller's stream, before the gate: the sends into the staging. */
static int batch_in(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const batch_t *b = arg;
    int e = 0;
    for (int i = 0; i < b->n && !e; i++)
        if (staged(&b->calls[i]) && b->calls[i].coll == TT_COLL_SEND && b->calls[i].in_bytes)
            e = ctx->rt->copy((char *)ctx->pinned + b->offs[i], b->calls[i].send, b->calls[i].in_bytes,
                              stream);
    return e;
}

/* After the gate: what arrived, out of the staging. */
static int batch_out(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const batch_t *b = arg;
    int e = 0;
    for (int i = 0; i < b->n && !e; i++)
        if (staged(&b->calls[i]) && b->calls[i].coll == TT_COLL_RECV && b->calls[i].out_bytes)
            e = ctx->rt->copy(b->calls[i].recv, (char *)ctx->pinned + b->offs[i], b->calls[i].out_bytes,
                              stream);
    return e;
}

/* On the proxy thread, once the sends are in the staging. */
static tutti_status_t run_batch(tutti_comm_t comm, const tt_device_ctx_t *ctx, void *arg)
{
    batch_t *b = arg;
    tt_call_t *dev = b->calls, *host = b->calls + b->n;
    for (int i = 0; i < b->n; i++) {
        host[i] = dev[i];
        if (!staged(&dev[i]))
            continue;
        char *stand_in = (char *)ctx->pinned + b->offs[i];
        if (dev[i].coll == TT_COLL_SEND)
            host[i].send = stand_in;
        else
            host[i].recv = stand_in;
    }
    return tt_coll_run_batch(comm, host, b->n);
}

tutti_status_t tt_device_batch_enqueue(tutti_comm_t comm, const tt_call_t *calls, int n, void *stream,
                                       const char *name)
{
    TT_TRY(tt_device_refuse_capture(comm, name, stream));
    batch_t *b = calloc(1, sizeof *b);
    if (b) {
        b->calls = calloc(2 * (size_t)n, sizeof *b->calls);
        b->offs = calloc((size_t)n, sizeof *b->offs);
    }
    if (!b || !b->calls || !b->offs) {
        if (b)
            batch_free(b);
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue a batch of %d calls", name,
                             n);
    }
    b->n = n;
    b->name = name;
    const void *first = NULL;
    for (int i = 0; i < n; i++) {
        b->calls[i] = calls[i];
        if (!staged(&calls[i]))
            continue;
        if (!first)
            first = calls[i].coll == TT_COLL_SEND ? calls[i].send : calls[i].recv;
        b->offs[i] = b->bytes;
        size_t len = calls[i].coll == TT_COLL_SEND ? calls[i].in_bytes : calls[i].out_bytes;
        b->bytes += (len + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    }
    int device;
    tutti_status_t st = tt_device_of(comm, first, name, &device);
    if (st) {
        batch_free(b);
        return st;
    }
    tt_device_work_t work = {.name = name,
                             .run = run_batch,
                             .stage_in = batch_in,
                             .stage_out = batch_out,
                             .release = batch_free,
                             .arg = b,
                             .pinned_bytes = b->bytes};
    return tt_device_enqueue(comm, device, &work, stream);
}
