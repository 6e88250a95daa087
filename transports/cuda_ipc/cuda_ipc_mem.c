/* SPDX-License-Identifier: MIT */
/* The engine's access to a bound rank's GPU: the backend's kernels and scratch. */
#include "transports/cuda_ipc/cuda_ipc.h"

static int mem_copy(void *arg, void *dst, const void *src, size_t bytes)
{
    tt_ipc_ctx_t *ctx = arg;
    return ctx->be->copy(ctx->dev, dst, src, bytes);
}

static int mem_reduce(void *arg, void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                      tutti_op_t op)
{
    tt_ipc_ctx_t *ctx = arg;
    return ctx->be->reduce(ctx->dev, dst, a, b, count, dtype, op);
}

static int mem_scratch(void *arg, size_t bytes, void **out)
{
    tt_ipc_ctx_t *ctx = arg;
    return ctx->be->scratch(ctx->dev, bytes, out);
}

static int mem_avg_finish(void *arg, void *buf, size_t count, tutti_dtype_t dtype, int nranks)
{
    tt_ipc_ctx_t *ctx = arg;
    return ctx->be->avg_finish(ctx->dev, buf, count, dtype, nranks);
}

void tt_ipc_mem_init(tt_ipc_ctx_t *ctx)
{
    ctx->mem = (tt_mem_ops_t){.copy = mem_copy,
                              .reduce = mem_reduce,
                              .scratch = mem_scratch,
                              .avg_finish = mem_avg_finish,
                              .error = ctx->be->error,
                              .arg = ctx};
}

const tt_mem_ops_t *tt_ipc_mem(void *ctxp)
{
    tt_ipc_ctx_t *ctx = ctxp;
    return ctx->fifo ? &ctx->mem : NULL;
}
