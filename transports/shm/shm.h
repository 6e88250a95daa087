/* SPDX-License-Identifier: MIT */
/*
 * shm transport internals. The ranks of a host share one segment, made by
 * the host's first rank when the communicator starts and unlinked once
 * every rank mapped it; a pair's queues are reserved (posix_fallocate) as
 * it connects, so a full /dev/shm sends the pair over the next transport,
 * never a SIGBUS later. Its size is
 * bounded per host (TUTTI_SHM_HOST_BYTES, lowered to fit what /dev/shm has
 * free); each rank owns a pool in it (shm_pool.c) from which it gives each
 * peer that connects (at first use) the queues that peer sends it on: one
 * per channel. A queue is a ring of slots; the sender fills a slot and
 * then sets its sequence number, which the receiver polls (one cache line
 * carries the header and the flag); the receiver consumes the slot (copies
 * or reduces straight from it) and bumps tail, which the sender reads only
 * when the ring looks full. Each direction of a pair has the slots its
 * receiver could give: full-size while the pool has room for every peer
 * at full size, smaller after. The two copies cost less than their count
 * says: a slot is read while the caches hold what was written, one copy
 * on each rank's core. Reading the sender's buffer through the kernel
 * instead (process_vm_readv) pins and copies page by page, and measured
 * slower (perf/RESULTS.md).
 *
 * A rank with nothing to do sleeps (the engine's sleep, coll/wait.c) on its
 * doorbell, a datagram socket in the abstract namespace (no file, nothing
 * left behind) that same-host peers send a byte to when it sleeps. It first
 * raises `sleeping` in its pool and then looks at its queues once more; a
 * peer, after publishing a slot or freeing one, fences and reads
 * `sleeping`, and only when it is raised takes it down and rings. Either
 * the sleeper sees the peer's store or the peer sees the sleeper's, so no
 * wake-up is lost, and no system call is made while nobody sleeps. A
 * socket rather than a futex: the engine polls it together with sockets
 * and completion channels.
 */
#ifndef TT_SHM_H
#define TT_SHM_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "transports/local.h"
#include "transports/transport.h"

#define TT_SHM_MAGIC 0x74747368u /* "ttsh" */
#define TT_SHM_MIN_SLOT 256      /* the smallest slot a crowded pool gives */

/* shm's variables (see config_table.h for the two lists' form). The slot
 * layout is shared memory: every rank of a host must set it alike. */
#define TT_SHM_CONFIG(X)                                                                                     \
    X(SHM_SLOT_BYTES, SIZE, "256K", "bytes of one shm queue slot (a pool short of room gives smaller ones)") \
    X(SHM_SLOTS, INT, "2", "slots in each shm queue (one queue per peer and slice in flight)")               \
    X(SHM_HOST_BYTES, SIZE, "512M",                                                                          \
      "the most /dev/shm the ranks of one host reserve together (less when /dev/shm has less free)")
#define TT_SHM_CONFIG_RULES(R)                                                                               \
    R(SHM_SLOT_BYTES, .min = 64, .max = 1 << 30, .multiple = 64, .agreed = TT_CFG_AGREE_HOST)                \
    R(SHM_SLOTS, .min = 1, .max = 1024, .agreed = TT_CFG_AGREE_HOST)                                         \
    R(SHM_HOST_BYTES, .min = 1 << 20, .multiple = 4096, .agreed = TT_CFG_AGREE_HOST)
enum { TT_SHM_CONFIG(TT_CONFIG_ID) };
extern const tt_config_table_t tt_shm_config;

/* The host segment's first page. */
typedef struct {
    uint32_t magic;
    int32_t nlocal;
    uint64_t pool_bytes; /* each rank's pool, after the first page */
    unsigned char key[TT_KEY_BYTES];
} tt_shm_host_t;

#define TT_SHM_HOST_HDR 4096

/* A rank's pool header: what its peers read of it. */
typedef struct {
    int32_t owner;
    int32_t pid;
    _Atomic uint32_t aborted; /* set by the owner when it gives up */
    uint32_t bell;            /* 1: the owner has a doorbell */
    /* 1 while the owner may sleep on its doorbell; a peer that takes it
     * down rings. On a line of its own: peers read it after every publish. */
    _Alignas(TT_LOCAL_LINE) _Atomic uint32_t sleeping;
} tt_shm_seg_hdr_t;

#define TT_SHM_POOL_HDR ((sizeof(tt_shm_seg_hdr_t) + TT_LOCAL_LINE - 1) / TT_LOCAL_LINE * TT_LOCAL_LINE)

/* One side of a pair's queues, as the receiver gave them (the blob). */
typedef struct {
    uint64_t offset; /* of the region in the host segment */
    uint64_t slot_bytes;
    int32_t nslots, nchannels;
} tt_shm_region_t;

typedef struct {
    tt_local_queue_t *q;
    char *slots;       /* nslots of (tt_local_slot_t + slot_bytes) */
    size_t slot_bytes; /* this direction's */
    int nslots;
    tt_req_t *reqs;
    uint64_t pos;       /* next slot position to fill (out) or to read (in) */
    uint64_t tail_seen; /* out: the receiver's tail when last read */
} tt_shm_side_t;

typedef struct {
    int peer;
    int nchannels;
    int pidfd; /* readable once the peer process has exited */
    int pid;
    tutti_status_t failed;      /* why the connection is unusable, or 0 */
    tt_shm_seg_hdr_t *peer_seg; /* the peer's pool header */
    struct sockaddr_un bell;    /* the peer's doorbell; bell_len 0: it has none */
    socklen_t bell_len;
    tt_shm_side_t out[TT_MAX_CHANNELS], in[TT_MAX_CHANNELS];
    struct tt_shm_ctx *ctx;
} tt_shm_conn_t;

/* A region given back (its pair went another way), to give again. */
typedef struct {
    uint64_t off, len;
} tt_shm_hole_t;

/* A rank's pool: regions taken from `top` up, or from what was given back. */
typedef struct {
    uint64_t base, size; /* in the host segment */
    uint64_t top;        /* first byte never handed out, from base */
    tt_shm_hole_t *free;
    int nfree, free_cap;
    int todo; /* same-host peers not given a region yet */
    uint64_t high; /* the highest top so far: pages above it were never used */
    /* From base + size: one smallest region for each same-host rank, by
     * local index, which a peer gets when the rest has no piece left that
     * fits; least: its bytes (0: the pool is too small to keep them). */
    uint64_t least;
} tt_shm_pool_t;

typedef struct tt_shm_ctx {
    const tt_tp_env_t *env;
    char name[64];
    char *host;       /* the host segment, mapped */
    int fd;           /* its descriptor while mapped: a pair's queues are reserved as it connects */
    size_t bytes;     /* its size */
    int *local_index; /* rank -> index among ranks of this host, or -1 */
    int nlocal, nchannels, nslots;
    size_t slot_bytes, host_budget;
    tt_shm_seg_hdr_t *seg; /* our own pool's header */
    tt_shm_pool_t pool;
    tt_shm_region_t *mine; /* by local index: the region this rank gave that peer (offset 0: none) */
    int bell_fd;           /* our doorbell, for reading; -1: none (the engine naps instead of sleeping) */
    int ring_fd;           /* where rings to peers go out from */
    int armed;             /* `sleeping` is raised and the doorbell in the engine's wait set */
} tt_shm_ctx_t;

/* Bytes of a region of nchannels queues of nslots slots of slot_bytes. */
size_t tt_shm_region_bytes(int nchannels, int nslots, size_t slot_bytes);
/* Byte offset of channel ch's queue inside such a region. */
size_t tt_shm_queue_offset(int nslots, size_t slot_bytes, int ch);

tutti_status_t tt_shm_isend(void *conn, int channel, tt_req_t *req);
tutti_status_t tt_shm_irecv(void *conn, int channel, tt_req_t *req);
int tt_shm_peek(void *conn, int channel, tt_msg_hdr_t *hdr);
tutti_status_t tt_shm_progress(void *conn, int *progressed);
tutti_status_t tt_shm_alive(void *conn);

/* The pools (shm_pool.c): the host segment, made and mapped at start, and
 * each pair's regions. */
tutti_status_t tt_shm_host_start(tt_shm_ctx_t *ctx);
void tt_shm_host_unmap(tt_shm_ctx_t *ctx);
/* A region in this rank's pool for peer's messages (zeroed), its place in
 * *r; TUTTI_ERR_UNSUPPORTED when the pool has no room left. */
tutti_status_t tt_shm_region_take(tt_shm_ctx_t *ctx, int peer, tt_shm_region_t *r);
void tt_shm_region_give_back(tt_shm_ctx_t *ctx, const tt_shm_region_t *r);

/* The doorbells (shm_bell.c). */
/* Makes this rank's doorbell; without one the rank naps instead of sleeping. */
void tt_shm_bell_create(tt_shm_ctx_t *ctx);
/* Where c's peer's doorbell is, when its pool says it has one. */
void tt_shm_bell_open(tt_shm_conn_t *c);
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
