/* SPDX-License-Identifier: MIT */
/* The names of the compression kinds and rounding modes, which the tools
 * parse and the Python package reads instead of keeping copies. */
#include <stddef.h>

#include "tutti.h"

static const char *const kind_names[] = {[TUTTI_COMPRESS_NONE] = "none",
                                         [TUTTI_COMPRESS_TOPK] = "topk",
                                         [TUTTI_COMPRESS_INT8] = "int8",
                                         [TUTTI_COMPRESS_INT4] = "int4",
                                         [TUTTI_COMPRESS_SIGN] = "sign"};
static const char *const rounding_names[] = {
    [TUTTI_ROUND_NEAREST] = "nearest", [TUTTI_ROUND_STOCHASTIC] = "stochastic"};

TUTTI_API const char *tutti_compress_kind_name(tutti_compress_kind_t kind)
{
    return (unsigned)kind < sizeof kind_names / sizeof kind_names[0] ? kind_names[kind] : "unknown";
}

TUTTI_API const char *tutti_rounding_name(tutti_rounding_t rounding)
{
    return (unsigned)rounding < sizeof rounding_names / sizeof rounding_names[0] ? rounding_names[rounding]
                                                                                 : "unknown";
}
