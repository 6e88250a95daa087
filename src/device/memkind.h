/* SPDX-License-Identifier: MIT */
/* Where a buffer lives: host memory, or memory of a CUDA device. */
#ifndef TT_MEMKIND_H
#define TT_MEMKIND_H

typedef enum { TT_MEM_HOST = 0, TT_MEM_DEVICE } tt_mem_kind_t;

/*
 * The kind of memory p points to. Device memory is what cudaMalloc returns;
 * pinned and managed memory count as host, since the CPU reaches them. In
 * builds without CUDA, and where no GPU or driver is present, everything
 * is host; such a machine is asked once.
 */
tt_mem_kind_t tt_mem_kind(const void *p);
/* Whether a CUDA device can be used (1), with the reason in why when not:
 * no driver, no GPU, a driver too old, or the runtime's own words. */
int tt_cuda_usable(char *why, unsigned long whylen);

#endif
