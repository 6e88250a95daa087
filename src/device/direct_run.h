/* SPDX-License-Identifier: MIT */
/*
 * Direct runs: a collective on device buffers runs on the buffers
 * themselves, as GPU work that the calling thread puts on its stream at
 * call time (copies, reductions by the GPU kernels, and stores and waits on
 * the peers' words), when every rank of a one-host communicator has its
 * buffers on a GPU for that call and every GPU can load from every other;
 * the ranks learn that call by call (tt_comm_agree). Otherwise the call is
 * staged through pinned host memory, as on other hosts. Sends and receives
 * go direct message by message, where both sides can (tt_comm_pair_*).
 */
#ifndef TT_DIRECT_RUN_H
#define TT_DIRECT_RUN_H

#include <stdint.h>

#include "coll/coll.h"
#include "device/queue.h"

/* Before a device call, on the caller's thread: binds the device transport
 * to the GPU (the first time) and opens what peers published since, with
 * that GPU current. *ready = 1 when this rank can go direct now: bound,
 * and every peer's window open (peers that have made no device call yet
 * keep it 0). */
tutti_status_t tt_direct_prepare(tt_comm_t *comm, int device, int *ready);
/* The GPU working memory a direct run needs (its scratch). */
size_t tt_direct_scratch_bytes(tt_comm_t *comm);
/* Puts c's direct run on stream: every rank agreed to go direct. */
tutti_status_t tt_direct_put(tt_comm_t *comm, const tt_device_ctx_t *ctx, const tt_call_t *c, void *stream);
/* How many collectives this communicator ran directly (for the tests). */
uint64_t tt_direct_runs(tt_comm_t *comm);

/*
 * Direct sends and receives (direct_p2p.c), between two ranks whose sides
 * agreed on each message (tt_comm_pair_*): calls[i] with direct[i] set, on
 * stream, in chunks through the sender's window. Every rank's messages to
 * one peer form one sequence of chunks, in message order, and so do its
 * messages from one peer.
 */
tutti_status_t tt_direct_p2p_put(tt_comm_t *comm, const tt_device_ctx_t *ctx, const tt_call_t *calls,
                                 const int *direct, int n, void *stream);
/* The slot size of direct sends and receives with rank peer; 0 unless its
 * side is open (its window, its segment) and their GPUs reach each other. */
size_t tt_direct_p2p_slot(tt_comm_t *comm, int peer);
/* How many sends and receives this communicator ran directly (for the tests). */
uint64_t tt_direct_messages(tt_comm_t *comm);

#endif
