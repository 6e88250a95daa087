/* SPDX-License-Identifier: MIT */
/*
 * The quantizers on the GPU, giving the bits of the CPU code in
 * compress_quant.c: the same encoded layout (scales, then codes), the same
 * counter-based random numbers, every float operation the same and never
 * fused (the __f*_rn intrinsics), and the sign scale summed in the CPU's
 * order: eight float lanes per 4096-element tile, folded into a double
 * tile after tile.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "codec/codec.h"
#include "cuda/grid.cuh"
#include "cuda/kernels.h"

namespace
{

enum { TILE = 4096, LANES = 8 };

__device__ float x_at(const float *g, const float *e, size_t i)
{
    return e ? __fadd_rn(g[i], e[i]) : g[i];
}

/* int8/int4: a block's largest magnitude (order does not matter for max). */
__global__ void block_max(const float *g, const float *e, size_t n, size_t bsize, float *scales, float top)
{
    size_t b = blockIdx.x, lo = b * bsize, hi = lo + bsize < n ? lo + bsize : n;
    __shared__ float m[THREADS];
    float mine = 0;
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        float a = fabsf(x_at(g, e, i));
        mine = a > mine ? a : mine;
    }
    m[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s && m[threadIdx.x + s] > m[threadIdx.x])
            m[threadIdx.x] = m[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        scales[b] = tt_quant_scale(m[0], top);
}

/* sign: the eight lane sums of one tile of one block; thread k of the tile
 * adds elements lo + 8 j + k, j in the tile, in order, as the CPU's lane k. */
__global__ void tile_sums(const float *g, const float *e, size_t n, size_t bsize, size_t tiles_per_block,
                          float *part)
{
    size_t t = blockIdx.x * (size_t)(blockDim.x / LANES) + threadIdx.x / LANES, k = threadIdx.x % LANES;
    size_t b = t / tiles_per_block, tile = t % tiles_per_block; /* tiles_per_block >= 1 */
    size_t lo = b * bsize, hi = lo + bsize < n ? lo + bsize : n;
    if (lo >= n)
        return;
    size_t groups = (hi - lo) / LANES, g0 = tile * (TILE / LANES),
           g1 = g0 + TILE / LANES < groups ? g0 + TILE / LANES : groups;
    float sum = 0;
    for (size_t j = g0; j < g1; j++)
        sum = __fadd_rn(sum, fabsf(x_at(g, e, lo + j * LANES + k)));
    part[t * LANES + k] = sum;
}

/* sign: fold the tiles' lane sums in order, then the elements past the last
 * full group of eight, as the CPU does (and as it does, again in double
 * where a lane overflowed); scale = mean magnitude. */
__global__ void fold_sums(const float *g, const float *e, size_t n, size_t bsize, size_t tiles_per_block,
                          const float *part, float *scales, size_t nblocks)
{
    size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (b >= nblocks)
        return;
    size_t lo = b * bsize, hi = lo + bsize < n ? lo + bsize : n, len = hi - lo;
    size_t groups = len / LANES, tiles = (groups + TILE / LANES - 1) / (TILE / LANES);
    double sum = 0;
    for (size_t t = 0; t < tiles; t++)
        for (size_t k = 0; k < LANES; k++)
            sum += part[(b * tiles_per_block + t) * LANES + k];
    for (size_t i = lo + groups * LANES; i < hi; i++)
        sum += fabsf(x_at(g, e, i));
    if (!isfinite(sum)) /* a lane overflowed */
        sum = tt_sign_sum_exact(g + lo, e ? e + lo : NULL, len);
    scales[b] = tt_codec_canon((float)(sum / (double)len));
}

/* Codes, one byte of output per thread: 1 element (int8), 2 (int4), 8 (sign). */
__global__ void encode_bytes(tutti_compress_kind_t kind, const float *g, float *e, size_t n, size_t bsize,
                             const float *scales, int stochastic, uint64_t seed, uint64_t stream,
                             unsigned char *codes, size_t nbytes)
{
    size_t per = kind == TUTTI_COMPRESS_INT8 ? 1 : kind == TUTTI_COMPRESS_INT4 ? 2 : 8;
    float top = (float)tt_quant_levels(kind);
    for (size_t byte = blockIdx.x * (size_t)blockDim.x + threadIdx.x; byte < nbytes;
         byte += (size_t)gridDim.x * blockDim.x) {
        unsigned v = 0;
        for (size_t k = 0; k < per; k++) {
            size_t i = byte * per + k;
            if (i >= n)
                break;
            float scale = scales[i / bsize], x = x_at(g, e, i);
            if (kind == TUTTI_COMPRESS_SIGN) {
                v |= (unsigned)(x >= 0) << k;
                if (e)
                    e[i] = tt_codec_canon(__fsub_rn(x, x >= 0 ? scale : -scale));
                continue;
            }
            float inv = scale > 0 ? __fdiv_rn(1.0f, scale) : 0.0f, t = __fmul_rn(x, inv);
            float r = stochastic ? __fadd_rn(__fadd_rn(__fadd_rn(t, tt_uniform01(seed, stream, i)), -0.5f),
                                             12582912.0f)
                                 : __fadd_rn(t, 12582912.0f);
            r = tt_quant_clamp(__fsub_rn(r, 12582912.0f), top); /* tt_round_even, unfused */
            v |= ((unsigned)(int)r & (kind == TUTTI_COMPRESS_INT8 ? 0xffu : 0xfu)) << (4 * k);
            if (e)
                e[i] = tt_codec_canon(__fsub_rn(x, __fmul_rn(r, scale)));
        }
        codes[byte] = (unsigned char)v;
    }
}

__global__ void decode_elems(tutti_compress_kind_t kind, const unsigned char *codes, size_t n, size_t bsize,
                             const float *scales, float *out, int add)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float scale = scales[i / bsize], v;
        if (kind == TUTTI_COMPRESS_SIGN) {
            v = codes[i / 8] >> (i % 8) & 1 ? scale : -scale;
        } else {
            int c =
                kind == TUTTI_COMPRESS_INT8 ? (int)(int8_t)codes[i] : (codes[i / 2] >> (4 * (i % 2)) & 0xf);
            if (kind == TUTTI_COMPRESS_INT4 && c >= 8)
                c -= 16;
            v = __fmul_rn((float)c, scale);
        }
        out[i] = tt_codec_canon(add ? __fadd_rn(out[i], v) : v);
    }
}

} // namespace

extern "C" int tt_cuda_quant_encode(const tt_quant_t *q, const float *g, float *e, size_t n, uint64_t stream,
                                    unsigned char *out, float *scratch, void *cuda_stream)
{
    if (n == 0)
        return 0;
    cudaStream_t s = static_cast<cudaStream_t>(cuda_stream);
    size_t bsize = q->block ? q->block : n, nblocks = (n + bsize - 1) / bsize;
    float *scales = reinterpret_cast<float *>(out); /* out is at least 4-byte aligned (cudaMalloc) */
    unsigned char *codes = out + nblocks * sizeof(float);
    cudaError_t err;
    if (q->kind == TUTTI_COMPRESS_SIGN) {
        size_t tiles_per_block = tt_sign_tiles_per_block(bsize);
        size_t tiles = nblocks * tiles_per_block, per_cta = THREADS / LANES;
        err = launch_on(s, (unsigned)((tiles + per_cta - 1) / per_cta), THREADS, tile_sums, g, e, n, bsize,
                        tiles_per_block, scratch);
        if (!err)
            err = launch_on(s, grid_for(nblocks), THREADS, fold_sums, g, e, n, bsize, tiles_per_block,
                            (const float *)scratch, scales, nblocks);
    } else {
        err = launch_on(s, (unsigned)nblocks, THREADS, block_max, g, (const float *)e, n, bsize, scales,
                        (float)tt_quant_levels(q->kind));
    }
    size_t per = q->kind == TUTTI_COMPRESS_INT8 ? 1 : q->kind == TUTTI_COMPRESS_INT4 ? 2 : 8;
    size_t nbytes = (n + per - 1) / per;
    int stochastic = q->rounding == TUTTI_ROUND_STOCHASTIC && q->kind != TUTTI_COMPRESS_SIGN;
    if (!err)
        err = launch_on(s, grid_for(nbytes), THREADS, encode_bytes, q->kind, g, e, n, bsize,
                        (const float *)scales, stochastic, q->seed, stream, codes, nbytes);
    return (int)err;
}

extern "C" size_t tt_cuda_quant_scratch(const tt_quant_t *q, size_t n)
{
    size_t bsize = q->block ? q->block : (n ? n : 1), nblocks = n ? (n + bsize - 1) / bsize : 0;
    return nblocks * tt_sign_tiles_per_block(bsize) * LANES * sizeof(float);
}

extern "C" int tt_cuda_quant_decode(const tt_quant_t *q, const unsigned char *in, size_t n, float *out,
                                    int add, void *cuda_stream)
{
    if (n == 0)
        return 0;
    size_t bsize = q->block ? q->block : n, nblocks = (n + bsize - 1) / bsize;
    return (int)launch_on(static_cast<cudaStream_t>(cuda_stream), grid_for(n), THREADS, decode_elems, q->kind,
                          in + nblocks * sizeof(float), n, bsize, reinterpret_cast<const float *>(in), out, add);
}

/* ---- top-k by threshold: the CPU's radix select, then an ordered compaction ---- */
namespace
{

enum { CHUNK = 4096 };

struct select_state {
    uint32_t hi, thr;
    unsigned long long above, ties; /* elements beating thr; how many equal to it are taken */
    unsigned long long got;         /* indices written: at most the limit */
};

__device__ uint32_t mag_bits(float x)
{
    return __float_as_uint(x) & 0x7fffffffu;
}

__global__ void hist_high(const float *x, size_t n, unsigned *hist)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&hist[mag_bits(x[i]) >> 15], 1u);
}

__global__ void pick_high(unsigned *hist, size_t k, select_state *st)
{
    unsigned long long above = 0;
    uint32_t hi = 0xffff;
    while (above + hist[hi] < k)
        above += hist[hi--];
    st->hi = hi;
    st->above = above;
    for (uint32_t b = 0; b < (1u << 15); b++) /* reused for the low bits */
        hist[b] = 0;
}

__global__ void hist_low(const float *x, size_t n, unsigned *hist, const select_state *st)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t u = mag_bits(x[i]);
        if (u >> 15 == st->hi)
            atomicAdd(&hist[u & 0x7fff], 1u);
    }
}

__global__ void pick_low(const unsigned *hist, size_t k, select_state *st)
{
    unsigned long long above = st->above;
    uint32_t lo = 0x7fff;
    while (above + hist[lo] < k)
        above += hist[lo--];
    st->thr = st->hi << 15 | lo;
}

/* Per chunk of CHUNK elements: how many beat thr, how many equal it. */
__global__ void count_chunks(const float *x, size_t n, const select_state *st, unsigned long long *counts,
                             size_t nchunks)
{
    size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (c >= nchunks)
        return;
    unsigned long long above = 0, equal = 0;
    for (size_t i = c * CHUNK; i < n && i < (c + 1) * CHUNK; i++) {
        uint32_t u = mag_bits(x[i]);
        above += u > st->thr;
        equal += u == st->thr;
    }
    counts[2 * c] = above;
    counts[2 * c + 1] = equal;
}

/* Exclusive prefix sums of both counts, in chunk order (one thread: the
 * chunks are few); then how many of the elements equal to thr fit under
 * limit, and how many indices that makes, as the CPU's collection counts. */
__global__ void scan_chunks(unsigned long long *counts, size_t nchunks, size_t limit, select_state *st)
{
    unsigned long long above = 0, equal = 0;
    for (size_t c = 0; c < nchunks; c++) {
        unsigned long long a = counts[2 * c], e = counts[2 * c + 1];
        counts[2 * c] = above;
        counts[2 * c + 1] = equal;
        above += a;
        equal += e;
    }
    st->ties = limit > above ? limit - above : 0;
    unsigned long long all = above + (equal < st->ties ? equal : st->ties);
    st->got = all < limit ? all : limit;
}

/* Each chunk writes its selected indices, in order, where the sums say:
 * element i goes at (selected before it), ties only while they last, none
 * past the limit. */
__global__ void write_chunks(const float *x, size_t n, const select_state *st,
                             const unsigned long long *counts, size_t nchunks, uint32_t *idx)
{
    size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (c >= nchunks)
        return;
    unsigned long long above = counts[2 * c], equal = counts[2 * c + 1];
    for (size_t i = c * CHUNK; i < n && i < (c + 1) * CHUNK; i++) {
        uint32_t u = mag_bits(x[i]);
        unsigned long long taken_ties = equal < st->ties ? equal : st->ties;
        if (u > st->thr && above + taken_ties < st->got)
            idx[above + taken_ties] = (uint32_t)i;
        else if (u == st->thr && equal < st->ties && above + equal < st->got)
            idx[above + equal] = (uint32_t)i;
        above += u > st->thr;
        equal += u == st->thr;
    }
}

/* The sampled magnitudes, drawn as the CPU draws them. */
__global__ void sample_mags(const float *x, size_t n, size_t s, uint64_t seed, uint64_t stream, float *mag)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < s;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t at = (size_t)(tt_uniform01(seed, stream, i) * (float)n);
        mag[i] = fabsf(x[at < n ? at : n - 1]);
    }
}

__global__ void gather(const float *x, const uint32_t *idx, size_t m, float *out)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < m; i += (size_t)gridDim.x * blockDim.x)
        out[i] = x[idx[i]];
}

/* out[i] = idx[picked[i]]; out must not be idx (picked[i] >= i is read by others). */
__global__ void remap(const uint32_t *idx, const uint32_t *picked, size_t k, uint32_t *out)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < k; i += (size_t)gridDim.x * blockDim.x)
        out[i] = idx[picked[i]];
}

} // namespace

namespace
{

/* The radix select's working memory, carved from the caller's scratch. */
struct select_mem {
    unsigned *hist;
    select_state *st;
    unsigned long long *counts;
};

size_t select_bytes(size_t n)
{
    return (1u << 16) * sizeof(unsigned) + sizeof(select_state) +
           2 * ((n + CHUNK - 1) / CHUNK) * sizeof(unsigned long long) + 64;
}

select_mem select_carve(void *scratch)
{
    select_mem m;
    m.hist = static_cast<unsigned *>(scratch);
    m.st = reinterpret_cast<select_state *>(m.hist + (1u << 16));
    m.counts = reinterpret_cast<unsigned long long *>(m.st + 1);
    return m;
}

/* st->thr = the magnitude bits of the k-th largest |v[i]|, 0 < k <= n. */
cudaError_t kth_largest(const float *v, size_t n, size_t k, const select_mem &m, cudaStream_t s)
{
    cudaError_t e = cudaMemsetAsync(m.hist, 0, (1u << 16) * sizeof(unsigned), s);
    if (!e)
        e = launch_on(s, grid_for(n), THREADS, hist_high, v, n, m.hist);
    if (!e)
        e = launch_on(s, 1, 1, pick_high, m.hist, k, m.st);
    if (!e)
        e = launch_on(s, grid_for(n), THREADS, hist_low, v, n, m.hist, (const select_state *)m.st);
    if (!e)
        e = launch_on(s, 1, 1, pick_low, (const unsigned *)m.hist, k, m.st);
    return e;
}

/* The ascending indices of the |x[i]| beating st->thr, then those equal to
 * it, up to limit in all; how many in st->got. */
cudaError_t collect(const float *x, size_t n, size_t limit, uint32_t *idx, const select_mem &m, cudaStream_t s)
{
    size_t nchunks = (n + CHUNK - 1) / CHUNK;
    cudaError_t e =
        launch_on(s, grid_for(nchunks), THREADS, count_chunks, x, n, (const select_state *)m.st, m.counts, nchunks);
    if (!e)
        e = launch_on(s, 1, 1, scan_chunks, m.counts, nchunks, limit, m.st);
    if (!e)
        e = launch_on(s, grid_for(nchunks), THREADS, write_chunks, x, n, (const select_state *)m.st,
                      (const unsigned long long *)m.counts, nchunks, idx);
    return e;
}

size_t sample_size(size_t n)
{
    return n / 100 < 1024 ? (n < 1024 ? n : 1024) : n / 100; /* as the CPU's */
}

size_t align_up(size_t b)
{
    return (b + 255) & ~(size_t)255;
}

} // namespace

extern "C" size_t tt_cuda_topk_scratch(size_t n)
{
    return select_bytes(n);
}

extern "C" int tt_cuda_topk_exact(const float *x, size_t n, size_t k, uint32_t *idx, void *scratch,
                                  void *cuda_stream)
{
    if (k == 0 || n == 0 || k >= n)
        return k >= n && n ? (int)cudaErrorInvalidValue : 0; /* the caller sends everything itself */
    cudaStream_t s = static_cast<cudaStream_t>(cuda_stream);
    select_mem m = select_carve(scratch);
    cudaError_t e = kth_largest(x, n, k, m, s);
    return (int)(e ? e : collect(x, n, k, idx, m, s));
}

extern "C" size_t tt_cuda_topk_sampled_scratch(size_t n, size_t k)
{
    return align_up(select_bytes(n)) + align_up(sample_size(n) * sizeof(float)) +
           align_up(2 * k * sizeof(float)) + align_up(k * sizeof(uint32_t));
}

extern "C" int tt_cuda_topk_sampled(const float *x, size_t n, size_t k, uint64_t seed, uint64_t stream,
                                    uint32_t *idx, size_t *kept, void *scratch, void *cuda_stream)
{
    *kept = 0;
    size_t ns = sample_size(n);
    if (k == 0 || ns == 0)
        return 0;
    if (k >= n)
        return (int)cudaErrorInvalidValue; /* the caller sends everything itself */
    if (ns == n) {                         /* the sample would be everything: exact */
        *kept = k;
        return tt_cuda_topk_exact(x, n, k, idx, scratch, cuda_stream);
    }
    cudaStream_t s = static_cast<cudaStream_t>(cuda_stream);
    select_mem m = select_carve(scratch);
    char *at = static_cast<char *>(scratch) + align_up(select_bytes(n));
    float *mag = reinterpret_cast<float *>(at);
    float *vals = reinterpret_cast<float *>(at += align_up(ns * sizeof(float)));
    uint32_t *picked = reinterpret_cast<uint32_t *>(at += align_up(2 * k * sizeof(float)));
    /* The threshold that about k of n pass: the ks-th largest sampled magnitude. */
    size_t ks = (size_t)((double)k * (double)ns / (double)n);
    cudaError_t e = launch_on(s, grid_for(ns), THREADS, sample_mags, x, n, ns, seed, stream, mag);
    if (!e)
        e = kth_largest(mag, ns, ks < 1 ? 1 : ks, m, s);
    if (!e)
        e = collect(x, n, 2 * k, idx, m, s);
    unsigned long long got = 0;
    if (!e)
        e = cudaMemcpyAsync(&got, &m.st->got, sizeof got, cudaMemcpyDeviceToHost, s);
    if (!e)
        e = cudaStreamSynchronize(s);
    if (e)
        return (int)e;
    *kept = (size_t)got;
    if (got < 2 * k)
        return 0;
    /* Too many passed (a flat distribution): the exact top-k among them. */
    e = launch_on(s, grid_for(got), THREADS, gather, x, (const uint32_t *)idx, (size_t)got, vals);
    if (!e)
        e = kth_largest(vals, got, k, m, s);
    if (!e)
        e = collect(vals, got, k, picked, m, s);
    uint32_t *chosen = reinterpret_cast<uint32_t *>(vals); /* free again, in stream order */
    if (!e)
        e = launch_on(s, grid_for(k), THREADS, remap, (const uint32_t *)idx, (const uint32_t *)picked, k, chosen);
    if (!e)
        e = cudaMemcpyAsync(idx, chosen, k * sizeof *idx, cudaMemcpyDeviceToDevice, s);
    *kept = k;
    return (int)e;
}

extern "C" int tt_cuda_compress_preload(void)
{
    const void *k[] = {
        reinterpret_cast<const void *>(block_max),    reinterpret_cast<const void *>(tile_sums),
        reinterpret_cast<const void *>(fold_sums),    reinterpret_cast<const void *>(encode_bytes),
        reinterpret_cast<const void *>(decode_elems), reinterpret_cast<const void *>(hist_high),
        reinterpret_cast<const void *>(pick_high),    reinterpret_cast<const void *>(hist_low),
        reinterpret_cast<const void *>(pick_low),     reinterpret_cast<const void *>(count_chunks),
        reinterpret_cast<const void *>(scan_chunks),  reinterpret_cast<const void *>(write_chunks),
        reinterpret_cast<const void *>(sample_mags),  reinterpret_cast<const void *>(gather),
        reinterpret_cast<const void *>(remap)};
    return (int)preload(k, sizeof k / sizeof *k);
}
