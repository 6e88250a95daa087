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

#include "compress.h"
#include "kernels.h"

namespace
{

enum { TILE = 4096, LANES = 8, THREADS = 256 };

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
        scales[b] = __fdiv_rn(m[0], top);
}

/* sign: the eight lane sums of one tile of one block; thread k of the tile
 * adds elements lo + 8 j + k, j in the tile, in order, as the CPU's lane k. */
__global__ void tile_sums(const float *g, const float *e, size_t n, size_t bsize, size_t tiles_per_block,
                          float *part)
{
    size_t t = blockIdx.x * (size_t)(blockDim.x / LANES) + threadIdx.x / LANES, k = threadIdx.x % LANES;
    size_t b = t / tiles_per_block, tile = t % tiles_per_block;
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
 * full group of eight, as the CPU does; scale = mean magnitude. */
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
    scales[b] = (float)(sum / (double)len);
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
                    e[i] = __fsub_rn(x, x >= 0 ? scale : -scale);
                continue;
            }
            float inv = scale > 0 ? __fdiv_rn(1.0f, scale) : 0.0f, t = __fmul_rn(x, inv);
            float r = stochastic ? __fadd_rn(__fadd_rn(__fadd_rn(t, tt_uniform01(seed, stream, i)), -0.5f),
                                             12582912.0f)
                                 : __fadd_rn(t, 12582912.0f);
            r = __fsub_rn(r, 12582912.0f); /* tt_round_even, unfused */
            r = r > top ? top : r < -top ? -top : r;
            v |= ((unsigned)(int)r & (kind == TUTTI_COMPRESS_INT8 ? 0xffu : 0xfu)) << (4 * k);
            if (e)
                e[i] = __fsub_rn(x, __fmul_rn(r, scale));
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
        out[i] = add ? __fadd_rn(out[i], v) : v;
    }
}

unsigned grid_for(size_t work)
{
    size_t blocks = (work + THREADS - 1) / THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
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
    if (q->kind == TUTTI_COMPRESS_SIGN) {
        size_t tiles_per_block = (bsize / LANES + TILE / LANES - 1) / (TILE / LANES);
        size_t tiles = nblocks * (tiles_per_block ? tiles_per_block : 1), per_cta = THREADS / LANES;
        tile_sums<<<(unsigned)((tiles + per_cta - 1) / per_cta), THREADS, 0, s>>>(g, e, n, bsize,
                                                                                  tiles_per_block, scratch);
        fold_sums<<<grid_for(nblocks), THREADS, 0, s>>>(g, e, n, bsize, tiles_per_block, scratch, scales,
                                                        nblocks);
    } else {
        block_max<<<(unsigned)nblocks, THREADS, 0, s>>>(g, e, n, bsize, scales,
                                                        (float)tt_quant_levels(q->kind));
    }
    size_t per = q->kind == TUTTI_COMPRESS_INT8 ? 1 : q->kind == TUTTI_COMPRESS_INT4 ? 2 : 8;
    size_t nbytes = (n + per - 1) / per;
    encode_bytes<<<grid_for(nbytes), THREADS, 0, s>>>(q->kind, g, e, n, bsize, scales,
                                                      q->rounding == TUTTI_ROUND_STOCHASTIC &&
                                                          q->kind != TUTTI_COMPRESS_SIGN,
                                                      q->seed, stream, codes, nbytes);
    return (int)cudaGetLastError();
}

extern "C" size_t tt_cuda_quant_scratch(const tt_quant_t *q, size_t n)
{
    size_t bsize = q->block ? q->block : (n ? n : 1), nblocks = n ? (n + bsize - 1) / bsize : 0;
    size_t tiles_per_block = (bsize / LANES + TILE / LANES - 1) / (TILE / LANES);
    return nblocks * (tiles_per_block ? tiles_per_block : 1) * LANES * sizeof(float);
}

extern "C" int tt_cuda_quant_decode(const tt_quant_t *q, const unsigned char *in, size_t n, float *out,
                                    int add, void *cuda_stream)
{
    if (n == 0)
        return 0;
    size_t bsize = q->block ? q->block : n, nblocks = (n + bsize - 1) / bsize;
    decode_elems<<<grid_for(n), THREADS, 0, static_cast<cudaStream_t>(cuda_stream)>>>(
        q->kind, in + nblocks * sizeof(float), n, bsize, reinterpret_cast<const float *>(in), out, add);
    return (int)cudaGetLastError();
}

/* ---- top-k by threshold: the CPU's radix select, then an ordered compaction ---- */
namespace
{

enum { CHUNK = 4096 };

struct select_state {
    uint32_t hi, thr;
    unsigned long long above, ties; /* elements beating thr; how many equal to it are taken */
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
    st->above = above;
    st->ties = k - above;
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
 * chunks are few). */
__global__ void scan_chunks(unsigned long long *counts, size_t nchunks)
{
    unsigned long long above = 0, equal = 0;
    for (size_t c = 0; c < nchunks; c++) {
        unsigned long long a = counts[2 * c], e = counts[2 * c + 1];
        counts[2 * c] = above;
        counts[2 * c + 1] = equal;
        above += a;
        equal += e;
    }
}

/* Each chunk writes its selected indices, in order, where the sums say:
 * element i goes at (selected before it), ties only while they last. */
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
        if (u > st->thr)
            idx[above + taken_ties] = (uint32_t)i;
        else if (u == st->thr && equal < st->ties)
            idx[above + equal] = (uint32_t)i;
        above += u > st->thr;
        equal += u == st->thr;
    }
}

} // namespace

extern "C" size_t tt_cuda_topk_scratch(size_t n)
{
    size_t nchunks = (n + CHUNK - 1) / CHUNK;
    return (1u << 16) * sizeof(unsigned) + sizeof(select_state) + 2 * nchunks * sizeof(unsigned long long) +
           64;
}

extern "C" int tt_cuda_topk_exact(const float *x, size_t n, size_t k, uint32_t *idx, void *scratch,
                                  void *cuda_stream)
{
    if (k == 0 || n == 0 || k >= n)
        return k >= n && n ? (int)cudaErrorInvalidValue : 0; /* the caller sends everything itself */
    cudaStream_t s = static_cast<cudaStream_t>(cuda_stream);
    unsigned *hist = static_cast<unsigned *>(scratch);
    select_state *st = reinterpret_cast<select_state *>(hist + (1u << 16));
    unsigned long long *counts = reinterpret_cast<unsigned long long *>(st + 1);
    size_t nchunks = (n + CHUNK - 1) / CHUNK;
    cudaMemsetAsync(hist, 0, (1u << 16) * sizeof(unsigned), s);
    hist_high<<<grid_for(n), THREADS, 0, s>>>(x, n, hist);
    pick_high<<<1, 1, 0, s>>>(hist, k, st);
    hist_low<<<grid_for(n), THREADS, 0, s>>>(x, n, hist, st);
    pick_low<<<1, 1, 0, s>>>(hist, k, st);
    count_chunks<<<grid_for(nchunks), THREADS, 0, s>>>(x, n, st, counts, nchunks);
    scan_chunks<<<1, 1, 0, s>>>(counts, nchunks);
    write_chunks<<<grid_for(nchunks), THREADS, 0, s>>>(x, n, st, counts, nchunks, idx);
    return (int)cudaGetLastError();
}
