/* SPDX-License-Identifier: MIT */
/*
 * Stands in for NVIDIA's nccl.h where the toolkit has none, so that the
 * tests of libnccl.so.2 still build: tutti's own declarations of the same
 * ABI, and the macros programs take from nccl.h. Where nccl.h exists the
 * tests use it instead (configure says which).
 */
#ifndef TT_NCCL_COMPAT_H
#define TT_NCCL_COMPAT_H

#include "nccl/nccl_abi.h"

#define NCCL_MAJOR TT_NCCL_MAJOR
#define NCCL_MINOR TT_NCCL_MINOR
#define NCCL_PATCH TT_NCCL_PATCH
#define NCCL_VERSION_CODE TT_NCCL_VERSION_CODE
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_COMM_NULL NULL
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_CONFIG_INITIALIZER                                                                              \
    {                                                                                                        \
        sizeof(ncclConfig_t), NCCL_CONFIG_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),           \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,      \
            NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,      \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,      \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                                     \
    }

#define NCCL_SIM_INFO_INITIALIZER                                                                            \
    {                                                                                                        \
        sizeof(ncclSimInfo_t), 0x74685283u, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), -1.0f          \
    }

#endif
