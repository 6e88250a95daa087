/* SPDX-License-Identifier: MIT */
/*
 * The worker error's copy on the GPU. From a state's first device call on,
 * the error lives on the GPU: moving it there is a staged step of its own,
 * queued on the caller's stream before the call, so that it follows
 * whatever earlier queued calls did to the host copy. A host call reads it
 * back first; the state's end frees it.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "compress/allreduce.h"
#include "device/queue.h"
#include "device/rt.h"

typedef struct {
    tutti_ef_state_t ef;
    tt_device_span_t span;
} move_t;

/* On the caller's stream: the error's GPU copy (the first time), allocated
 * in stream order. */
static tutti_status_t move_before(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    move_t *m = arg;
    tutti_ef_state_t ef = m->ef;
    tutti_status_t st = TUTTI_SUCCESS;
    if (!ef->worker_dev) {
        st =
            ctx->rt->dev_alloc((ef->count ? ef->count : 1) * sizeof(float), stream, (void **)&ef->worker_dev);
        if (!st && (st = ctx->rt->event_create(&ef->updated)) != TUTTI_SUCCESS) {
            ctx->rt->dev_free(ef->worker_dev, stream);
            ef->worker_dev = NULL;
        }
        ef->device = ctx->device;
    }
    m->span.dev = ef->worker_dev;
    return st ? tt_device_error(ctx->comm, TT_COMPRESS_CALL, "allocating the error on the GPU", st)
              : TUTTI_SUCCESS;
}

/* On the proxy, after every earlier call: the host error as it is now. */
static tutti_status_t move_run(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *arg)
{
    (void)comm;
    move_t *m = arg;
    memcpy(ctx->host, m->ef->worker, m->span.bytes);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_ef_to_gpu(tt_comm_t *comm, tutti_ef_state_t ef, int device, void *stream)
{
    move_t *m = calloc(1, sizeof *m);
    if (!m)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY,
                             TT_COMPRESS_CALL ": no memory to queue the error's move");
    *m = (move_t){.ef = ef, .span = {.bytes = ef->count * sizeof(float)}};
    tt_device_work_t work = {.name = TT_COMPRESS_CALL,
                             .before = move_before,
                             .run = move_run,
                             .out = &m->span,
                             .nout = 1,
                             .release = free,
                             .arg = m,
                             .host_bytes = m->span.bytes};
    TT_TRY(tt_device_enqueue(comm, device, &work, stream));
    ef->worker_on_device = 1;
    return TUTTI_SUCCESS;
}

/* A host call's read, once the GPU's work on the error is done; blocking,
 * as host calls are. */
tutti_status_t tt_ef_worker_to_host(tutti_ef_state_t ef)
{
    const tt_device_rt_t *rt = tt_device_runtime();
    if (!ef->worker_on_device || !rt)
        return TUTTI_SUCCESS;
    int prev, mode;
    tutti_status_t st = rt->enter(ef->device, &prev);
    if (st)
        return tt_device_error(NULL, "error feedback", "making the error's GPU current", st);
    int relaxed = rt->relax(&mode) == TUTTI_SUCCESS;
    st = rt->event_sync(ef->updated);
    if (!st && ef->count)
        st = rt->copy(ef->worker, ef->worker_dev, ef->count * sizeof(float), NULL);
    if (!st)
        st = rt->stream_sync(NULL);
    if (relaxed)
        rt->unrelax(mode);
    rt->leave(prev);
    if (st)
        return tt_device_error(NULL, "error feedback", "copying the error from the GPU", st);
    ef->worker_on_device = 0;
    return TUTTI_SUCCESS;
}

void tt_ef_free_device(tutti_ef_state_t ef)
{
    const tt_device_rt_t *rt = tt_device_runtime();
    if (!rt || !ef->worker_dev)
        return;
    int prev;
    if (rt->enter(ef->device, &prev) != TUTTI_SUCCESS)
        return; /* no GPU to free it on: it stays */
    if (ef->updated)
        rt->event_sync(ef->updated); /* the last call's work on it is done */
    rt->dev_free(ef->worker_dev, NULL);
    if (ef->updated)
        rt->event_destroy(ef->updated);
    rt->leave(prev);
    ef->worker_dev = ef->updated = NULL;
    ef->worker_on_device = 0;
}
