/* SPDX-License-Identifier: MIT */
/*
 * A collective call after validation, and running it: the host runner
 * takes the call's place in the call sequence, picks the algorithm, builds
 * (or finds) the schedule and hands it to the engine.
 */
#ifndef TT_COLL_H
#define TT_COLL_H

#include <stddef.h>

#include "comm/comm.h"
#include "sched/schedule.h"
#include "tutti.h"

typedef struct {
    tt_coll_t coll;
    const void *send;
    void *recv;
    size_t count;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int root;       /* a receive from any source (any_source) sets it once the sender is known */
    int any_source; /* tutti_recv_any: not a value a caller can pass as a peer */
    size_t in_bytes, out_bytes; /* 0 where the buffer is not used on this rank */
    int in_place;
    int send_on_device, recv_on_device; /* CUDA device memory (only where the buffer is used) */
} tt_call_t;

/* Where a run goes: NULL fields mean the communicator's host connections
 * and the communicator's policy. */
typedef struct {
    const tt_peer_t *peers;
    tt_algo_policy_t *policy;
} tt_route_t;

/* Validates c (its collective, count, dtype, op and buffers set) and fills
 * in its sizes and in-place form; name is the API call, for errors. comm
 * is the communicator itself (tt_comm_enter), not the caller's handle. */
tutti_status_t tt_coll_validate(tt_comm_t *comm, tt_call_t *c, const char *name);
/*
 * The two halves of a run. begin takes c's sequence number and announces
 * it to the device transport's board: capable says this rank could run c
 * on its device buffers; *direct then says every rank could. run_at runs c
 * with that number over route (NULL: the host connections and memory).
 */
tutti_status_t tt_coll_begin(tt_comm_t *comm, const tt_call_t *c, int capable, uint64_t *seq, int *direct);
/* A send's or receive's number only (its number in its direction with
 * its peer), for callers that agree on it themselves (tt_comm_pair_*);
 * tt_coll_begin numbers a send or receive and agrees on host buffers. */
tutti_status_t tt_coll_p2p_number(tt_comm_t *comm, const tt_call_t *c, uint64_t *seq);
tutti_status_t tt_coll_run_at(tt_comm_t *comm, const tt_call_t *c, uint64_t seq, const tt_route_t *route);
/* Both halves for a validated call on host buffers, blocking: for the API
 * front, and for collectives made of collectives (the compressed
 * all-reduce), which also run on the device proxy thread. */
tutti_status_t tt_coll_run(tt_comm_t *comm, const tt_call_t *c);

/*
 * Runs validated sends and receives (TT_COLL_SEND / TT_COLL_RECV on host
 * buffers) as one batch, blocking until all are done: every call makes
 * progress together, so a rank may send to and receive from its peers in
 * any order within the batch without deadlock. Each call is numbered,
 * scheduled and sliced as a plain tutti_send/tutti_recv, and so matches
 * one on its peer. Calls to one peer in one direction run in the order
 * given (the peer must post them in that order too). A failure fails the
 * communicator, as a collective's does.
 */
tutti_status_t tt_coll_run_batch(tt_comm_t *comm, const tt_call_t *calls, int n);
/* The same in two steps, for a batch queued on a stream: the calls'
 * sequence numbers now (seqs[i] for calls[i]), the batch later at them. */
tutti_status_t tt_coll_batch_begin(tt_comm_t *comm, const tt_call_t *calls, int n, uint64_t *seqs);
tutti_status_t tt_coll_run_batch_at(tt_comm_t *comm, const tt_call_t *calls, int n, const uint64_t *seqs);

/*
 * Receives c (TT_COLL_RECV with any_source set, validated, host buffer)
 * from whichever peer sends this rank its next message first, as
 * tutti_recv from that peer would, blocking; *source gets the peer.
 * TUTTI_ERR_TIMEOUT when none sends within the timeout leaves the
 * communicator usable (nothing was received); TUTTI_ERR_UNSUPPORTED when
 * some peer's transport cannot tell a message has arrived.
 */
tutti_status_t tt_coll_recv_any(tt_comm_t *comm, tt_call_t *c, int *source);

/* Bytes this rank's collectives put on the wire so far. */
uint64_t tt_coll_bytes_sent(tt_comm_t *comm);

/* tutti-explain --measure: when slice 0 of each round of the calls that
 * follow ended (round_end_ns, cap entries; NULL stops tracing). */
void tt_coll_trace(tt_comm_t *comm, int64_t *round_end_ns, int cap);
/* What the last traced call ran: its algorithm, rounds and slices. */
const tt_algorithm_t *tt_coll_traced(tt_comm_t *comm, int *nrounds, int *nslices);

#endif
