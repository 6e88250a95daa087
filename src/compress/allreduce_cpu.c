/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce's CPU path, built from tutti's own all-gather,
 * all-to-all and all-reduce on host buffers.
 *
 * top-k: each rank selects the k largest |g + e|, all ranks all-gather the
 * (index, value) pairs and add them into the dense output in rank order.
 * Two-phase (int8, int4, sign): each rank compresses g + e chunk by chunk,
 * the chunks go to their owners (all-to-all), each owner decompresses and
 * adds its p copies in rank order, adds its server error, compresses the
 * result again and all ranks all-gather the compressed chunks.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "coll/coll.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "compress/allreduce.h"
#include "core/dtype.h"
#include "core/half.h"

static void to_f32(const void *in, tutti_dtype_t t, size_t n, float *out)
{
    if (t == TUTTI_FP32)
        memcpy(out, in, n * sizeof(float));
    else
        for (size_t i = 0; i < n; i++)
            out[i] = t == TUTTI_FP16 ? tt_fp16_to_f32(((const uint16_t *)in)[i])
                                     : tt_bf16_to_f32(((const uint16_t *)in)[i]);
}

static void from_f32(const float *in, tutti_dtype_t t, size_t n, void *out)
{
    if (t == TUTTI_FP32)
        memmove(out, in, n * sizeof(float));
    else
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)out)[i] = t == TUTTI_FP16 ? tt_f32_to_fp16(in[i]) : tt_f32_to_bf16(in[i]);
}

/* Carves the call's buffers (each 64-byte aligned) out of the communicator's
 * compression workspace, growing it when needed. sizes ends with 0. */
static tutti_status_t workspace(tt_comm_t *comm, const size_t *sizes, void **out)
{
    tt_compress_state_t *s = tt_compress_state(comm);
    if (!s)
        return TUTTI_ERR_NO_MEMORY;
    size_t total = 0;
    for (int i = 0; sizes[i]; i++)
        total += (sizes[i] + 63) & ~(size_t)63;
    if (total > s->ws_bytes) {
        free(s->ws);
        s->ws = NULL;
        s->ws_bytes = 0;
        if (posix_memalign(&s->ws, 64, total))
            return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "compressed all-reduce: no memory for %zu bytes",
                                 total);
        s->ws_bytes = total;
    }
    char *at = s->ws;
    for (int i = 0; sizes[i]; i++) {
        out[i] = at;
        at += (sizes[i] + 63) & ~(size_t)63;
    }
    return TUTTI_SUCCESS;
}

/* What a call needs besides the user's buffers. */
typedef struct {
    tt_comm_t *comm;
    const tutti_compress_t *how;
    tutti_ef_state_t ef; /* NULL: no error feedback */
    size_t n;
    int p, rank;
    tutti_op_t op;
    const float *g; /* the input as fp32 (the user's buffer when that is fp32) */
    float *x;       /* top-k: g + e, what this rank wants to send */
    float *out;     /* the result, fp32 (the user's buffer when that is fp32) */
    uint64_t rng;   /* the call's counter-based random stream (tt_compress_rng_key) */
    size_t k;       /* top-k: elements to keep */
    void *buf[4];   /* the scheme's own buffers, from the workspace */
} call_t;

static tutti_status_t dense(call_t *c)
{
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLREDUCE, c->x, c->out, c->n, TUTTI_FP32, c->op));
    if (c->ef)
        memset(c->ef->worker, 0, c->n * sizeof(float)); /* everything was sent */
    return TUTTI_SUCCESS;
}

static tutti_status_t topk(call_t *c)
{
    size_t k = c->k;
    if (tt_compress_topk_dense(c->comm, k, c->n))
        return dense(c);
    uint32_t *idx = c->buf[0];
    float *mag = c->buf[1];
    tt_pair_t *pairs = c->buf[2], *all = c->buf[3];
    int64_t mine = (int64_t)(c->how->sampled ? tt_topk_sampled(c->x, c->n, k, c->how->seed, c->rng, idx, mag)
                                             : tt_topk_exact(c->x, c->n, k, idx));
    /* Exact selection sends k pairs everywhere; sampled ones agree on the largest count first. */
    int64_t most = mine;
    if (c->how->sampled)
        TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLREDUCE, &mine, &most, 1, TUTTI_INT64, TUTTI_MAX));
    for (int64_t i = 0; i < most; i++) /* padding: an index past the end */
        pairs[i] = i < mine ? (tt_pair_t){idx[i], c->x[idx[i]]} : (tt_pair_t){UINT32_MAX, 0};
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLGATHER, pairs, all, (size_t)most * sizeof *pairs,
                                 TUTTI_UINT8, TUTTI_SUM));
    /* Once sent (a call that fails leaves the error as it was): what was
     * sent leaves the error; the rest stays. */
    if (c->ef) {
        memcpy(c->ef->worker, c->x, c->n * sizeof(float));
        for (int64_t i = 0; i < mine; i++)
            c->ef->worker[idx[i]] = 0;
    }
    /* In rank order: rank 0's values are placed, the others added, which is
     * bit for bit the dense sum of the sparse vectors in rank order; a NaN
     * (infinities of both signs) canonical, as on the GPU path. */
    memset(c->out, 0, c->n * sizeof(float));
    for (int q = 0; q < c->p; q++)
        for (int64_t i = 0; i < most; i++) {
            tt_pair_t pr = all[(size_t)q * (size_t)most + (size_t)i];
            if (pr.index < c->n)
                c->out[pr.index] = q == 0 ? pr.value : tt_codec_canon(c->out[pr.index] + pr.value);
        }
    if (c->op == TUTTI_AVG)
        for (size_t i = 0; i < c->n; i++)
            c->out[i] = tt_codec_canon(c->out[i] / (float)c->p);
    tt_compress_stats(c->comm)->k_sent = (uint64_t)mine;
    return TUTTI_SUCCESS;
}

void tt_compress_server(const tt_quant_t *q, const unsigned char *got, size_t slot, size_t off, size_t mine,
                        int p, tutti_op_t op, uint64_t stream, tutti_ef_state_t ef, float *y,
                        unsigned char *enc)
{
    for (int j = 0; j < p; j++) /* rank order */
        tt_quant_decode(q, got + slot * (size_t)j, mine, y, j > 0);
    for (size_t i = 0; op == TUTTI_AVG && i < mine; i++)
        y[i] /= (float)p;
    if (ef) {
        ef->server_count = mine;
        ef->server_off = off;
    }
    tt_quant_encode(q, y, ef ? ef->server : NULL, mine, stream, enc);
}

static tutti_status_t two_phase(call_t *c)
{
    tt_quant_t q = {
        .kind = c->how->kind, .block = c->how->block, .rounding = c->how->rounding, .seed = c->how->seed};
    int p = c->p, r = c->rank;
    size_t slot = tt_quant_bytes(&q, tt_block_count(c->n, p, 0)); /* the largest chunk's encoding */
    size_t mine = tt_block_count(c->n, p, r);
    unsigned char *enc = c->buf[0], *got = c->buf[1];
    float *y = c->buf[2];
    /* Worker: compress every chunk of g + e; e keeps what the codes lose. */
    for (int j = 0; j < p; j++) {
        size_t off = tt_block_off(c->n, p, j), cnt = tt_block_count(c->n, p, j);
        tt_quant_encode(&q, c->g + off, c->ef ? c->ef->worker + off : NULL, cnt,
                        c->rng * 2 * (uint64_t)p + (uint64_t)j, enc + slot * (size_t)j);
    }
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLTOALL, enc, got, slot, TUTTI_UINT8, TUTTI_SUM));
    tt_compress_server(&q, got, slot, tt_block_off(c->n, p, r), mine, p, c->op,
                       c->rng * 2 * (uint64_t)p + (uint64_t)p + (uint64_t)r, c->ef, y, enc);
    TT_TRY(tt_compress_host_coll(c->comm, TT_COLL_ALLGATHER, enc, got, slot, TUTTI_UINT8, TUTTI_SUM));
    for (int j = 0; j < p; j++)
        tt_quant_decode(&q, got + slot * (size_t)j, tt_block_count(c->n, p, j),
                        c->out + tt_block_off(c->n, p, j), 0);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_compress_run(tt_comm_t *comm, const tt_call_t *call, const tutti_compress_t *how,
                               tutti_ef_state_t ef)
{
    const void *sendbuf = call->send;
    void *recvbuf = call->recv;
    size_t count = call->count;
    tutti_dtype_t dtype = call->dtype;
    tutti_op_t op = call->op;
    tutti_compress_stats_t *stats = tt_compress_stats(comm);
    *stats = (tutti_compress_stats_t){0};
    if (how->kind == TUTTI_COMPRESS_NONE || count == 0) {
        uint64_t before = tt_coll_bytes_sent(comm);
        TT_TRY(tt_compress_host_coll(comm, TT_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op));
        stats->bytes_sent = stats->dense_bytes_sent = tt_coll_bytes_sent(comm) - before;
        return TUTTI_SUCCESS;
    }
    if (ef)
        TT_TRY(tt_ef_worker_to_host(ef)); /* earlier calls may have left it on the GPU */
    call_t c = {
        .comm = comm, .how = how, .ef = ef, .n = count, .p = comm->nranks, .rank = comm->rank, .op = op};
    /* The buffers: x and the fp32 result, then the scheme's own. Top-k
     * keeps room for 2k indices and pairs (what sampled selection may pick). */
    size_t k = how->kind == TUTTI_COMPRESS_TOPK ? tt_compress_topk_k(how, count) : 0, p = (size_t)c.p;
    tt_quant_t q = {.kind = how->kind, .block = how->block};
    size_t slot = how->kind == TUTTI_COMPRESS_TOPK ? 0 : tt_quant_bytes(&q, tt_block_count(count, c.p, 0));
    int need_x = k || dtype != TUTTI_FP32; /* top-k works on g + e; half types need converting */
    size_t sizes[] = {need_x ? count * sizeof(float) : 1,
                      dtype == TUTTI_FP32 ? 1 : count * sizeof(float),
                      k ? 2 * k * sizeof(uint32_t) : slot * p + 1,
                      k ? count * sizeof(float) : slot * p + 1,
                      k ? 2 * k * sizeof(tt_pair_t) : (tt_block_count(count, c.p, 0) + 1) * sizeof(float),
                      k ? 2 * k * p * sizeof(tt_pair_t) : 1,
                      0};
    void *bufs[6];
    TT_TRY(workspace(comm, sizes, bufs));
    c.x = bufs[0];
    c.out = dtype == TUTTI_FP32 ? recvbuf : bufs[1];
    c.k = k;
    memcpy(c.buf, bufs + 2, sizeof c.buf);
    if (dtype != TUTTI_FP32)
        to_f32(sendbuf, dtype, count, c.x);
    c.g = dtype == TUTTI_FP32 ? sendbuf : c.x; /* read before out is written (in place) */
    if (k) { /* top-k selects from g + e (a NaN canonical, as the GPU path's sum makes it); from g
              * itself (-0 stays -0) without feedback, as the GPU path */
        for (size_t i = 0; i < count; i++)
            c.x[i] = c.ef ? tt_codec_canon(c.g[i] + c.ef->worker[i]) : c.g[i];
        c.g = c.x;
    }
    c.rng = tt_compress_rng_key(comm);
    uint64_t before = tt_coll_bytes_sent(comm);
    tutti_status_t st = how->kind == TUTTI_COMPRESS_TOPK ? topk(&c) : two_phase(&c);
    if (!st) {
        if (dtype != TUTTI_FP32)
            from_f32(c.out, dtype, count, recvbuf);
        tt_compress_account(comm, before, count, dtype);
    }
    return st;
}
