/* SPDX-License-Identifier: MIT */
/*
 * Direct runs: a collective on device buffers runs on the buffers
 * themselves, over the communicator's device transport (cuda_ipc) and the
 * GPU kernels, when every rank of a one-host communicator has its buffers
 * on a GPU for that call and every GPU can load from every other; the
 * ranks learn that call by call (tt_comm_agree). Otherwise the call is
 * staged through pinned host memory, as on other hosts.
 */
#ifndef TT_DIRECT_RUN_H
#define TT_DIRECT_RUN_H

#include <stdint.h>

#include "coll/coll.h"

/* Before queuing a device call, on the caller's thread: binds the device
 * transport to the GPU (the first time) and opens what peers published
 * since. Returns 1 when this rank can go direct now: bound, and every
 * peer's FIFO open (peers that have made no device call yet keep it 0). */
int tt_direct_prepare(tutti_comm_t comm, int device);
/* Runs c (sequence number seq) directly on its buffers; every rank agreed. */
tutti_status_t tt_direct_run(tutti_comm_t comm, const tt_call_t *c, uint64_t seq);
/* How many calls this communicator ran directly (for the tests). */
uint64_t tt_direct_runs(tutti_comm_t comm);
/* The class of the link between the GPUs of ranks a and b in direct runs
 * (from the topology), once a direct run happened; -1 before. */
int tt_direct_link(tutti_comm_t comm, int a, int b);

#endif
