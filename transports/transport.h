/* SPDX-License-Identifier: MIT */
/*
 * The transport interface. A transport moves messages between two ranks over
 * several independent channels per peer (one per slice in flight); messages on
 * one channel arrive in the order they were posted. Every message carries a
 * header naming the call it belongs to, so a receiver detects ranks that run
 * different collectives. Transports include this header, transports/local.h
 * (what the local ones share) and the layers below them only: core
 * utilities (log, sock, config) and the topology (verbs picks the NIC
 * nearest a rank's GPU); never each other (cuda_ipc's GPU reductions go
 * through the device layer, not through a kernels' header of its own). The communicator layer reaches them through
 * tt_transports[] (the one arrow up, ARCHITECTURE.md).
 *
 * A transport serves host buffers (TT_CAP_HOST_MEM: the communicator's
 * connections to every peer) or device buffers (TT_CAP_DEVICE_MEM: the
 * direct runs of device calls, through its device ops, transports/device.h;
 * its connections carry no messages, so it has no isend, irecv or progress).
 */
#ifndef TT_TRANSPORT_H
#define TT_TRANSPORT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "core/env_config.h"
#include "core/key.h"
#include "core/link.h"
#include "tutti.h"

#define TT_ADDR_MAX 128 /* bytes of one transport address blob */
#define TT_MAX_CHANNELS 16
#define TT_HOSTNAME_MAX 64

/* Where a rank runs: the transports' reachability tests use this. */
typedef struct {
    uint64_t host_id; /* equal for ranks on one (possibly simulated) host */
    int32_t pid;
    int32_t node_id;
    int32_t cpus;   /* CPUs this rank may run on (the machine's when pinned to one) */
    uint64_t place; /* NUMA node << 32 | first CPU it may run on: orders a host's ranks */
    char hostname[TT_HOSTNAME_MAX];
} tt_endpoint_t;

/* What a transport learns about the communicator it serves. */
typedef struct {
    int rank, nranks;
    int nchannels;
    unsigned char key[TT_KEY_BYTES];
    uint64_t key_tag;               /* short public tag of the key, for names */
    int64_t timeout_ms;             /* deadline of every blocking set-up wait */
    const tt_endpoint_t *endpoints; /* nranks entries */
    /* Collective over all ranks of the communicator, for set-up steps. */
    tutti_status_t (*barrier)(void *arg);
    void *barrier_arg;
    /* Asked by set-up waits (at least every 100 ms): non-zero once another
     * rank gave up or died, having said so; the wait then ends with it. */
    tutti_status_t (*watch)(void *arg);
    void *watch_arg;
    /* The communicator's abort flag, raised from any thread by an abort or
     * a revocation before wake_fd (-1: none) rings. A transport's wait on
     * a caller's thread (a pair's set-up inside a call) polls wake_fd and
     * ends once the flag is up, as the engine's waits do: the abort waits
     * for that call to leave. NULL: nothing aborts. */
    const _Atomic int *aborting;
    int wake_fd;
} tt_tp_env_t;

#define TT_MSG_MAGIC 0x74747431u /* "ttt1" */

/* Wire header of every message: the call's signature and the payload size.
 * comm is the low half of the communicator's key tag: a communicator made by
 * a shared split or shrink sends over its parent's connections, so one
 * connection may carry two communicators' messages. */
typedef struct {
    uint32_t magic;
    uint8_t coll, dtype, op, channel;
    int32_t root;
    uint32_t comm;
    uint64_t count;
    uint64_t seq;
    uint64_t bytes;
} tt_msg_hdr_t;

static inline int tt_msg_hdr_match(const tt_msg_hdr_t *want, const tt_msg_hdr_t *got)
{
    return got->magic == TT_MSG_MAGIC && got->comm == want->comm && got->coll == want->coll &&
           got->dtype == want->dtype && got->op == want->op && got->root == want->root &&
           got->count == want->count && got->seq == want->seq && got->bytes == want->bytes;
}

/* Called by a receiving transport for each arrived piece of a reducing
 * receive: n bytes (a whole number of elements) at byte offset off. */
typedef void (*tt_combine_fn)(void *ctx, size_t off, const void *src, size_t n);

typedef enum { TT_REQ_PENDING = 0, TT_REQ_DONE, TT_REQ_FAILED } tt_req_state_t;

/* One posted send or receive. The engine owns the memory; the transport
 * queues it and completes it. */
typedef struct tt_req {
    struct tt_req *next;   /* transport's per-channel queue */
    tt_msg_hdr_t hdr;      /* send: header to send; recv: header expected */
    tt_msg_hdr_t got;      /* recv: header that arrived (for mismatch reports) */
    char *buf;             /* send: source; plain recv: destination */
    size_t len, done;      /* payload bytes, bytes moved so far */
    size_t unit;           /* element size: combine gets whole elements */
    tt_combine_fn combine; /* recv: non-NULL to reduce instead of copy */
    void *combine_ctx;
    tt_req_state_t state;
    tutti_status_t status;
} tt_req_t;

/*
 * What an idle engine sleeps on: descriptors for poll(2). A transport's arm
 * op adds the ones that become ready when its connection can move again
 * (a socket, a completion channel, a same-host doorbell); the engine adds
 * its communicator's own wake-up (abort, news from the other ranks).
 */
typedef struct {
    struct pollfd *fds;
    int n, cap;
} tt_wait_set_t;

/* Adds fd for events (merged with an entry it already has); 0, or -1
 * when the set is full (the engine then naps instead of sleeping). */
static inline int tt_wait_add(tt_wait_set_t *ws, int fd, short events)
{
    for (int i = 0; i < ws->n; i++)
        if (ws->fds[i].fd == fd) {
            ws->fds[i].events |= events;
            return 0;
        }
    if (ws->n == ws->cap)
        return -1;
    ws->fds[ws->n++] = (struct pollfd){.fd = fd, .events = events};
    return 0;
}

#define TT_CAP_HOST_MEM (1u << 0)   /* moves host buffers between peers */
#define TT_CAP_DEVICE_MEM (1u << 1) /* moves device buffers: has device ops */

/* What a device-memory transport adds (transports/device.h: cuda_ipc's
 * protocol of a board, windows and words); only its users include it. */
typedef struct tt_device_ops tt_device_ops_t;

typedef struct {
    const char *name;
    const char *summary;
    unsigned caps;
    tt_link_t link; /* the class of link it provides (device transports: refined from the topology) */
    /* Whether this machine can offer the transport at all (NULL: always);
     * why not in why. For tutti-info; listen decides per communicator. */
    int (*probe)(char *why, size_t len);
    /* Whether this transport can connect env->rank with peer, from the
     * endpoints alone (so any rank can tell for any pair). */
    int (*reachable)(const tt_tp_env_t *env, int peer);
    /* Prepares to accept connections; writes this rank's address blob.
     * TUTTI_ERR_UNSUPPORTED: not offered on this rank (it logged why at
     * info level); peers then use another transport. */
    tutti_status_t (*listen)(const tt_tp_env_t *env, void **ctx, void *addr, size_t *addr_len);
    /* Set-up every rank runs once every rank's endpoint is known, before
     * any connection (shm: the host's shared segment); env->barrier may be
     * used. NULL: none. */
    tutti_status_t (*start)(void *ctx);
    /*
     * Connects to the given peers at set-up (addrs holds every rank's blob,
     * TT_ADDR_MAX apart) and fills conns[i] for peers[i]. Every rank calls
     * it, with npeers possibly 0, so that a transport may use env->barrier
     * inside. For the device transports only: a host transport connects at
     * first use, through the pairwise ops below, which it must have.
     */
    tutti_status_t (*connect)(void *ctx, const int *peers, int npeers, const unsigned char *addrs,
                              void **conns);
    /*
     * Connections made at first use, one pair at a time (src/comm/connect.c).
     * The rank that needs the pair first offers its side for that peer as a
     * blob of at most TT_ADDR_MAX bytes; the peer's bootstrap thread
     * answers with its own (whatever the peer's main thread is doing); then
     * each side, on its main thread, joins the two into a connection: the
     * offering side first, and it never waits for the other's main thread
     * (the data it sends waits in the transport until the other joins).
     * The answering side's join never waits for the other side either: it
     * leaves *conn NULL while the other side's part is not there yet, and
     * is called again.
     * offer and answer return TUTTI_ERR_UNSUPPORTED when this rank cannot
     * serve the pair now (shm: its pool is spent), which moves the pair to
     * the next transport; withdraw undoes an offer or answer the pair did
     * not take. The caller never runs offer, answer and withdraw at once
     * (they may run on the bootstrap's thread, beside the data path).
     */
    tutti_status_t (*offer)(void *ctx, int peer, void *blob, size_t *len);
    tutti_status_t (*answer)(void *ctx, int peer, const void *offer, size_t offer_len, void *blob,
                             size_t *len);
    tutti_status_t (*join)(void *ctx, int peer, int offered, const void *theirs, size_t len, void **conn);
    void (*withdraw)(void *ctx, int peer);
    tutti_status_t (*isend)(void *conn, int channel, tt_req_t *req);
    tutti_status_t (*irecv)(void *conn, int channel, tt_req_t *req);
    /* The header of the next message on channel, once it has arrived
     * whole, while no receive is posted there: 1 and *hdr; else 0. Consumes
     * nothing. A receive from any source finds its sender with it; NULL
     * where the transport cannot tell. */
    int (*peek)(void *conn, int channel, tt_msg_hdr_t *hdr);
    /* Moves whatever can move without blocking; sets *progressed if any did.
     * A failure of the connection fails its pending requests and is returned. */
    tutti_status_t (*progress)(void *conn, int *progressed);
    /*
     * Before the engine sleeps in poll(2) on ws: arms whatever wakes this
     * connection once it can move again and adds its descriptors to ws.
     * Returns 1 when something can move already (the engine polls again
     * instead of sleeping), 0 when armed, -1 when this connection has no
     * way to wake a sleeper (the engine then naps a few microseconds at a
     * time). NULL: as -1. Every armed connection is disarmed after the
     * sleep, woken or not.
     */
    int (*arm)(void *conn, tt_wait_set_t *ws);
    void (*disarm)(void *conn);
    /* TUTTI_SUCCESS while the peer runs; TUTTI_ERR_ABORTED once it gave up
     * (its abort op ran); TUTTI_ERR_PEER_FAILED once it died or vanished. */
    tutti_status_t (*alive)(void *conn);
    /* Tells the peer this rank gives up (its alive op then says ABORTED). */
    void (*abort)(void *conn);
    void (*close)(void *conn);
    void (*finalize)(void *ctx);
    const tt_device_ops_t *device;   /* TT_CAP_DEVICE_MEM transports only */
    const tt_config_table_t *config; /* its own TUTTI_* variables (NULL: none) */
} tt_transport_ops_t;

extern const tt_transport_ops_t tt_tcp_ops;
extern const tt_transport_ops_t tt_shm_ops;
extern const tt_transport_ops_t tt_cuda_ipc_ops;
extern const tt_transport_ops_t tt_verbs_ops;

/* Every built transport, in default priority order, NULL-terminated: the
 * order TUTTI_TRANSPORTS takes when it is not set. */
extern const tt_transport_ops_t *const tt_transports[];
/* The variable tables of the built transports that have one, in the same
 * order, NULL-terminated (for tt_config_check and the tools). */
const tt_config_table_t *const *tt_transport_configs(void);

/* Helpers shared by transports for the request queues. */
static inline void tt_req_queue_push(tt_req_t **head, tt_req_t *req)
{
    req->next = NULL;
    while (*head)
        head = &(*head)->next;
    *head = req;
}

/* Queues req as pending on a connection that has not failed (else its
 * failure, which the caller returns as isend's or irecv's status). */
static inline tutti_status_t tt_req_queue_post(tt_req_t **head, tt_req_t *req, tutti_status_t failed)
{
    if (failed)
        return failed;
    req->state = TT_REQ_PENDING;
    req->done = 0;
    tt_req_queue_push(head, req);
    return TUTTI_SUCCESS;
}

static inline void tt_req_finish(tt_req_t *req, tutti_status_t status)
{
    req->status = status;
    req->state = status == TUTTI_SUCCESS ? TT_REQ_DONE : TT_REQ_FAILED;
}

#endif
