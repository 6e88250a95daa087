/* SPDX-License-Identifier: MIT */
/* Plain collectives on device buffers, queued as closures (see device_coll.h). */
#include <stdlib.h>

#include "device/device_coll.h"
#include "device/direct_run.h"
#include "device/memkind.h"
#include "device/queue.h"
#include "device/staging.h"

tutti_status_t tt_device_classify(tutti_comm_t comm, tt_call_t *c, const char *name)
{
    c->send_on_device = c->in_bytes && tt_mem_kind(c->send) == TT_MEM_DEVICE;
    c->recv_on_device = c->out_bytes && tt_mem_kind(c->recv) == TT_MEM_DEVICE;
    char why[160];
    if ((c->send_on_device || c->recv_on_device) && !tt_device_supported(why, sizeof why))
        return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: %s is CUDA device memory, but %s", name,
                             c->send_on_device ? "sendbuf" : "recvbuf", why);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_device_wait_turn(tutti_comm_t comm, const char *name, void *stream)
{
    if (stream)
        TT_TRY(tt_device_stream_wait(comm, name, stream));
    return tt_device_drain(comm);
}

/* A queued collective: the caller's call, where it sits in the staging,
 * and whether this rank could run it directly. */
typedef struct {
    tt_call_t call;
    tt_stage_layout_t layout;
    int direct_ok;
} plain_t;

/* On the proxy thread. A call that could not go direct was staged through
 * the caller's stream: its device inputs are in the staging already, and
 * its results go back after the gate. Else directly on the device buffers
 * when every rank can, or staged here, slice by slice. */
static tutti_status_t run_plain(tutti_comm_t comm, const tt_device_ctx_t *ctx, void *arg)
{
    const plain_t *op = arg;
    const tt_call_t *c = &op->call;
    const char *name = tt_coll_name(c->coll);
    uint64_t seq;
    int direct;
    TT_TRY(tt_coll_begin(comm, c, op->direct_ok, &seq, &direct));
    tt_call_t host = tt_stage_stand_in(c, &op->layout, ctx->pinned);
    if (!op->direct_ok)
        return tt_coll_run_at(comm, &host, seq, NULL);
    if (!direct)
        return tt_stage_run(comm, ctx, c, &host, seq, name);
    return tt_direct_run(comm, c, seq);
}

static int plain_in(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const plain_t *op = arg;
    return op->direct_ok ? 0 : tt_stage_in(ctx, &op->call, &op->layout, stream);
}

static int plain_out(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const plain_t *op = arg;
    return op->direct_ok ? 0 : tt_stage_out(ctx, &op->call, &op->layout, stream);
}

tutti_status_t tt_device_coll_enqueue(tutti_comm_t comm, const tt_call_t *c, void *stream)
{
    const char *name = tt_coll_name(c->coll);
    int device;
    TT_TRY(tt_device_refuse_capture(comm, name, stream));
    TT_TRY(tt_device_of(comm, c->send_on_device ? c->send : c->recv, name, &device));
    plain_t *op = calloc(1, sizeof *op);
    if (!op)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue the call", name);
    op->call = *c;
    op->layout = tt_stage_layout(c);
    /* Direct runs need every buffer the call uses on the GPU, and the
     * proxy's own GPU work, which one shared hardware queue would hold up
     * behind the gate; the first such call binds the device transport
     * (publishing this rank's FIFO), and every one opens the FIFOs peers
     * published since, here, before any gate of this call exists. */
    op->direct_ok = (!c->in_bytes || c->send_on_device) && (!c->out_bytes || c->recv_on_device) &&
                    !tt_device_one_hw_queue() && tt_direct_prepare(comm, device);
    tt_device_work_t work = {.name = name,
                             .run = run_plain,
                             .stage_in = plain_in,
                             .stage_out = plain_out,
                             .release = free,
                             .arg = op,
                             .pinned_bytes = op->layout.bytes};
    return tt_device_enqueue(comm, device, &work, stream);
}
