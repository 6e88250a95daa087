/* SPDX-License-Identifier: MIT */
/* Public dtype/op queries. */
#include "dtype.h"

static const size_t dtype_sizes[TUTTI_NUM_DTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
static const char *const dtype_names[TUTTI_NUM_DTYPES] = {"int8",   "uint8", "int32", "uint32", "int64",
                                                          "uint64", "fp16",  "bf16",  "fp32",   "fp64"};
static const char *const op_names[TUTTI_NUM_OPS] = {"sum", "prod", "min", "max", "avg"};

TUTTI_API size_t tutti_dtype_size(tutti_dtype_t dtype)
{
    return tt_dtype_valid(dtype) ? dtype_sizes[dtype] : 0;
}

TUTTI_API const char *tutti_dtype_name(tutti_dtype_t dtype)
{
    return tt_dtype_valid(dtype) ? dtype_names[dtype] : "unknown";
}

TUTTI_API const char *tutti_op_name(tutti_op_t op)
{
    return tt_op_valid(op) ? op_names[op] : "unknown";
}
