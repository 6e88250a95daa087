/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce on device buffers (built with CUDA), queued as
 * a closure for the device proxy. With both buffers on the GPU the CUDA
 * kernels compress and decompress on the proxy's stream, so only
 * compressed bytes cross between GPU and host; the exchange and the
 * two-phase server step on this rank's chunk (1/p of the work) run on the
 * host. It sends the messages of the CPU path (allreduce.c) and gives its
 * results and error state bit for bit, so ranks may mix the two. With one
 * buffer on the host the CPU path runs on staged copies.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "compress/allreduce.h"
#include "cuda/kernels.h"
#include "device/queue.h"
#include "device/staging.h"
#include "core/dtype.h"

#define NAME "tutti_allreduce_compressed"
#define PITCH 16 /* device copies of encoded chunks start 16-byte aligned (the kernels need 4) */

/* One call's working memory: device pieces, then pinned host pieces. */
enum { D_G32, D_OUT32, D_X, D_IDX, D_PAIRS, D_ALL, D_SCRATCH, D_N };
enum { H_MINE, H_ALL, H_SERVER, H_N };

typedef struct {
    size_t k;                   /* top-k: elements kept; 0 for the quantizers */
    int dense;                  /* top-k that runs the dense all-reduce */
    tt_quant_t q;               /* the quantizers */
    size_t slot, pitch;         /* one chunk's encoding: on the wire, on the GPU */
    size_t dev[D_N], host[H_N]; /* bytes of each piece */
} plan_t;

static size_t round_up(size_t b, size_t to)
{
    return (b + to - 1) / to * to;
}

static plan_t plan_call(int p, const tt_call_t *c, const tutti_compress_t *how)
{
    plan_t pl = {0};
    size_t n = c->count, f = n * sizeof(float), P = (size_t)p;
    if (c->dtype != TUTTI_FP32)
        pl.dev[D_G32] = pl.dev[D_OUT32] = f;
    if (how->kind == TUTTI_COMPRESS_TOPK) {
        pl.k = tt_compress_topk_k(how, n);
        pl.dense = tt_compress_topk_costly(pl.k, n, p);
        pl.dev[D_X] = f;
        if (pl.dense) {
            pl.host[H_MINE] = f;
            return pl;
        }
        pl.dev[D_IDX] = 2 * pl.k * sizeof(uint32_t); /* sampled selection may pick 2k */
        pl.dev[D_PAIRS] = pl.host[H_MINE] = 2 * pl.k * sizeof(tt_pair_t);
        pl.dev[D_ALL] = pl.host[H_ALL] = 2 * pl.k * P * sizeof(tt_pair_t);
        pl.dev[D_SCRATCH] = how->sampled ? tt_cuda_topk_sampled_scratch(n, pl.k) : tt_cuda_topk_scratch(n);
        return pl;
    }
    size_t largest = tt_block_count(n, p, 0);
    pl.q = (tt_quant_t){.kind = how->kind, .block = how->block, .rounding = how->rounding, .seed = how->seed};
    pl.slot = tt_quant_bytes(&pl.q, largest);
    pl.pitch = round_up(pl.slot, PITCH);
    pl.dev[D_PAIRS] = pl.dev[D_ALL] = pl.pitch * P; /* the encoded chunks: sent, received */
    pl.host[H_MINE] = pl.host[H_ALL] = pl.slot * P;
    pl.host[H_SERVER] = (largest + 1) * sizeof(float);
    pl.dev[D_SCRATCH] = tt_cuda_quant_scratch(&pl.q, largest);
    return pl;
}

/* Offsets of the pieces (each 256-byte aligned); returns the total. */
static size_t carve(const size_t *sizes, int n, char *base, void **out)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        out[i] = sizes[i] && base ? base + at : NULL;
        at += round_up(sizes[i], 256);
    }
    return at;
}

/* What one call works with. */
typedef struct {
    tutti_comm_t comm;
    const tutti_compress_t *how;
    tutti_ef_state_t ef;
    cudaStream_t s;
    size_t n;
    int p, rank;
    tutti_op_t op;
    const float *g; /* the input as fp32, on the GPU */
    float *out;     /* the result as fp32, on the GPU */
    float *e;       /* the worker error on the GPU; NULL without error feedback */
    uint64_t rng;   /* the call's counter-based random stream (tt_compress_rng_key) */
    plan_t pl;
    void *d[D_N], *h[H_N];
} dcall_t;

#define CU_TRY(expr, what)                                                                                   \
    do {                                                                                                     \
        int cu_err_ = (int)(expr);                                                                           \
        if (cu_err_)                                                                                         \
            return tt_device_error(c->comm, NAME, what, cu_err_);                                            \
    } while (0)

static tutti_status_t gpu_sync(dcall_t *c, const char *what)
{
    CU_TRY(cudaStreamSynchronize(c->s), what);
    return TUTTI_SUCCESS;
}

/* Top-k costing more than dense: x = g + e through the host's all-reduce. */
static tutti_status_t topk_dense(dcall_t *c, const float *x)
{
    float *hx = c->h[H_MINE];
    size_t f = c->n * sizeof(float);
    CU_TRY(cudaMemcpyAsync(hx, x, f, cudaMemcpyDeviceToHost, c->s), "copying g + e to the host");
    TT_TRY(gpu_sync(c, "copying g + e to the host"));
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLREDUCE, hx, hx, c->n, TUTTI_FP32, c->op));
    CU_TRY(cudaMemcpyAsync(c->out, hx, f, cudaMemcpyHostToDevice, c->s), "copying the sum to the GPU");
    if (c->e) /* everything was sent */
        CU_TRY(cudaMemsetAsync(c->e, 0, f, c->s), "clearing the error");
    return TUTTI_SUCCESS;
}

static tutti_status_t topk(dcall_t *c)
{
    size_t n = c->n, k = c->pl.k;
    const float *x = c->g;
    if (c->e) { /* select from g + e, which the error then holds but for what is sent */
        float *xe = c->d[D_X];
        CU_TRY(tt_cuda_reduce(xe, c->g, c->e, n, TUTTI_FP32, TUTTI_SUM, c->s), "adding the error");
        x = xe;
    }
    if (c->pl.dense)
        return topk_dense(c, x);
    uint32_t *idx = c->d[D_IDX];
    size_t kept = k;
    if (c->how->sampled)
        CU_TRY(tt_cuda_topk_sampled(x, n, k, c->how->seed, c->rng, idx, &kept, c->d[D_SCRATCH], c->s),
               "sampled top-k");
    else
        CU_TRY(tt_cuda_topk_exact(x, n, k, idx, c->d[D_SCRATCH], c->s), "top-k");
    int64_t mine = (int64_t)kept, most = mine;
    if (c->how->sampled) /* as the CPU path: agree on the largest count */
        TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLREDUCE, &mine, &most, 1, TUTTI_INT64, TUTTI_MAX));
    size_t m = (size_t)most, pair_bytes = m * sizeof(tt_pair_t);
    if (c->e)
        CU_TRY(cudaMemcpyAsync(c->e, x, n * sizeof(float), cudaMemcpyDeviceToDevice, c->s), "keeping g + e");
    CU_TRY(tt_cuda_pairs_pack(x, idx, kept, m, c->d[D_PAIRS], c->e, c->s), "packing the pairs");
    CU_TRY(cudaMemcpyAsync(c->h[H_MINE], c->d[D_PAIRS], pair_bytes, cudaMemcpyDeviceToHost, c->s),
           "copying the pairs to the host");
    TT_TRY(gpu_sync(c, "copying the pairs to the host"));
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLGATHER, c->h[H_MINE], c->h[H_ALL], pair_bytes,
                                 TUTTI_UINT8, TUTTI_SUM));
    const tt_pair_t *all = c->d[D_ALL];
    CU_TRY(cudaMemcpyAsync(c->d[D_ALL], c->h[H_ALL], pair_bytes * (size_t)c->p, cudaMemcpyHostToDevice, c->s),
           "copying the gathered pairs to the GPU");
    /* out may be x (in place, no error feedback): cleared only now, after
     * the packing read it. Then rank order, one launch per rank, as the CPU
     * adds them. */
    CU_TRY(cudaMemsetAsync(c->out, 0, n * sizeof(float), c->s), "clearing the output");
    for (int q = 0; q < c->p; q++)
        CU_TRY(tt_cuda_pairs_add(all + (size_t)q * m, m, n, c->out, q == 0, c->s), "adding the pairs");
    if (c->op == TUTTI_AVG)
        CU_TRY(tt_cuda_divide(c->out, n, (float)c->p, c->s), "averaging");
    tt_compress_stats(c->comm)->k_sent = kept;
    return TUTTI_SUCCESS;
}

static tutti_status_t two_phase(dcall_t *c)
{
    const plan_t *pl = &c->pl;
    int p = c->p;
    size_t slot = pl->slot, pitch = pl->pitch, mine = tt_block_count(c->n, p, c->rank);
    unsigned char *denc = c->d[D_PAIRS], *dgot = c->d[D_ALL], *enc = c->h[H_MINE], *got = c->h[H_ALL];
    uint64_t base = c->rng * 2 * (uint64_t)p;
    for (int j = 0; j < p; j++) {
        size_t off = tt_block_off(c->n, p, j);
        CU_TRY(tt_cuda_quant_encode(&pl->q, c->g + off, c->e ? c->e + off : NULL, tt_block_count(c->n, p, j),
                                    base + (uint64_t)j, denc + pitch * (size_t)j, c->d[D_SCRATCH], c->s),
               "compressing");
    }
    CU_TRY(cudaMemcpy2DAsync(enc, slot, denc, pitch, slot, (size_t)p, cudaMemcpyDeviceToHost, c->s),
           "copying the codes to the host");
    TT_TRY(gpu_sync(c, "copying the codes to the host"));
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLTOALL, enc, got, slot, TUTTI_UINT8, TUTTI_SUM));
    tt_compress_server(&pl->q, got, slot, tt_block_off(c->n, p, c->rank), mine, p, c->op,
                       base + (uint64_t)p + (uint64_t)c->rank, c->ef, c->h[H_SERVER], enc);
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLGATHER, enc, got, slot, TUTTI_UINT8, TUTTI_SUM));
    CU_TRY(cudaMemcpy2DAsync(dgot, pitch, got, slot, slot, (size_t)p, cudaMemcpyHostToDevice, c->s),
           "copying the codes to the GPU");
    for (int j = 0; j < p; j++)
        CU_TRY(tt_cuda_quant_decode(&pl->q, dgot + pitch * (size_t)j, tt_block_count(c->n, p, j),
                                    c->out + tt_block_off(c->n, p, j), 0, c->s),
               "decompressing");
    return TUTTI_SUCCESS;
}

/* On the proxy's stream, once the inputs are ready there. */
static tutti_status_t run_on_gpu(tutti_comm_t comm, const tt_call_t *call, const tutti_compress_t *how,
                                 tutti_ef_state_t ef, void *dev_scratch, void *host_scratch,
                                 void *cuda_stream)
{
    *tt_compress_stats(comm) = (tutti_compress_stats_t){0};
    dcall_t call_state = {.comm = comm,
                          .how = how,
                          .ef = ef,
                          .s = cuda_stream,
                          .n = call->count,
                          .p = comm->nranks,
                          .rank = comm->rank,
                          .op = call->op,
                          .rng = tt_compress_rng_key(comm),
                          .pl = plan_call(comm->nranks, call, how)};
    dcall_t *c = &call_state;
    carve(c->pl.dev, D_N, dev_scratch, c->d);
    carve(c->pl.host, H_N, host_scratch, c->h);
    if (c->pl.dense)
        tt_compress_topk_dense(comm, c->pl.k, c->n); /* the debug line and the stats, as on the CPU */
    if (ef) {
        TT_TRY(tt_ef_worker_to_device(comm, ef));
        c->e = ef->worker_dev;
    }
    c->g = call->send;
    c->out = call->recv;
    if (call->dtype != TUTTI_FP32) {
        CU_TRY(tt_cuda_to_f32(call->send, call->dtype, c->n, c->d[D_G32], c->s), "widening the input");
        c->g = c->d[D_G32];
        c->out = c->d[D_OUT32];
    }
    uint64_t before = tt_coll_bytes_sent(comm);
    TT_TRY(how->kind == TUTTI_COMPRESS_TOPK ? topk(c) : two_phase(c));
    if (call->dtype != TUTTI_FP32)
        CU_TRY(tt_cuda_from_f32(c->out, call->dtype, c->n, call->recv, c->s), "narrowing the result");
    TT_TRY(gpu_sync(c, "finishing"));
    tt_compress_account(comm, before, c->n, call->dtype);
    return TUTTI_SUCCESS;
}

/* A queued call: the caller's call and how it compresses. */
typedef struct {
    tt_call_t call;
    tutti_compress_t how;
    tutti_ef_state_t ef;
    int on_gpu; /* both buffers on the GPU, something to compress, the proxy may use the GPU */
    tt_stage_layout_t layout;
} queued_t;

/* The CPU path on copies staged through the caller's stream (its code
 * reads the whole input at once, so the copies are whole too). */
static int staged_in(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const queued_t *q = arg;
    return q->on_gpu ? 0 : tt_stage_in(ctx, &q->call, &q->layout, stream);
}

static int staged_out(const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const queued_t *q = arg;
    return q->on_gpu ? 0 : tt_stage_out(ctx, &q->call, &q->layout, stream);
}

static tutti_status_t run_queued(tutti_comm_t comm, const tt_device_ctx_t *ctx, void *arg)
{
    const queued_t *q = arg;
    if (q->on_gpu)
        return run_on_gpu(comm, &q->call, &q->how, q->ef, ctx->gpu, ctx->pinned, ctx->copies);
    tt_call_t host = tt_stage_stand_in(&q->call, &q->layout, ctx->pinned);
    return tt_compress_run(comm, &host, &q->how, q->ef);
}

tutti_status_t tt_compress_enqueue(tutti_comm_t comm, const tt_call_t *c, const tutti_compress_t *how,
                                   tutti_ef_state_t ef, void *stream)
{
    int device;
    TT_TRY(tt_device_refuse_capture(comm, NAME, stream));
    TT_TRY(tt_device_of(comm, c->send_on_device ? c->send : c->recv, NAME, &device));
    queued_t *q = calloc(1, sizeof *q);
    if (!q)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, NAME ": no memory to queue the call");
    *q = (queued_t){.call = *c, .how = *how, .ef = ef, .layout = tt_stage_layout(c)};
    /* With one hardware queue for every stream, the proxy's kernels would
     * wait behind the gate: the CPU path then runs on staged copies. */
    q->on_gpu = how->kind != TUTTI_COMPRESS_NONE && c->count && c->send_on_device && c->recv_on_device &&
                !tt_device_one_hw_queue();
    tt_device_work_t work = {.name = NAME,
                             .run = run_queued,
                             .stage_in = staged_in,
                             .stage_out = staged_out,
                             .release = free,
                             .arg = q};
    if (q->on_gpu) {
        plan_t pl = plan_call(comm->nranks, c, how);
        void *unused[D_N];
        work.gpu_bytes = carve(pl.dev, D_N, NULL, unused);
        work.pinned_bytes = carve(pl.host, H_N, NULL, unused);
    } else {
        work.pinned_bytes = q->layout.bytes;
    }
    /* The error's GPU copy is made here, never on the proxy. */
    tutti_status_t st = q->on_gpu && ef ? tt_ef_prepare_device(comm, ef, device) : TUTTI_SUCCESS;
    if (st) {
        free(q);
        return st;
    }
    return tt_device_enqueue(comm, device, &work, stream);
}

/* ---- the worker error's copy on the GPU ---- */

/* In stream order on the state's own stream: no call that waits for the
 * whole device, where a gate may hold a stream. */
tutti_status_t tt_ef_prepare_device(tutti_comm_t comm, tutti_ef_state_t ef, int device)
{
    if (ef->worker_dev) {
        if (ef->device == device)
            return TUTTI_SUCCESS;
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                             NAME ": state keeps its error on GPU %d, but the buffers are on GPU %d",
                             ef->device, device);
    }
    int was;
    cudaError_t e = cudaGetDevice(&was);
    if (!e)
        e = cudaSetDevice(device);
    if (!e)
        e = cudaStreamCreateWithFlags((cudaStream_t *)&ef->moves, cudaStreamNonBlocking);
    size_t bytes = (ef->count ? ef->count : 1) * sizeof(float);
    if (!e && (e = cudaMallocAsync((void **)&ef->worker_dev, bytes, ef->moves)) == cudaErrorNotSupported) {
        cudaGetLastError(); /* no memory pools on this GPU */
        ef->pooled = 0;
        e = cudaMalloc((void **)&ef->worker_dev, bytes);
    } else {
        ef->pooled = 1;
    }
    if (e && ef->moves) {
        cudaStreamDestroy(ef->moves);
        ef->moves = NULL;
    }
    cudaSetDevice(was);
    if (e) {
        ef->worker_dev = NULL;
        return tt_device_error(comm, NAME, "allocating the error on the GPU", e);
    }
    ef->device = device;
    ef->worker_on_device = 0;
    return TUTTI_SUCCESS;
}

/* On the state's own non-blocking stream: the proxy must not wait for the
 * caller's streams, which wait for the proxy. */
static cudaError_t move_worker(tutti_ef_state_t ef, enum cudaMemcpyKind kind)
{
    size_t bytes = ef->count * sizeof(float);
    cudaStream_t s = ef->moves;
    cudaError_t e = kind == cudaMemcpyHostToDevice
                        ? cudaMemcpyAsync(ef->worker_dev, ef->worker, bytes, kind, s)
                        : cudaMemcpyAsync(ef->worker, ef->worker_dev, bytes, kind, s);
    return e ? e : cudaStreamSynchronize(s);
}

tutti_status_t tt_ef_worker_to_device(tutti_comm_t comm, tutti_ef_state_t ef)
{
    if (ef->worker_on_device)
        return TUTTI_SUCCESS;
    cudaError_t e = move_worker(ef, cudaMemcpyHostToDevice);
    if (e)
        return tt_device_error(comm, NAME, "copying the error to the GPU", e);
    ef->worker_on_device = 1;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_ef_worker_to_host(tutti_ef_state_t ef)
{
    if (!ef->worker_on_device)
        return TUTTI_SUCCESS;
    cudaError_t e = move_worker(ef, cudaMemcpyDeviceToHost);
    if (e)
        return tt_device_error(NULL, "error feedback", "copying the error from the GPU", e);
    ef->worker_on_device = 0;
    return TUTTI_SUCCESS;
}

/* Freed in stream order; destroying the stream does not wait either. */
void tt_ef_free_device(tutti_ef_state_t ef)
{
    if (!ef->worker_dev)
        return;
    if (ef->pooled)
        cudaFreeAsync(ef->worker_dev, ef->moves);
    else
        cudaFree(ef->worker_dev);
    cudaStreamDestroy(ef->moves);
    ef->worker_dev = NULL;
    ef->moves = NULL;
    ef->worker_on_device = 0;
}
