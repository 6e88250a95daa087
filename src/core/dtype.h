/* SPDX-License-Identifier: MIT */
/* Element sizes and names; the collectives' call signature (for logs and mismatch checks). */
#ifndef TT_DTYPE_H
#define TT_DTYPE_H

#include <stddef.h>

#include "tutti.h"

static inline int tt_dtype_valid(int dtype)
{
    return dtype >= 0 && dtype < TUTTI_NUM_DTYPES;
}

static inline int tt_op_valid(int op)
{
    return op >= 0 && op < TUTTI_NUM_OPS;
}

/* A type from its tutti-perf / nccl-tests name ("float", "fp32", "bf16",
 * "half"...). 0, or -1 for an unknown name. */
int tt_dtype_parse(const char *name, tutti_dtype_t *out);

#endif
