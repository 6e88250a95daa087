/* SPDX-License-Identifier: MIT */
/* Where a buffer lives: host memory, or memory of a CUDA device; and whether a GPU can be used. */
#ifndef TT_MEMKIND_H
#define TT_MEMKIND_H

#include <stddef.h>

#include "tutti.h"

typedef enum { TT_MEM_HOST = 0, TT_MEM_DEVICE } tt_mem_kind_t;

/*
 * The kind of memory p points to. Device memory is what cudaMalloc returns;
 * pinned and managed memory count as host, since the CPU reaches them. In
 * builds without CUDA, and where no GPU or driver is present, everything
 * is host; such a machine is asked once.
 */
tt_mem_kind_t tt_mem_kind(const void *p);
/* TUTTI_SUCCESS when a CUDA device can be used; else TUTTI_ERR_UNSUPPORTED,
 * with the reason in why: built without CUDA, no driver, no GPU, a driver
 * too old, or the runtime's own words. */
tutti_status_t tt_device_usable(char *why, size_t whylen);

#endif
