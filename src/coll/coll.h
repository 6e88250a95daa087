/* SPDX-License-Identifier: MIT */
/* A collective call after validation, and running it on host memory. */
#ifndef TT_COLL_H
#define TT_COLL_H

#include <stddef.h>

#include "comm/comm.h"
#include "coll/engine.h"
#include "sched/schedule.h"
#include "sched/stage.h"
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
    const tt_stage_hooks_t *stage;      /* run on host stand-ins: how slices move in and out */
} tt_call_t;

/* Validates c (its collective, count, dtype, op and buffers set), fills
 * in its sizes and where its buffers live; device buffers without a usable
 * GPU are an error. name is the API call, for errors. */
tutti_status_t tt_coll_prepare(tutti_comm_t comm, tt_call_t *c, const char *name);
/* Before a call on host buffers: waits for stream's earlier work (if
 * given) and for the communicator's queued device calls. */
tutti_status_t tt_coll_wait_turn(tutti_comm_t comm, const char *name, tutti_stream_t stream);
/* Runs a validated call whose buffers the CPU can reach, blocking. */
tutti_status_t tt_coll_run_host(tutti_comm_t comm, const tt_call_t *c);
/*
 * The two halves of a run, for the device proxy. begin takes c's sequence
 * number (none when c moves nothing) and, for a collective, announces it
 * to the direct layer: capable says this rank could run c on its device
 * buffers; *direct then says every rank could (see direct.h). run_at runs
 * c with that number over peers (NULL: the host connections), touching
 * memory through mem (NULL: host memory).
 */
tutti_status_t tt_coll_begin(tutti_comm_t comm, const tt_call_t *c, int capable, uint64_t *seq, int *direct);
tutti_status_t tt_coll_run_at(tutti_comm_t comm, const tt_call_t *c, uint64_t seq, const tt_peer_t *peers,
                              const tt_mem_ops_t *mem);
/* The compressed all-reduce of c (an all-reduce call, prepared) on buffers
 * the CPU can reach, blocking; ef NULL: no error feedback. */
tutti_status_t tt_coll_run_compressed(tutti_comm_t comm, const tt_call_t *c, const tutti_compress_t *how,
                                      tutti_ef_state_t ef);
/* Validates and runs a call on host buffers now, without waiting for the
 * queued device calls: for collectives made of collectives, which also run
 * on the device proxy thread (the compressed all-reduce). */
tutti_status_t tt_coll_host(tutti_comm_t comm, tt_call_t *c);

#endif
