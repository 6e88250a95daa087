/* SPDX-License-Identifier: MIT */
/*
 * A batch of sends and receives (tt_coll_run_batch) with device buffers,
 * staged through the caller's stream as any staged call is: the device
 * buffers that are sent go to the host stand-in before the proxy runs the
 * batch there (host memory only), and what arrived goes back after. Whole
 * buffers are staged (no slice overlap): batches serve NCCL's grouped
 * point-to-point calls, which are mostly small. The calls' sequence
 * numbers are taken on the caller's thread, in call order.
 */
#include <stdlib.h>

#include "device/device_coll.h"
#include "device/queue.h"

#define STAGE_ALIGN 256

typedef struct {
    int n;
    tt_call_t *calls;        /* the caller's, then their stand-ins after them */
    uint64_t *seqs;          /* each call's number */
    tt_device_span_t *spans; /* the sends' (nin of them), then the receives' */
    int nin, nout;
    size_t bytes;
} batch_t;

static void batch_free(void *arg)
{
    batch_t *b = arg;
    free(b->calls);
    free(b->seqs);
    free(b->spans);
    free(b);
}

static int staged(const tt_call_t *c)
{
    return c->coll == TT_COLL_SEND ? c->send_on_device : c->recv_on_device;
}

static tutti_status_t begin_batch(tutti_comm_t comm, void *arg, int *direct)
{
    batch_t *b = arg;
    *direct = 0;
    return tt_coll_batch_begin(comm, b->calls, b->n, b->seqs);
}

/* On the proxy thread, once the sends are in the stand-in. */
static tutti_status_t run_batch(tutti_comm_t comm, const tt_device_ctx_t *ctx, void *arg)
{
    batch_t *b = arg;
    tt_call_t *dev = b->calls, *host = b->calls + b->n;
    for (int i = 0, in = 0, out = 0; i < b->n; i++) {
        host[i] = dev[i];
        if (!staged(&dev[i]))
            continue;
        int sends = dev[i].coll == TT_COLL_SEND;
        const tt_device_span_t *s = sends ? &b->spans[in++] : &b->spans[b->nin + out++];
        if (sends)
            host[i].send = ctx->host + s->host_off;
        else
            host[i].recv = ctx->host + s->host_off;
    }
    return tt_coll_run_batch_at(comm, host, b->n, b->seqs);
}

/* Each staged buffer's place in the stand-in: the sends', then the receives'. */
static void place(batch_t *b)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < b->n; i++) {
            const tt_call_t *c = &b->calls[i];
            if (!staged(c) || (c->coll == TT_COLL_SEND) != (pass == 0))
                continue;
            size_t len = pass == 0 ? c->in_bytes : c->out_bytes;
            b->spans[pass == 0 ? b->nin++ : b->nin + b->nout++] =
                (tt_device_span_t){.dev = pass == 0 ? c->send : c->recv, .host_off = b->bytes, .bytes = len};
            b->bytes += (len + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
        }
}

tutti_status_t tt_device_batch_enqueue(tutti_comm_t comm, const tt_call_t *calls, int n, void *stream,
                                       const char *name)
{
    TT_TRY(tt_device_refuse_capture(comm, name, stream));
    batch_t *b = calloc(1, sizeof *b);
    if (b) {
        b->calls = calloc(2 * (size_t)n, sizeof *b->calls);
        b->seqs = calloc((size_t)n, sizeof *b->seqs);
        b->spans = calloc((size_t)n, sizeof *b->spans);
    }
    if (!b || !b->calls || !b->seqs || !b->spans) {
        if (b)
            batch_free(b);
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue a batch of %d calls", name,
                             n);
    }
    b->n = n;
    const void *first = NULL;
    for (int i = 0; i < n; i++) {
        b->calls[i] = calls[i];
        if (!first && staged(&calls[i]))
            first = calls[i].coll == TT_COLL_SEND ? calls[i].send : calls[i].recv;
    }
    place(b);
    int device;
    tutti_status_t st = tt_device_of(comm, first, name, &device);
    if (st) {
        batch_free(b);
        return st;
    }
    tt_device_work_t work = {.name = name,
                             .begin = begin_batch,
                             .run = run_batch,
                             .in = b->spans,
                             .nin = b->nin,
                             .out = b->spans + b->nin,
                             .nout = b->nout,
                             .release = batch_free,
                             .arg = b,
                             .host_bytes = b->bytes};
    return tt_device_enqueue(comm, device, &work, stream);
}
