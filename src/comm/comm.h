/* SPDX-License-Identifier: MIT */
/*
 * The communicator: ranks, peer connections (host transports to every peer,
 * and a device transport's when all ranks share a host), sequence numbers,
 * the link class of every pair, the algorithm policy and the last error.
 * Layers above it (coll, device, compress) keep their own state behind an
 * opaque handle here, which each creates and destroys itself.
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
    void (*quiesce)(tutti_comm_t comm, void *state);
    /* Frees the state; the connections are still open. */
    void (*destroy)(tutti_comm_t comm, void *state);
} tt_layer_ops_t;

struct tutti_comm {
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
    tutti_comm_t lender;           /* whose host connections this one may take (lend.c), or NULL */
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
    char succeeded[160];           /* what this rank's grow or shrink of comm made, "" (rescue_keep.c) */
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

/*
 * Public handles (handle.c). The value a caller holds is a registry slot
 * and a generation, never the communicator's address, so a destroyed
 * handle stays invalid whatever is allocated later. new returns NULL when
 * the registry is full.
 */
tutti_comm_t tt_comm_handle_new(tutti_comm_t comm);
/* Installs the registry's fork handlers (once). A library above with a
 * registry of its own installs its handlers after these, so that fork takes
 * its lock first, the order in which its calls take both. */
void tt_comm_fork_handlers(void);
/* Takes handle out of the registry: the communicator behind it (NULL when
 * it was not live), with its abort flag raised when abort is set. */
tutti_comm_t tt_comm_handle_take(tutti_comm_t handle, int abort, int *forked);
/* The communicator behind handle, NULL when it is not live; *forked (may
 * be NULL) says it was made by a process this one was forked from. */
tutti_comm_t tt_comm_lookup(tutti_comm_t handle, int *forked);
/*
 * A public call that uses a communicator enters before and leaves after:
 * enter gives the communicator behind handle (live, made by this process;
 * else TUTTI_ERR_INVALID_ARG, said under name), and tutti_comm_abort from
 * another thread interrupts its waits and frees it only once it has left.
 */
tutti_status_t tt_comm_enter(tutti_comm_t handle, const char *name, tutti_comm_t *out);
void tt_comm_leave(tutti_comm_t comm);
/* Until no more calls are inside comm than *keep says (read as it
 * changes; NULL: until all have left). */
void tt_comm_wait_idle(tutti_comm_t comm, _Atomic int *keep);
/* Raises the flag the engine reads on every poll: whatever waits on comm
 * stops now (abort and revoke both come through here). */
void tt_comm_interrupt(tutti_comm_t comm);
/* Records what went wrong for tutti_comm_last_error (comm may be NULL) and
 * logs it: for the place that finds the fault. Returns st so callers can
 * `return tt_comm_error(...)`. */
tutti_status_t tt_comm_error(tutti_comm_t comm, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same, logged under subsystem sub. */
tutti_status_t tt_comm_error_in(tutti_comm_t comm, int sub, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Records an error that the code which found it has logged already (a bad
 * TUTTI_* value is logged once per process however often it is checked);
 * logs nothing. */
tutti_status_t tt_comm_error_logged(tutti_comm_t comm, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records context for a fault a lower layer already logged, followed by
 * that fault's text (the last one logged on this thread since
 * tt_log_fault_mark); logs nothing. */
tutti_status_t tt_comm_context(tutti_comm_t comm, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* This thread's last error (error.c), what tutti_comm_last_error says
 * without a communicator. */
const char *tt_comm_thread_error(void);
/* Wakes a call of comm that sleeps in the engine waiting for its peers, so
 * that it looks at once at a flag just raised (aborting); without it the
 * call would see the flag only at its next liveness check (ALIVE_CHECK_NS,
 * src/coll/engine.c). Any thread may call it. */
void tt_comm_wake(tutti_comm_t comm);
/* Whether call may start on comm: TUTTI_ERR_REVOKED once it was revoked,
 * TUTTI_ERR_ABORTED once a call failed on it (recorded and logged). */
tutti_status_t tt_comm_usable(tutti_comm_t comm, const char *call);
/* Marks comm failed after a mid-collective error and tells the peers:
 * _in when the error came in collective `from` (the first this rank will
 * not finish), so that a peer still in an earlier one finishes it; plain
 * when the rank cannot tell (a send or receive, an abort), which ends
 * every call of every peer. */
void tt_comm_fail(tutti_comm_t comm, tutti_status_t st);
void tt_comm_fail_in(tutti_comm_t comm, tutti_status_t st, uint64_t from);

/*
 * News from the other ranks (news.c), for a call described as `call`:
 * collective number seq, or a send or receive (seq UINT64_MAX).
 * Non-zero (recorded and logged) when the call must end: a rank gave up or
 * died, one entered destroy before making this collective, or a rank timed
 * out and the who-is-stuck report came. One load when there is no news.
 */
tutti_status_t tt_comm_news(tutti_comm_t comm, const char *call, uint64_t seq);
/* Whether there is news at all (two relaxed loads). */
int tt_comm_has_news(tutti_comm_t comm);
/* TUTTI_ERR_REVOKED (recorded and logged) once comm was revoked, by this
 * rank or another, for call; else TUTTI_SUCCESS. */
tutti_status_t tt_comm_revoked(tutti_comm_t comm, const char *call);
/* The who-is-stuck report for this rank's timed-out call, into out. */
void tt_comm_who_is_stuck(tutti_comm_t comm, char *out, size_t len);

/* The state layer keeps on comm (NULL until it set one). */
void *tt_comm_layer(tutti_comm_t comm, tt_layer_t layer);
void tt_comm_layer_set(tutti_comm_t comm, tt_layer_t layer, void *state, const tt_layer_ops_t *ops);
/* The layer's state, made zeroed (bytes) with ops on first use; NULL
 * without memory, recorded as comm's error naming what. */
void *tt_comm_layer_make(tutti_comm_t comm, tt_layer_t layer, size_t bytes, const tt_layer_ops_t *ops,
                         const char *what);

/* The class of the host link between ranks a and b (a != b): that of the
 * first transport every rank offers that reaches b from a, from their
 * endpoints alone (no table of every pair is kept). */
tt_link_t tt_comm_link(tutti_comm_t comm, int a, int b);
/* Whether transport t reaches b from a (any rank can tell for any pair). */
int tt_comm_reaches(tutti_comm_t comm, int t, int a, int b);
/* The first host transport from index `from` on that every rank offers
 * and that reaches q from this rank; -1: none. */
int tt_comm_host_tp(tutti_comm_t comm, int q, int from);

/*
 * Connections at first use (connect.c). Makes sure this rank has a host
 * connection to each of peers[0..n) (ranks of comm, this one skipped),
 * making the missing ones: each with a peer that takes part, as a
 * collective's schedule or the matching send or receive does. Fails
 * (recorded) when a peer dies, or gives up in collective seq or before it
 * (seq: the earliest call the connections serve; UINT64_MAX for sends and
 * receives, which any give-up ends), at the timeout, or when no transport
 * can serve a pair. A peer's own requests are answered by its bootstrap
 * thread, so the rank that asks never waits for the other's main thread.
 */
tutti_status_t tt_comm_connect(tutti_comm_t comm, const int *peers, int n, uint64_t seq);
/* Completes the connections other ranks asked this one for (a receive
 * from any source must see their messages); cheap when there are none. */
tutti_status_t tt_comm_connect_asked(tutti_comm_t comm);
/* Set-up and teardown of what connect.c keeps (local_only: in a forked
 * child, as tt_comm_teardown). */
tutti_status_t tt_comm_pairs_init(tutti_comm_t comm);
void tt_comm_pairs_free(tutti_comm_t comm, int local_only);

/*
 * Announces collective seq (signature sig) to the device transport's
 * board; capable says this rank could run it on its device buffers. When
 * it could, waits for every rank's announcement: *all says whether every
 * rank could and their devices reach each other; a rank that could but
 * announced another signature is a mismatch. Without a device transport,
 * *all is 0.
 */
tutti_status_t tt_comm_agree(tutti_comm_t comm, uint64_t seq, int capable, uint64_t sig, int *all);
/* Whether a wait of call's (seq: its number, UINT64_MAX for point to
 * point) must end, and ended it: news from the star (a revocation, a rank
 * that died or gave up) or this rank's abort; the communicator failed. */
int tt_comm_wait_ended(tutti_comm_t comm, const char *call, uint64_t seq);
/*
 * Point-to-point agreement through the device transport (src/comm/pair.c),
 * per pair and direction, message by message (k: the message's number in
 * its direction, as send_seq and recv_seq count them), so that both sides
 * of every message agree whether it runs directly. Every send and receive
 * takes part, on host buffers too (one or two stores). The receiver leads:
 * tt_comm_pair_offer says whether it could receive k directly (sig: the
 * message's signature), then tt_comm_pair_read_decision reads the
 * sender's decision (waiting for it only when it offered, *direct, and for at most
 * TT_PAIR_RECEIVE_WAIT_NS: then it withdraws the offer, and k stages unless
 * the sender took it first) and lets the sender reuse its place. The
 * sender never waits for the receiver, but for up to wait_ns for its
 * offer: tt_comm_pair_decide makes k direct when it takes the receiver's
 * offer, of the same signature, and this rank is capable. Without a device
 * transport nothing is stored and nothing is direct.
 */
#define TT_PAIR_RECEIVE_WAIT_NS 2000000
/* Tests that need every message direct on a loaded machine wait longer. */
void tt_comm_pair_set_receive_wait(int64_t ns);
tutti_status_t tt_comm_pair_offer(tutti_comm_t comm, int sender, uint64_t k, int capable, uint64_t sig);
tutti_status_t tt_comm_pair_decide(tutti_comm_t comm, int receiver, uint64_t k, int capable, uint64_t sig,
                                   int64_t wait_ns, int *direct);
tutti_status_t tt_comm_pair_read_decision(tutti_comm_t comm, int sender, uint64_t k, int offered,
                                          int *direct);
/* Binds the device transport to GPU device on the first call (later calls
 * say what the first found): 1 when direct runs are possible from here. */
int tt_comm_device_bind(tutti_comm_t comm, int device);

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
tutti_comm_params_t tt_comm_inherited(tutti_comm_t comm);

/* Between the bootstrap and a ready communicator (setup.c), begun at t0
 * (tt_now_ms, for the log): publishes this rank's endpoint and where it
 * listens, has rank 0 check that every rank steers alike, starts the
 * transports (no pair connects yet, but for transports that cannot
 * connect at first use). */
tutti_status_t tt_comm_setup(tutti_comm_t comm, int node_id, int64_t t0);
/* Its transports' half (tp_setup.c): picks and starts listening on the
 * transports TUTTI_TRANSPORTS lists (offered: bit t, this rank offers t;
 * hash: of the list; blobs: what each listen wrote); then, once
 * comm->tp_all is known, starts them and makes the connections that cannot
 * wait for first use. */
tutti_status_t tt_comm_tp_listen(tutti_comm_t comm, uint32_t *offered, uint64_t *hash,
                                 unsigned char (*blobs)[TT_ADDR_MAX]);
tutti_status_t tt_comm_tp_connect(tutti_comm_t comm, unsigned char (*blobs)[TT_ADDR_MAX]);
/* This rank's listeners for a later shrink (rescue.c): opened before
 * set-up's exchange (the TCP address goes with this rank's record), kept
 * until comm is freed; narrow closes the TCP one once set-up shows every
 * rank on this host reaches this one over its Unix socket. In a forked
 * child (local_only) close leaves the parent's socket file alone. */
tutti_status_t tt_rescue_open(tutti_comm_t comm, tt_sockaddr_t *addr);
void tt_rescue_narrow(tutti_comm_t comm);
void tt_rescue_close(tutti_comm_t comm, int local_only);

/* The device transport's ops and its context on comm (device_tp >= 0). */
static inline const tt_device_ops_t *tt_comm_device_ops(tutti_comm_t comm)
{
    return comm->tp_ops[comm->device_tp]->device;
}

static inline void *tt_comm_device_ctx(tutti_comm_t comm)
{
    return comm->tp_ctx[comm->device_tp];
}

/* Closes what tt_comm_setup opened. In a forked child (local_only) it
 * only releases this process's copies: the host transports' descriptors
 * and mappings; the device transport is left alone. keep_host: the host
 * connections and transports stay for the communicators that borrow them
 * (lend.h), for tt_comm_teardown_host once the last of them is freed. */
void tt_comm_teardown(tutti_comm_t comm, int local_only, int keep_host);
void tt_comm_teardown_host(tutti_comm_t comm);

#endif
