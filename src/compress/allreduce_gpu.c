/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce's GPU path (built with CUDA): with both buffers
 * on the GPU, the quantizers and exact top-k compress with the CUDA kernels
 * on the caller's stream before the proxy's part and decompress after it,
 * so only compressed bytes cross to the host (allreduce_queue.c queues the
 * call and runs the exchange). It gives the CPU path's results and error
 * state bit for bit. Sampled top-k has none: the host would have to wait
 * for the GPU's count, which is all queued at call time.
 */
#include <cuda_runtime_api.h>

#include "comm/error.h"
#include "compress/allreduce_gpu.h"
#include "core/cuda_why.h"
#include "cuda/kernels.h"

#define PITCH 16 /* device copies of encoded chunks start 16-byte aligned (the kernels need 4) */

static size_t round_up(size_t b, size_t to)
{
    return (b + to - 1) / to * to;
}

/* The path and its pieces, the user's buffers taken as they are. */
static tt_cpath_t plan_path(const tt_call_t *c, const tutti_compress_t *how, int p, tt_cplan_t *pl)
{
    size_t n = c->count, f = n * sizeof(float), P = (size_t)p;
    if (how->kind == TUTTI_COMPRESS_NONE || !n || !c->send_on_device || !c->recv_on_device ||
        (how->kind == TUTTI_COMPRESS_TOPK && how->sampled))
        return CPU_STAGED;
    if (c->dtype != TUTTI_FP32)
        pl->dev[D_G32] = pl->dev[D_OUT32] = f;
    if (how->kind == TUTTI_COMPRESS_TOPK) {
        pl->k = tt_compress_topk_k(how, n);
        pl->dev[D_X] = f;
        if (tt_compress_topk_costly(pl->k, n, p)) {
            pl->host[H_MINE] = f;
            return GPU_DENSE;
        }
        pl->dev[D_IDX] = pl->k * sizeof(uint32_t);
        pl->dev[D_PAIRS] = pl->host[H_MINE] = pl->k * sizeof(tt_pair_t);
        pl->dev[D_ALL] = pl->host[H_ALL] = pl->k * P * sizeof(tt_pair_t);
        pl->dev[D_SCRATCH] = tt_cuda_topk_scratch(n);
        return GPU_TOPK;
    }
    size_t largest = tt_block_count(n, p, 0);
    pl->q =
        (tt_quant_t){.kind = how->kind, .block = how->block, .rounding = how->rounding, .seed = how->seed};
    pl->slot = tt_quant_bytes(&pl->q, largest);
    pl->pitch = round_up(pl->slot, PITCH);
    pl->dev[D_PAIRS] = pl->dev[D_ALL] = pl->pitch * P; /* the encoded chunks: sent, received */
    pl->host[H_MINE] = pl->host[H_ALL] = pl->slot * P;
    pl->host[H_SERVER] = (largest + 1) * sizeof(float);
    pl->dev[D_SCRATCH] = tt_cuda_quant_scratch(&pl->q, largest);
    return GPU_QUANT;
}

tt_cpath_t tt_compress_gpu_plan(const tt_call_t *c, const tutti_compress_t *how, int p, tt_cplan_t *pl)
{
    tt_cpath_t path = plan_path(c, how, p, pl);
    if (path == CPU_STAGED)
        return path;
    /* The kernels load and store whole elements (a GPU faults on a
     * misaligned address); a user's buffer that is not aligned to its
     * element goes through an aligned copy (copies take any address). The
     * dense path's fp32 output is the proxy's copy alone. */
    size_t e = tutti_dtype_size(c->dtype), bytes = c->count * e;
    int fp32 = c->dtype == TUTTI_FP32;
    pl->stage_in = (uintptr_t)c->send % e != 0;
    pl->stage_out = (uintptr_t)c->recv % e != 0 && !(fp32 && path == GPU_DENSE);
    if (pl->stage_in)
        pl->dev[fp32 ? D_G32 : D_IN] = bytes;
    if (pl->stage_out)
        pl->dev[fp32 ? D_OUT32 : D_IN] = bytes;
    return path;
}

/* A failed launch or copy on the caller's stream: said, with what it was. */
static tutti_status_t said_cuda(tt_comm_t *comm, const char *what, cudaError_t e)
{
    char words[96];
    tutti_status_t st = tt_cuda_failed((int)e, words, sizeof words);
    return tt_comm_error(comm, st, "tutti_allreduce_compressed: %s: %s", what, words);
}

#define CU_TRY(expr, what)                                                                                   \
    do {                                                                                                     \
        cudaError_t cu_err_ = (cudaError_t)(expr);                                                           \
        if (cu_err_)                                                                                         \
            return said_cuda(ctx->comm, what, cu_err_);                                                      \
    } while (0)

/* Where the kernels leave the fp32 result. */
static float *output32(const tt_cqueued_t *q, const tt_device_ctx_t *ctx)
{
    return q->pl.dev[D_OUT32] ? (float *)(ctx->gpu + q->doff[D_OUT32]) : q->call.recv;
}

/* The error keeps what the codes lose, or what top-k does not send. */
tutti_status_t tt_compress_gpu_before(const tt_device_ctx_t *ctx, void *stream, const tt_cqueued_t *q)
{
    cudaStream_t s = stream;
    size_t n = q->call.count;
    float *e = q->ef ? q->ef->worker_dev : NULL;
    const void *in = q->call.send;
    int fp32 = q->call.dtype == TUTTI_FP32;
    if (q->pl.stage_in) {
        void *to = ctx->gpu + q->doff[fp32 ? D_G32 : D_IN];
        CU_TRY(cudaMemcpyAsync(to, in, n * tutti_dtype_size(q->call.dtype), cudaMemcpyDeviceToDevice, s),
               "aligning the input");
        in = to;
    }
    const float *g = in;
    if (!fp32) {
        g = (float *)(ctx->gpu + q->doff[D_G32]);
        CU_TRY(tt_cuda_to_f32(in, q->call.dtype, n, (float *)g, s), "widening the input");
    }
    if (q->path == GPU_QUANT) {
        for (int j = 0; j < q->p; j++) {
            size_t off = tt_block_off(n, q->p, j);
            CU_TRY(
                tt_cuda_quant_encode(&q->pl.q, g + off, e ? e + off : NULL, tt_block_count(n, q->p, j),
                                     q->rng * 2 * (uint64_t)q->p + (uint64_t)j,
                                     (unsigned char *)ctx->gpu + q->doff[D_PAIRS] + q->pl.pitch * (size_t)j,
                                     (float *)(ctx->gpu + q->doff[D_SCRATCH]), s),
                "compressing");
        }
        return TUTTI_SUCCESS;
    }
    float *x = (float *)(ctx->gpu + q->doff[D_X]);
    if (e) /* select from g + e, which the error then holds but for what is sent */
        CU_TRY(tt_cuda_reduce(x, g, e, n, TUTTI_FP32, TUTTI_SUM, s), "adding the error");
    else
        CU_TRY(cudaMemcpyAsync(x, g, n * sizeof(float), cudaMemcpyDeviceToDevice, s), "copying the input");
    if (q->path == GPU_DENSE) {
        if (e) /* everything is sent */
            CU_TRY(cudaMemsetAsync(e, 0, n * sizeof(float), s), "clearing the error");
        return TUTTI_SUCCESS;
    }
    uint32_t *idx = (uint32_t *)(ctx->gpu + q->doff[D_IDX]);
    CU_TRY(tt_cuda_topk_exact(x, n, q->pl.k, idx, ctx->gpu + q->doff[D_SCRATCH], s), "top-k");
    if (e)
        CU_TRY(cudaMemcpyAsync(e, x, n * sizeof(float), cudaMemcpyDeviceToDevice, s), "keeping g + e");
    CU_TRY(tt_cuda_pairs_pack(x, idx, q->pl.k, q->pl.k, (tt_pair_t *)(ctx->gpu + q->doff[D_PAIRS]), e, s),
           "packing the pairs");
    return TUTTI_SUCCESS;
}

tutti_status_t tt_compress_gpu_after(const tt_device_ctx_t *ctx, void *stream, const tt_cqueued_t *q)
{
    cudaStream_t s = stream;
    size_t n = q->call.count;
    float *out = output32(q, ctx);
    if (q->path == GPU_QUANT)
        for (int j = 0; j < q->p; j++)
            CU_TRY(tt_cuda_quant_decode(&q->pl.q,
                                        (unsigned char *)ctx->gpu + q->doff[D_ALL] + q->pl.pitch * (size_t)j,
                                        tt_block_count(n, q->p, j), out + tt_block_off(n, q->p, j), 0, s),
                   "decompressing");
    if (q->path == GPU_TOPK) {
        /* out may be x (in place, no error feedback): cleared only now, after
         * the packing read it. Then rank order, one launch per rank, as the
         * CPU adds them. */
        const tt_pair_t *all = (const tt_pair_t *)(ctx->gpu + q->doff[D_ALL]);
        CU_TRY(cudaMemsetAsync(out, 0, n * sizeof(float), s), "clearing the output");
        for (int r = 0; r < q->p; r++)
            CU_TRY(tt_cuda_pairs_add(all + (size_t)r * q->pl.k, q->pl.k, n, out, r == 0, s),
                   "adding the pairs");
        if (q->call.op == TUTTI_AVG)
            CU_TRY(tt_cuda_divide(out, n, (float)q->p, s), "averaging");
    }
    size_t bytes = n * tutti_dtype_size(q->call.dtype);
    void *to = q->pl.stage_out ? ctx->gpu + q->doff[D_IN] : q->call.recv;
    if (q->call.dtype != TUTTI_FP32)
        CU_TRY(tt_cuda_from_f32(out, q->call.dtype, n, to, s), "narrowing the result");
    else
        to = out;
    if (q->pl.stage_out)
        CU_TRY(cudaMemcpyAsync(q->call.recv, to, bytes, cudaMemcpyDeviceToDevice, s), "placing the result");
    return TUTTI_SUCCESS;
}
