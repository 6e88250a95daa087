/* SPDX-License-Identifier: MIT */
/* A collective call after validation, and running it on host memory. */
#ifndef TT_COLL_H
#define TT_COLL_H

#include <stddef.h>

#include "schedule.h"
#include "tutti.h"

typedef struct {
    tt_coll_t coll;
    const void *send;
    void *recv;
    size_t count;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int root;
    size_t in_bytes, out_bytes; /* 0 where the buffer is not used on this rank */
    int in_place;
    int send_on_device, recv_on_device; /* CUDA device memory (only where the buffer is used) */
} tt_call_t;

/* Runs a validated call whose buffers the CPU can reach, blocking. */
tutti_status_t tt_coll_run_host(tutti_comm_t comm, const tt_call_t *c);

#endif
