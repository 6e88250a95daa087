/* SPDX-License-Identifier: MIT */
/* The CUDA kernels, behind a C interface (built only with CUDA). */
#ifndef TT_CUDA_KERNELS_H
#define TT_CUDA_KERNELS_H

#include <stddef.h>

#include "tutti.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * dst[i] = a[i] op b[i], i < n, on device buffers, enqueued on stream (a
 * cudaStream_t; NULL: the default stream). dst may alias a or b. fp16 and
 * bf16 are widened to fp32 and rounded back to nearest even by the same
 * code as the CPU kernels, so both give the same bits; avg is sum. Returns
 * 0, or the cudaError_t of the launch.
 */
int tt_cuda_reduce(void *dst, const void *a, const void *b, size_t n, tutti_dtype_t dtype, tutti_op_t op,
                   void *stream);

#ifdef __cplusplus
}
#endif

#endif
