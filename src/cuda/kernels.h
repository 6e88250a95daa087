/* SPDX-License-Identifier: MIT */
/* The CUDA kernels, behind a C interface (built only with CUDA). */
#ifndef TT_CUDA_KERNELS_H
#define TT_CUDA_KERNELS_H

#include <stddef.h>

#include "codec/codec.h"
#include "tutti.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * dst[i] = a[i] op b[i], i < n, on device buffers, enqueued on stream (a
 * cudaStream_t; NULL: the default stream). dst may alias a or b; no
 * pointer needs to be aligned to its element (nor in the next two). fp16,
 * bf16 and fp8 are widened to fp32 and rounded back to nearest even by the
 * same code as the CPU kernels, so both give the same bits; avg is sum. Returns
 * 0, or the cudaError_t of the launch.
 */
int tt_cuda_reduce(void *dst, const void *a, const void *b, size_t n, tutti_dtype_t dtype, tutti_op_t op,
                   void *stream);

/*
 * dst[i] = src[i] * scalar, i < n, enqueued on stream: the scalar is read
 * from device memory scalar_dev when the kernel runs, or (scalar_dev NULL)
 * is the value at scalar_host now. Products as tt_reduce_scale's on the
 * CPU. Returns 0 or the launch's cudaError_t.
 */
int tt_cuda_scale(void *dst, const void *src, size_t n, tutti_dtype_t dtype, const void *scalar_dev,
                  const void *scalar_host, void *stream);

/* avg's last step on a device buffer: buf[i] /= nranks in the wide type,
 * the same bits as tt_reduce_avg_finish. Enqueued on stream. */
int tt_cuda_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks, void *stream);

/*
 * From here on, every pointer must be aligned to its element (a GPU faults
 * on a misaligned load or store; the compressed all-reduce copies a user's
 * buffer that is not).
 *
 * The quantizers of codec.h on device buffers: the same encoding, bit
 * for bit, as tt_quant_encode and tt_quant_decode. out must be 4-byte
 * aligned; scratch holds tt_cuda_quant_scratch(q, n) bytes (sign's partial
 * sums). Enqueued on cuda_stream; return 0 or a cudaError_t.
 */
int tt_cuda_quant_encode(const tt_quant_t *q, const float *g, float *e, size_t n, uint64_t stream,
                         unsigned char *out, float *scratch, void *cuda_stream);
size_t tt_cuda_quant_scratch(const tt_quant_t *q, size_t n);
int tt_cuda_quant_decode(const tt_quant_t *q, const unsigned char *in, size_t n, float *out, int add,
                         void *cuda_stream);

/*
 * Exact top-k on the GPU: the indices, ascending, of the k largest |x[i]|
 * (ties to the lower index), the same as tt_topk_exact, for 0 < k < n.
 * scratch holds tt_cuda_topk_scratch(n) bytes. Enqueued on cuda_stream.
 */
int tt_cuda_topk_exact(const float *x, size_t n, size_t k, uint32_t *idx, void *scratch, void *cuda_stream);
size_t tt_cuda_topk_scratch(size_t n);

/*
 * Sampled top-k on the GPU, as tt_topk_sampled picks for NaN-free x (the
 * CPU compares magnitudes as floats, the GPU as bits): a threshold from a
 * sample drawn with (seed, stream), the indices passing it, ascending, at
 * most 2k, cut to the exact top-k among them when 2k passed. idx holds 2k;
 * *kept gets how many were picked, so the call waits for the stream.
 * scratch holds tt_cuda_topk_sampled_scratch(n, k) bytes; 0 < k < n.
 * The library does not call it: a queued call cannot wait for the count
 * (the compressed all-reduce runs sampled top-k on the CPU).
 */
int tt_cuda_topk_sampled(const float *x, size_t n, size_t k, uint64_t seed, uint64_t stream, uint32_t *idx,
                         size_t *kept, void *scratch, void *cuda_stream);
size_t tt_cuda_topk_sampled_scratch(size_t n, size_t k);

/*
 * The compressed all-reduce's steps around the kernels above, as the CPU
 * path does them: fp16/bf16 to fp32 and back (dtype names the narrow
 * side); the top-k pairs (idx[i], x[idx[i]]) for i < kept, padded to most
 * with index UINT32_MAX, zeroing e[idx[i]] when e is given; one rank's
 * pairs into out (placed when first, else added); x[i] /= d. Enqueued on
 * stream; return 0 or a cudaError_t.
 */
int tt_cuda_to_f32(const void *in, tutti_dtype_t dtype, size_t n, float *out, void *stream);
int tt_cuda_from_f32(const float *in, tutti_dtype_t dtype, size_t n, void *out, void *stream);
int tt_cuda_pairs_pack(const float *x, const uint32_t *idx, size_t kept, size_t most, tt_pair_t *pairs,
                       float *e, void *stream);
int tt_cuda_pairs_add(const tt_pair_t *pairs, size_t m, size_t n, float *out, int first, void *stream);
int tt_cuda_divide(float *x, size_t n, float d, void *stream);

/*
 * Holds stream until *done (device-mapped host memory, written by the
 * host) reaches ticket, in wrap-around order. Returns 0 or the launch's
 * cudaError_t.
 */
int tt_cuda_wait_ticket(const unsigned int *done, unsigned int ticket, void *stream);
/* Stores ticket into *word (device-mapped host memory) once the work
 * enqueued on stream before it is done. */
int tt_cuda_signal_ticket(unsigned int *word, unsigned int ticket, void *stream);

/*
 * Loads every kernel above on the current device (the module of each .cu
 * file, and each kernel in it), so that nothing is loaded lazily while a
 * gate holds a stream. 0 or a cudaError_t. One per file, and all of them.
 */
int tt_cuda_preload(void);
int tt_cuda_wait_preload(void);
int tt_cuda_reduce_preload(void);
int tt_cuda_compress_preload(void);
int tt_cuda_compress_coll_preload(void);
int tt_cuda_scale_preload(void);

#ifdef __cplusplus
}
#endif

#endif
