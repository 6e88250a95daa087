/* SPDX-License-Identifier: MIT */
/* Plain collectives on device buffers, queued as closures (see device_coll.h). */
#include <stdlib.h>

#include "comm/error.h"
#include "device/device_coll.h"
#include "device/direct_run.h"
#include "device/memkind.h"
#include "device/queue.h"
#include "device/staging.h"

tutti_status_t tt_device_classify(tt_comm_t *comm, tt_call_t *c, const char *name)
{
    c->send_on_device = c->in_bytes && tt_mem_kind(c->send) == TT_MEM_DEVICE;
    c->recv_on_device = c->out_bytes && tt_mem_kind(c->recv) == TT_MEM_DEVICE;
    char why[160];
    if ((c->send_on_device || c->recv_on_device) && tt_device_usable(why, sizeof why))
        return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: %s is CUDA device memory, but %s", name,
                             c->send_on_device ? "sendbuf" : "recvbuf", why);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_device_wait_turn(tt_comm_t *comm, const char *name, void *stream)
{
    if (stream)
        TT_TRY(tt_device_stream_wait(comm, name, stream));
    return tt_device_drain(comm);
}

tutti_status_t tt_device_route(tt_comm_t *comm, tt_call_t *c, const char *name,
                               const tt_device_route_t *route, void *stream)
{
    TT_TRY(tt_coll_validate(comm, c, name));
    TT_TRY(tt_device_classify(comm, c, name));
    if (c->send_on_device || c->recv_on_device)
        return route->enqueue(comm, c, route->arg, stream);
    TT_TRY(tt_device_wait_turn(comm, name, stream));
    return route->run(comm, c, route->arg);
}

/* A queued collective: the caller's call, its place in the stand-in,
 * whether this rank could run it directly, and its sequence number. */
typedef struct {
    tt_call_t call;
    tt_stage_layout_t layout;
    tt_device_span_t in, out;
    int direct_ok;
    uint64_t seq;
} plain_t;

/* On the caller's thread: the call's number, and whether every rank runs
 * it directly. */
static tutti_status_t begin_plain(tt_comm_t *comm, void *arg, int *direct)
{
    plain_t *op = arg;
    return tt_coll_begin(comm, &op->call, op->direct_ok, &op->seq, direct);
}

static tutti_status_t put_plain(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const plain_t *op = arg;
    return tt_direct_put(comm, ctx, &op->call, stream);
}

/* On the proxy thread: the host collective on the stand-in. */
static tutti_status_t run_plain(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *arg)
{
    const plain_t *op = arg;
    tt_call_t host = tt_stage_stand_in(&op->call, &op->layout, ctx->host);
    return tt_coll_run_at(comm, &host, op->seq, NULL);
}

static int is_p2p(const tt_call_t *c)
{
    return c->coll == TT_COLL_SEND || c->coll == TT_COLL_RECV;
}

tutti_status_t tt_device_coll_enqueue(tt_comm_t *comm, const tt_call_t *c, void *stream)
{
    const char *name = tt_coll_name(c->coll);
    if (is_p2p(c)) /* a batch of one: direct where both sides can */
        return tt_device_batch_enqueue(comm, c, 1, stream, name);
    int device;
    TT_TRY(tt_device_refuse_capture(comm, name, stream));
    TT_TRY(tt_device_of(comm, c->send_on_device ? c->send : c->recv, name, &device));
    plain_t *op = calloc(1, sizeof *op);
    if (!op)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue the call", name);
    op->call = *c;
    op->layout = tt_stage_layout(c);
    int nin, nout;
    tt_stage_spans(c, &op->layout, &op->in, &nin, &op->out, &nout);
    /* A direct run needs every buffer the call uses on the GPU; the first
     * such call binds the device transport (publishing this rank's
     * window), and every one opens the windows peers published since,
     * here, before anything of this call is on the stream. */
    int ready = 0;
    tutti_status_t st = TUTTI_SUCCESS;
    if ((!c->in_bytes || c->send_on_device) && (!c->out_bytes || c->recv_on_device))
        st = tt_direct_prepare(comm, device, &ready);
    if (st) {
        free(op);
        return tt_comm_error(comm, st, "%s: opening the peers' windows", name);
    }
    op->direct_ok = ready;
    tt_device_work_t work = {.name = name,
                             .begin = begin_plain,
                             .direct = put_plain,
                             .run = run_plain,
                             .in = &op->in,
                             .out = &op->out,
                             .nin = nin,
                             .nout = nout,
                             .release = free,
                             .arg = op,
                             .host_bytes = op->layout.bytes,
                             .gpu_bytes = ready ? tt_direct_scratch_bytes(comm) : 0};
    return tt_device_enqueue(comm, device, &work, stream);
}
