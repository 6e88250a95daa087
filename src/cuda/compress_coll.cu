/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce's elementwise steps on the GPU, with the CPU
 * path's arithmetic (compress_coll.c): half types through fp32 with
 * half.h's conversions, top-k pairs packed and summed in rank order, the
 * average as one unfused division, NaNs canonical (codec.h).
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "codec/codec.h"
#include "core/half.h"
#include "cuda/grid.cuh"
#include "cuda/kernels.h"

namespace
{

__global__ void widen(const uint16_t *in, int bf16, size_t n, float *out)
{
    for (size_t i = first_index(); i < n; i += stride())
        out[i] = bf16 ? tt_bf16_to_f32(in[i]) : tt_fp16_to_f32(in[i]);
}

__global__ void narrow(const float *in, int bf16, size_t n, uint16_t *out)
{
    for (size_t i = first_index(); i < n; i += stride())
        out[i] = bf16 ? tt_f32_to_bf16(in[i]) : tt_f32_to_fp16(in[i]);
}

/* Pairs past kept are padding (an index past the end); the sent elements
 * leave the error, which held x before. */
__global__ void pack(const float *x, const uint32_t *idx, size_t kept, size_t most, tt_pair_t *pairs,
                     float *e)
{
    for (size_t i = first_index(); i < most; i += stride()) {
        tt_pair_t pr = {UINT32_MAX, 0.0f};
        if (i < kept) {
            pr.index = idx[i];
            pr.value = x[idx[i]];
            if (e)
                e[idx[i]] = 0.0f;
        }
        pairs[i] = pr;
    }
}

/* One rank's pairs: distinct indices, so no two threads meet. */
__global__ void add_pairs(const tt_pair_t *pairs, size_t m, size_t n, float *out, int first)
{
    for (size_t i = first_index(); i < m; i += stride()) {
        tt_pair_t pr = pairs[i];
        if (pr.index < n)
            out[pr.index] = first ? pr.value : tt_codec_canon(__fadd_rn(out[pr.index], pr.value));
    }
}

__global__ void divide(float *x, size_t n, float d)
{
    for (size_t i = first_index(); i < n; i += stride())
        x[i] = tt_codec_canon(__fdiv_rn(x[i], d));
}

} // namespace

extern "C" int tt_cuda_to_f32(const void *in, tutti_dtype_t dtype, size_t n, float *out, void *stream)
{
    if (dtype != TUTTI_FP16 && dtype != TUTTI_BF16)
        return (int)cudaErrorInvalidValue;
    if (!n)
        return 0;
    return (int)launch_on(static_cast<cudaStream_t>(stream), grid_for(n), THREADS, widen,
                          static_cast<const uint16_t *>(in), (int)(dtype == TUTTI_BF16), n, out);
}

extern "C" int tt_cuda_from_f32(const float *in, tutti_dtype_t dtype, size_t n, void *out, void *stream)
{
    if (dtype != TUTTI_FP16 && dtype != TUTTI_BF16)
        return (int)cudaErrorInvalidValue;
    if (!n)
        return 0;
    return (int)launch_on(static_cast<cudaStream_t>(stream), grid_for(n), THREADS, narrow, in,
                          (int)(dtype == TUTTI_BF16), n, static_cast<uint16_t *>(out));
}

extern "C" int tt_cuda_pairs_pack(const float *x, const uint32_t *idx, size_t kept, size_t most,
                                  tt_pair_t *pairs, float *e, void *stream)
{
    if (!most)
        return 0;
    return (int)launch_on(static_cast<cudaStream_t>(stream), grid_for(most), THREADS, pack, x, idx, kept,
                          most, pairs, e);
}

extern "C" int tt_cuda_pairs_add(const tt_pair_t *pairs, size_t m, size_t n, float *out, int first,
                                 void *stream)
{
    if (!m)
        return 0;
    return (int)launch_on(static_cast<cudaStream_t>(stream), grid_for(m), THREADS, add_pairs, pairs, m, n,
                          out, first);
}

extern "C" int tt_cuda_divide(float *x, size_t n, float d, void *stream)
{
    if (!n)
        return 0;
    return (int)launch_on(static_cast<cudaStream_t>(stream), grid_for(n), THREADS, divide, x, n, d);
}

extern "C" int tt_cuda_compress_coll_preload(void)
{
    const void *k[] = {reinterpret_cast<const void *>(widen), reinterpret_cast<const void *>(narrow),
                       reinterpret_cast<const void *>(pack), reinterpret_cast<const void *>(add_pairs),
                       reinterpret_cast<const void *>(divide)};
    return (int)preload(k, sizeof k / sizeof *k);
}
