/* SPDX-License-Identifier: MIT */
/* The communicator: ranks, peer connections, sequence numbers, last error. */
#ifndef TT_COMM_H
#define TT_COMM_H

#include <stdint.h>

#include "tune/policy.h"
#include "comm/bootstrap.h"
#include "sched/hosts.h"
#include "sched/cache.h"
#include "transports/transport.h"
#include "tutti.h"

#define TT_MAX_TRANSPORTS 4

typedef struct tt_device_queue tt_device_queue_t;
typedef struct tt_direct tt_direct_t;

typedef struct {
    const tt_transport_ops_t *ops;
    void *conn;
} tt_peer_t;

struct tutti_comm {
    int rank, nranks;
    int64_t timeout_ms;
    int nchannels;
    tt_bootstrap_t bs;
    tt_tp_env_t env;
    tt_endpoint_t *endpoints;
    int ntransports;
    const tt_transport_ops_t *tp_ops[TT_MAX_TRANSPORTS];
    void *tp_ctx[TT_MAX_TRANSPORTS];
    tt_peer_t *peers;              /* indexed by rank; peers[rank].ops is NULL */
    uint64_t coll_seq;             /* collectives started on this communicator */
    uint64_t *send_seq, *recv_seq; /* point-to-point messages per peer */
    void *scratch;
    size_t scratch_bytes;
    tutti_status_t failed;                 /* set once a collective failed mid-flight */
    uint64_t bytes_sent;                   /* by this rank's collectives so far */
    tutti_compress_stats_t compress_stats; /* of the last compressed all-reduce */
    int oversubscribed;                    /* more ranks on this host than CPUs they may use */
    tt_hosts_t hosts;                      /* which ranks share a host */
    tt_algo_policy_t policy;
    tt_sched_cache_t sched_cache;
    void *engine_ws; /* the engine's per-call arrays, kept between calls */
    size_t engine_ws_bytes;
    void *compress_ws; /* the compressed all-reduce's buffers, kept between calls */
    size_t compress_ws_bytes;
    struct {                   /* tutti-explain --measure: what the last call ran */
        int64_t *round_end_ns; /* caller's array of cap entries; NULL: not traced */
        int cap, nrounds, nslices;
        const tt_algorithm_t *algo;
    } trace;
    tt_device_queue_t *device; /* device-buffer calls and their proxy thread; NULL until the first */
    tt_direct_t *direct;       /* direct runs of device calls (one host); NULL when not set up */
    char last_error[512];
};

/* Whether comm is a live handle (not NULL, not destroyed). */
int tt_comm_valid(tutti_comm_t comm);
/* Records what went wrong for tutti_comm_last_error (comm may be NULL);
 * returns st so callers can `return tt_comm_error(...)`. */
tutti_status_t tt_comm_error(tutti_comm_t comm, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks comm failed after a mid-collective error and tells the peers. */
void tt_comm_fail(tutti_comm_t comm, tutti_status_t st);
/* Grows the scratch buffer to at least bytes. */
tutti_status_t tt_comm_scratch(tutti_comm_t comm, size_t bytes, void **out);

/* Shared by tutti_comm_init and tutti_comm_init_env. */
tutti_status_t tt_comm_create(tutti_comm_t *out, int nranks, int rank, const unsigned char *key,
                              const tt_sockaddr_t *root, const tutti_comm_params_t *params);

#endif
