/* SPDX-License-Identifier: MIT */
/* The engine runs one rank's schedule over the peer connections. */
#ifndef TT_ENGINE_H
#define TT_ENGINE_H

#include <stdint.h>

#include "comm/comm.h"
#include "transports/transport.h"
#include "reduce/reduce.h"
#include "sched/schedule.h"

/* One execution: the call's signature (sent in every message header),
 * the buffers regions refer to, and how finely to slice. */
typedef struct {
    tt_coll_t coll;      /* for messages and error reports */
    tt_coll_t wire_coll; /* what both sides put in headers (send for p2p) */
    tutti_dtype_t dtype;
    tutti_op_t op;
    int root; /* header root (0 for p2p) */
    size_t count;
    uint64_t seq;
    size_t elem;
    char *bufs[3]; /* input, output, scratch */
    tt_reduce_fn reduce;
    int nslices;
    int64_t *round_end_ns;  /* when set: when slice 0 finished each round (tutti-explain --measure) */
    const tt_peer_t *peers; /* the connections to use; NULL: comm->peers */
    int avg_ranks; /* > 0: divide each slice's output by it as soon as the slice is done (the average) */
} tt_exec_t;

/*
 * Runs s. Slice k of every region is its k-th of nslices nearly equal parts;
 * slices are spread over comm->nchannels lanes, each lane taking its slices
 * in order and a slice's rounds in order. On failure the communicator's last
 * error names the peer, the step, round and slice; TUTTI_ERR_NO_MEMORY
 * says what it lacked.
 */
tutti_status_t tt_engine_run(tt_comm_t *comm, const tt_sched_t *s, const tt_exec_t *x);

/* One schedule of a batch: it starts once item `after` (an index into the
 * batch; -1: none) has finished. */
typedef struct {
    const tt_sched_t *s;
    const tt_exec_t *x;
    int after;
} tt_engine_item_t;

/*
 * Runs n schedules together over the same connections: every item whose
 * predecessor finished makes progress in one loop, so sends and receives
 * that depend on each other across ranks (an all-to-all of point-to-point
 * calls) cannot deadlock. Items that share a peer and a direction must be
 * chained with `after`, in the order both sides post them, because each
 * channel matches messages in order. Fails on the first failing item.
 */
tutti_status_t tt_engine_run_batch(tt_comm_t *comm, const tt_engine_item_t *items, int n);

#endif
