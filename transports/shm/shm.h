/* SPDX-License-Identifier: MIT */
/*
 * shm transport internals. Each rank owns one segment holding its incoming
 * queues: one per same-host peer and channel. A queue is a ring of slots;
 * the sender fills a slot and then sets its sequence number, which the
 * receiver polls (one cache line carries the header and the flag); the
 * receiver consumes the slot (copies or reduces straight from it) and bumps
 * tail, which the sender reads only when the ring looks full.
 *
 * A rank with nothing to do sleeps (the engine's sleep, coll/wait.c) on its
 * doorbell, a FIFO that every same-host peer opened for writing. It first
 * raises `sleeping` in its segment and then looks at its queues once more;
 * a peer, after publishing a slot or freeing one, fences and reads
 * `sleeping`, and only when it is raised takes it down and writes one byte.
 * Either the sleeper sees the peer's store or the peer sees the sleeper's,
 * so no wake-up is lost, and no system call is made while nobody sleeps.
 * A FIFO rather than a futex: the engine polls it together with sockets and
 * completion channels, and peers open it by name.
 */
#ifndef TT_SHM_H
#define TT_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#include "transports/local.h"
#include "transports/transport.h"

#define TT_SHM_MAGIC 0x74747368u /* "ttsh" */

/* shm's variables (see config_table.h for the two lists' form). The slot
 * layout is shared memory: every rank of a host must set it alike. */
#define TT_SHM_CONFIG(X)                                                                                     \
    X(SHM_SLOT_BYTES, SIZE, "256K", "bytes of one shm queue slot")                                           \
    X(SHM_SLOTS, INT, "2", "slots in each shm queue (one queue per peer and slice in flight)")
#define TT_SHM_CONFIG_RULES(R)                                                                               \
    R(SHM_SLOT_BYTES, .min = 64, .max = 1 << 30, .multiple = 64, .agreed = TT_CFG_AGREE_HOST)                \
    R(SHM_SLOTS, .min = 1, .max = 1024, .agreed = TT_CFG_AGREE_HOST)
enum { TT_SHM_CONFIG(TT_CONFIG_ID) };
extern const tt_config_table_t tt_shm_config;

typedef struct {
    uint32_t magic;
    int32_t owner;
    int32_t nlocal, nchannels, nslots;
    uint64_t slot_bytes;
    unsigned char key[TT_KEY_BYTES];
    _Atomic uint32_t aborted; /* set by the owner when it gives up */
    uint32_t bell;            /* 1: the owner has a doorbell, which every peer must open */
    /* 1 while the owner may sleep on its doorbell; a peer that takes it
     * down rings. On a line of its own: peers read it after every publish. */
    _Alignas(TT_LOCAL_LINE) _Atomic uint32_t sleeping;
} tt_shm_seg_hdr_t;

typedef struct {
    tt_local_queue_t *q;
    char *slots; /* nslots of (tt_local_slot_t + slot_bytes) */
    tt_req_t *reqs;
    uint64_t pos;       /* next slot position to fill (out) or to read (in) */
    uint64_t tail_seen; /* out: the receiver's tail when last read */
} tt_shm_side_t;

typedef struct {
    int peer;
    int nchannels, nslots;
    size_t slot_bytes;
    int pidfd; /* readable once the peer process has exited */
    int pid;
    int bell_fd;                /* the peer's doorbell, for writing; -1: it has none */
    tutti_status_t failed;      /* why the connection is unusable, or 0 */
    tt_shm_seg_hdr_t *peer_seg; /* the peer's segment (we send into it) */
    tt_shm_side_t out[TT_MAX_CHANNELS], in[TT_MAX_CHANNELS];
    struct tt_shm_ctx *ctx;
} tt_shm_conn_t;

typedef struct tt_shm_ctx {
    const tt_tp_env_t *env;
    char name[64];
    tt_shm_seg_hdr_t *seg; /* our own segment */
    size_t seg_bytes;
    int *local_index; /* rank -> index among ranks of this host, or -1 */
    int nlocal, nchannels, nslots;
    size_t slot_bytes;
    int unlinked;
    char bell_path[96];
    int bell_fd; /* our doorbell, for reading; -1: none (the engine naps instead of sleeping) */
    int armed;   /* `sleeping` is raised and the doorbell in the engine's wait set */
} tt_shm_ctx_t;

/* Byte offset of queue (sender local index, channel) inside a segment. */
size_t tt_shm_queue_offset(int nchannels, int nslots, size_t slot_bytes, int sender, int channel);
size_t tt_shm_segment_bytes(int nlocal, int nchannels, int nslots, size_t slot_bytes);

tutti_status_t tt_shm_isend(void *conn, int channel, tt_req_t *req);
tutti_status_t tt_shm_irecv(void *conn, int channel, tt_req_t *req);
int tt_shm_peek(void *conn, int channel, tt_msg_hdr_t *hdr);
tutti_status_t tt_shm_progress(void *conn, int *progressed);
tutti_status_t tt_shm_alive(void *conn);

/* The doorbells (shm_bell.c). */
/* Makes this rank's doorbell (at connect, before the peers look); without
 * one (no FIFOs where the segments live) the rank naps instead of sleeping. */
void tt_shm_bell_create(tt_shm_ctx_t *ctx);
/* Opens the doorbell of c's peer, when its segment says it has one. */
tutti_status_t tt_shm_bell_open(tt_shm_conn_t *c);
void tt_shm_bell_close(tt_shm_ctx_t *ctx);
int tt_shm_arm(void *conn, tt_wait_set_t *ws);
void tt_shm_disarm(void *conn);
/* Takes the peer's `sleeping` down and rings, if it was up; force: ring
 * whatever it says (abort). */
void tt_shm_ring_slow(tt_shm_conn_t *c, int force);

/* After publishing a slot or freeing one: wakes the peer if it sleeps.
 * The fence orders our stores before the load of `sleeping`, as the
 * sleeper's raising of it is ordered before its last look. */
static inline void tt_shm_ring(tt_shm_conn_t *c)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&c->peer_seg->sleeping, memory_order_relaxed))
        tt_shm_ring_slow(c, 0);
}

#endif
