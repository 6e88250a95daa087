/* SPDX-License-Identifier: MIT */
/* GPU memory for the benchmarks (tutti-perf -m device, tutti-bw); in builds
 * without CUDA every call fails with a message. */
#ifndef TT_PERF_DEVMEM_H
#define TT_PERF_DEVMEM_H

#include <stddef.h>

/* Picks GPU (rank % GPUs) and creates a stream; 0, or -1 with why filled. */
int devmem_open(int rank, void **stream, char *why, size_t whylen);
void *devmem_alloc(size_t bytes);
void devmem_free(void *p);
/* Copies in stream order (host memory pageable or pinned); 0 or -1. */
int devmem_to_device(void *dst, const void *src, size_t bytes, void *stream);
int devmem_to_host(void *dst, const void *src, size_t bytes, void *stream);
int devmem_sync(void *stream);
void devmem_close(void *stream);
/* "device  0 [0000:17:00.0] NVIDIA H100" for the GPU devmem_open picked. */
void devmem_describe(char *out, size_t len);

#endif
