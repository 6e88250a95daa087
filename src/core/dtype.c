/* SPDX-License-Identifier: MIT */
/* Public dtype/op queries. */
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

/* The list's order is the public values' order. */
enum {
#define DTYPE_POSITION(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) DTYPE_POSITION_##ENUM,
    TT_DTYPE_LIST(DTYPE_POSITION) DTYPE_LISTED
#undef DTYPE_POSITION
};
#define DTYPE_IN_ORDER(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                         \
    _Static_assert((int)ENUM == (int)DTYPE_POSITION_##ENUM, #ENUM " is out of TT_DTYPE_LIST's order");
TT_DTYPE_LIST(DTYPE_IN_ORDER)
#undef DTYPE_IN_ORDER
_Static_assert((int)DTYPE_LISTED == (int)TUTTI_NUM_DTYPES, "TT_DTYPE_LIST lacks a dtype of tutti.h");

#define DTYPE_SIZE(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) sizeof(T),
#define DTYPE_NAME(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG) NAME,
static const size_t dtype_sizes[TUTTI_NUM_DTYPES] = {TT_DTYPE_LIST(DTYPE_SIZE)};
static const char *const dtype_names[TUTTI_NUM_DTYPES] = {TT_DTYPE_LIST(DTYPE_NAME)};
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
#define DTYPE_NAMED(ENUM, NAME, NCCL_TESTS_NAME, KIND, T, U, TAG)                                            \
    if (strcmp(s, NAME) == 0 || strcmp(s, NCCL_TESTS_NAME) == 0) {                                           \
        *out = ENUM;                                                                                         \
        return 0;                                                                                            \
    }
    TT_DTYPE_LIST(DTYPE_NAMED)
#undef DTYPE_NAMED
    /* C's name, which nccl-tests also takes */
    if (strcmp(s, "int") == 0) {
        *out = TUTTI_INT32;
        return 0;
    }
    return -1;
}
