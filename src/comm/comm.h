/* SPDX-License-Identifier: MIT */
/*
 * The communicator: ranks, peer connections (host transports to every peer,
 * and a device transport's when all ranks share a host), sequence numbers,
 * the algorithm policy and the last error; its life (comm.c: create, fail)
 * and the layers above it (coll, device, compress), which keep their own
 * state behind an opaque handle here, each creating and destroying it.
 * What the other files of comm/ offer is in a header of each's own:
 * handle.h, error.h, news.h, connect.h, agree.h, pair.h, setup.h, rescue.h.
 */
#ifndef TT_COMM_H
#define TT_COMM_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm/bootstrap.h"
#include "comm/stuck.h"
#include "core/link.h"
#include "sched/hosts.h"
#include "transports/transport.h"
#include "tune/policy.h"
#include "tutti.h"

/* The communicator as the library holds it. A caller holds a tutti_comm_t,
 * a handle that is never its address (handle.c). */
typedef struct tt_comm tt_comm_t;

#define TT_MAX_TRANSPORTS 6
#define TT_COMM_ERROR_BYTES 2048 /* room for a who-is-stuck report */

typedef struct {
    const tt_transport_ops_t *ops;
    void *conn;
} tt_peer_t;

/* The layers above the communicator, torn down from the top. */
typedef enum { TT_LAYER_COLL = 0, TT_LAYER_DEVICE, TT_LAYER_COMPRESS, TT_LAYER_COUNT } tt_layer_t;

typedef struct {
    /* Finishes the work the layer still has queued (before destroy's last
     * barrier); NULL when there is none to finish. */
    void (*quiesce)(tt_comm_t *comm, void *state);
    /* Frees the state; the connections are still open. */
    void (*destroy)(tt_comm_t *comm, void *state);
} tt_layer_ops_t;

struct tt_comm {
    int rank, nranks;
    int64_t timeout_ms;
    int64_t spin_ns; /* TUTTI_SPIN_US: the longest a waiting rank polls before it sleeps */
    int nchannels;
    tt_bootstrap_t bs;
    tt_tp_env_t env;
    tt_endpoint_t *endpoints;
    int ntransports; /* TUTTI_TRANSPORTS, in its order */
    const tt_transport_ops_t *tp_ops[TT_MAX_TRANSPORTS];
    void *tp_ctx[TT_MAX_TRANSPORTS]; /* NULL where not every rank offers it */
    tt_peer_t *peers;              /* host connections by rank, made at first use; NULL ops: none yet */
    int *connected;                /* the ranks with a host connection, in the order made */
    int nconnected;
    struct tt_pairs *pairs;        /* the host connections on the way (connect.c) */
    _Atomic(unsigned char) *joined; /* by rank: its host connection is whole, a borrower may take it */
    tt_comm_t *lender;             /* whose host connections this one may take (lend.c), or NULL */
    int *lender_rank;              /* the lender's rank of each rank */
    unsigned char *borrowed;       /* by rank: the host connection is the lender's (never closed here) */
    int borrowers;                 /* communicators that may take this one's (under lend.c's lock) */
    int lent_out;                  /* freed while they could: its host connections wait for them */
    _Atomic int tainted;           /* a borrower failed or was revoked: it lends no more (lend.c) */
    unsigned tp_all;               /* bit t: every rank offers transport t */
    tt_peer_t *device_peers;       /* the device transport's, by rank; NULL without one */
    int device_tp;                 /* its index in tp_ops, -1 without one */
    int device_bound;              /* bound to this rank's GPU: -1 not tried, 0 failed, 1 yes */
    uint64_t coll_seq;             /* collectives started on this communicator */
    uint64_t *send_seq, *recv_seq; /* point-to-point messages per peer */
    _Atomic tutti_status_t failed; /* set once a collective failed mid-flight */
    _Atomic int aborting;          /* waits stop (abort began, or comm was revoked) */
    _Atomic int revoked_by;        /* the rank that revoked comm (this one too), -1 */
    _Atomic int revoking;          /* calls of tutti_comm_revoke inside */
    int rescue_fd;                 /* a later shrink's TCP listener (rescue.c), -1 */
    int rescue_local_fd;           /* the same for this host's ranks, a Unix socket, -1 */
    tt_sockaddr_t *rescue;         /* every rank's TCP listener, by rank */
    tt_sockaddr_t *listeners;      /* every rank's bootstrap listener, where it is asked for connections */
    unsigned nshrinks;             /* shrinks begun on comm: their messages say which */
    struct tt_rescue_held *rescue_held; /* hellos for the next shrink, held (shrink_inbox.c) */
    int shrunk_out_by;             /* the coordinator of a shrink of comm that left this rank out, -1 */
    unsigned shrunk_out_no;        /* which shrink that was */
    char succeeded[192];           /* what this rank's grow or shrink of comm made, "" (rescue_keep.c) */
    int busy;                      /* calls inside the library (tt_comm_enter), under the registry lock */
    int oversubscribed;            /* more ranks on this host than CPUs they may use */
    int local_ranks;               /* ranks on this host, this one included */
    int cpus_online;               /* the CPUs of this host */
    int wake_fd;                   /* rung to wake a call asleep in the engine (tt_comm_wake); -1: none */
    tt_hosts_t hosts;              /* which ranks share a host */
    tt_algo_policy_t policy;
    struct {
        void *state;
        const tt_layer_ops_t *ops;
    } layers[TT_LAYER_COUNT];
    tt_progress_t progress; /* where this rank is, for the who-is-stuck report */
    tutti_comm_t handle;    /* what the caller holds (handle.c) */
    unsigned fork_epoch;    /* the process's fork count when it was made */
    int owner_pid;          /* the process that made it */
    char last_error[TT_COMM_ERROR_BYTES];
};

/* Marks comm failed after a mid-collective error and tells the peers:
 * _in when the error came in collective `from` (the first this rank will
 * not finish), so that a peer still in an earlier one finishes it; plain
 * when the rank cannot tell (a send or receive, an abort), which ends
 * every call of every peer. */
void tt_comm_fail(tt_comm_t *comm, tutti_status_t st);
void tt_comm_fail_in(tt_comm_t *comm, tutti_status_t st, uint64_t from);

/* The state layer keeps on comm (NULL until it set one). */
void *tt_comm_layer(tt_comm_t *comm, tt_layer_t layer);
void tt_comm_layer_set(tt_comm_t *comm, tt_layer_t layer, void *state, const tt_layer_ops_t *ops);

/* The layer's state, made zeroed (bytes) with ops on first use; NULL
 * without memory, recorded as comm's error naming what. */
void *tt_comm_layer_make(tt_comm_t *comm, tt_layer_t layer, size_t bytes, const tt_layer_ops_t *ops,
                         const char *what);

/* A parent lending its connections to a new communicator (lend.h). */
typedef struct tt_lend tt_lend_t;

/* Shared by tutti_comm_init, tutti_comm_init_roots, tutti_comm_init_env and
 * split: joins through nids roots (ids[0]'s key is the job's); lend (NULL:
 * none) names the parent whose connections the pairs may take. */
tutti_status_t tt_comm_create(tutti_comm_t *out, int nranks, int rank, const tt_id_t *ids, int nids,
                              const tutti_comm_params_t *params, const tt_lend_t *lend);

/* The same over connections a shrink made (tt_bootstrap_adopt takes
 * them, closed on failure too): up_fd to rank 0, or rank 0's rank_fds. */
tutti_status_t tt_comm_create_over(tutti_comm_t *out, int nranks, int rank, const unsigned char *key,
                                   int up_fd, int *rank_fds, const tutti_comm_params_t *params,
                                   const tt_lend_t *lend);

/* What a communicator made from comm keeps: its timeout and this rank's host. */
tutti_comm_params_t tt_comm_inherited(tt_comm_t *comm);
/* The name of the communicator whose key this is (tutti_comm_id): every
 * rank derives it alike, from the moment the key is agreed, and it proves
 * nothing of the key. */
uint64_t tt_comm_name(const unsigned char *key);

/* The device transport's ops and its context on comm (device_tp >= 0). */
static inline const tt_device_ops_t *tt_comm_device_ops(tt_comm_t *comm)
{
    return comm->tp_ops[comm->device_tp]->device;
}

/* The word every message header of comm carries (tt_msg_hdr_t.comm): a
 * connection shared with a parent or child carries theirs too. */
static inline uint32_t tt_comm_wire_tag(tt_comm_t *comm)
{
    return (uint32_t)comm->env.key_tag;
}

static inline void *tt_comm_device_ctx(tt_comm_t *comm)
{
    return comm->tp_ctx[comm->device_tp];
}

#endif
