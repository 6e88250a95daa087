/* SPDX-License-Identifier: MIT */
/* Public dtype/op queries. */
#include <string.h>

#include "core/dtype.h"

static const size_t dtype_sizes[TUTTI_NUM_DTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 1, 1};
static const char *const dtype_names[TUTTI_NUM_DTYPES] = {"int8",  "uint8",  "int32",   "uint32",
                                                          "int64", "uint64", "fp16",    "bf16",
                                                          "fp32",  "fp64",   "fp8e4m3", "fp8e5m2"};
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

int tt_dtype_parse(const char *s, tutti_dtype_t *out)
{
    /* tutti's names, and nccl-tests' (half, float, bfloat16, f8e4m3...) */
    static const struct {
        const char *name;
        tutti_dtype_t t;
    } names[] = {{"int8", TUTTI_INT8},        {"uint8", TUTTI_UINT8},     {"int32", TUTTI_INT32},
                 {"int", TUTTI_INT32},        {"uint32", TUTTI_UINT32},   {"int64", TUTTI_INT64},
                 {"uint64", TUTTI_UINT64},    {"half", TUTTI_FP16},       {"fp16", TUTTI_FP16},
                 {"bfloat16", TUTTI_BF16},    {"bf16", TUTTI_BF16},       {"float", TUTTI_FP32},
                 {"fp32", TUTTI_FP32},        {"double", TUTTI_FP64},     {"fp64", TUTTI_FP64},
                 {"fp8e4m3", TUTTI_FP8_E4M3}, {"f8e4m3", TUTTI_FP8_E4M3}, {"fp8e5m2", TUTTI_FP8_E5M2},
                 {"f8e5m2", TUTTI_FP8_E5M2}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].t;
            return 0;
        }
    return -1;
}
