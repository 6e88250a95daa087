/* SPDX-License-Identifier: MIT */
/*
 * Direct runs: a collective on device buffers runs on the buffers
 * themselves, over the cuda_ipc transport and the GPU kernels, when every
 * rank of a one-host communicator has its buffers on a GPU for that call
 * and every GPU can load from every other. Otherwise the call is staged
 * through pinned host memory, as on other hosts.
 *
 * Ranks learn which, call by call, from a board in shared memory: every
 * collective, on host buffers too, announces its sequence number and
 * whether this rank could go direct; only a rank that could waits to read
 * the others' announcements, so host calls pay one store.
 */
#ifndef TT_DIRECT_H
#define TT_DIRECT_H

#include <stdint.h>

#include "coll/coll.h"
#include "tutti.h"

/* Whether communicators of this process set the layer up (before
 * knowing whether all ranks share a host): every rank must agree. */
int tt_direct_wanted(void);
/* At communicator creation, after the host connections: sets the layer
 * up when wanted and every rank is on this host. */
tutti_status_t tt_direct_init(tutti_comm_t comm);
void tt_direct_free(tutti_comm_t comm);
/* Tells the peers' direct connections this rank gave up. */
void tt_direct_abort(tutti_comm_t comm);

/* On the first device call: binds the layer to the GPU and publishes
 * this rank's FIFO. Returns 1 when direct runs are possible from here. */
int tt_direct_prepare(tutti_comm_t comm, int device);

/* Announces call seq; capable: this rank could run it directly (its
 * buffers are on the GPU and tt_direct_prepare said yes). When it
 * could, waits for every rank's announcement; *all says whether every
 * rank could and their GPUs reach each other. */
tutti_status_t tt_direct_agree(tutti_comm_t comm, uint64_t seq, int capable, int *all);
/* Runs c (sequence number seq) directly on its buffers; every rank agreed. */
tutti_status_t tt_direct_run(tutti_comm_t comm, const tt_call_t *c, uint64_t seq);
/* How many calls this communicator ran directly (for the tests). */
uint64_t tt_direct_runs(tutti_comm_t comm);

#endif
