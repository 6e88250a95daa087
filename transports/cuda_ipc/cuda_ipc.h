/* SPDX-License-Identifier: MIT */
/*
 * cuda_ipc transport internals. It moves device buffers only: the core
 * connects it beside the host transports when every rank is on one host,
 * and the device layer's direct runs (src/device/direct_run.h) use it
 * through its device ops.
 *
 * Every rank of the (single-host) communicator owns:
 * - a host segment, like shm's: a header, the board where it announces,
 *   call by call, whether it can run the call on its device buffers, and
 *   its incoming queues (one per sender and channel) of slot headers;
 * - a FIFO in its GPU's memory, allocated at its first device call and
 *   exported as an IPC handle in its segment: one ring of payload slots
 *   per receiver and channel.
 * A sender copies a piece of its buffer into its own FIFO slot, then
 * publishes the slot header; the receiver's kernels copy or reduce
 * straight from that slot through the peer mapping (NVLink, PCIe P2P, or
 * the same GPU when ranks share it) and hand the slot back. Peer FIFOs are
 * opened once, at the first direct run that needs them, and kept.
 *
 * Device memory is reached through a backend: CUDA in real builds; the
 * tests plug in host memory, so everything above runs without a GPU.
 */
#ifndef TT_IPC_H
#define TT_IPC_H

#include <stdatomic.h>
#include <stdint.h>

#include "transports/local.h"
#include "transports/transport.h"

#define TT_IPC_MAGIC 0x74746970u /* "ttip" */
#define TT_IPC_HANDLE_BYTES 64   /* a cudaIpcMemHandle_t */
#define TT_IPC_REACH_MAX 32      /* GPUs one rank can list as reachable */
#define TT_IPC_BOARD 4096        /* announcements kept per rank */
#define TT_IPC_BUS_ID_BYTES 32

/*
 * Device memory as the transport needs it. Every op returns 0 or a
 * backend error code (error() names it); copies and reductions are
 * complete when they return. dev is what attach gave for one communicator.
 */
typedef struct {
    const char *name;
    /* Whether a GPU can be used here, why not in why; NULL: always. */
    int (*usable)(char *why, size_t len);
    /* Binds a communicator to GPU device (its stream, its scratch). */
    int (*attach)(int device, void **dev);
    void (*detach)(void *dev);
    /* This GPU, and every GPU whose memory its kernels can load from
     * (itself included), as keys equal in every process. */
    int (*identity)(void *dev, uint64_t *self, uint64_t *reach, int *nreach);
    /* This GPU's PCI bus id, "0000:34:00.0". */
    int (*bus_id)(void *dev, char *out, size_t len);
    int (*fifo_alloc)(void *dev, size_t bytes, void **ptr, unsigned char handle[TT_IPC_HANDLE_BYTES]);
    void (*fifo_free)(void *dev, void *ptr, size_t bytes);
    int (*fifo_open)(void *dev, const unsigned char handle[TT_IPC_HANDLE_BYTES], size_t bytes, void **ptr);
    void (*fifo_close)(void *dev, void *ptr, size_t bytes);
    /* A FIFO of this same process (ranks that are threads, as
     * ncclCommInitAll makes): its address is usable as it is, once dev's
     * GPU may load from owner_device's (peer access). IPC handles cannot be
     * opened in the process that made them. */
    int (*fifo_share)(void *dev, void *ptr, int owner_device, void **out);
    int (*copy)(void *dev, void *dst, const void *src, size_t bytes);
    int (*reduce)(void *dev, void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                  tutti_op_t op);
    int (*avg_finish)(void *dev, void *buf, size_t count, tutti_dtype_t dtype, int nranks);
    /* Grows dev's scratch to at least bytes. */
    int (*scratch)(void *dev, size_t bytes, void **out);
    const char *(*error)(int code);
} tt_ipc_backend_t;

/* The backend new communicators use: CUDA's where built, else none (no
 * direct layer); tests set their own before creating communicators. */
const tt_ipc_backend_t *tt_ipc_backend(void);
void tt_ipc_set_backend(const tt_ipc_backend_t *backend);

typedef struct {
    uint32_t magic;
    int32_t owner;
    int32_t nranks, nchannels, nslots;
    uint64_t slot_bytes;
    unsigned char key[TT_KEY_BYTES];
    _Atomic uint32_t aborted;    /* set by the owner when it gives up */
    _Atomic uint32_t fifo_ready; /* the fields below are written */
    unsigned char handle[TT_IPC_HANDLE_BYTES];
    uint64_t device;                  /* the owner's GPU */
    uint64_t fifo_addr;               /* the FIFO's address in the owner's process */
    int32_t fifo_device;              /* the owner's GPU, as its process numbers GPUs */
    int32_t pid;                      /* the owner's process */
    uint64_t reach[TT_IPC_REACH_MAX]; /* GPUs it can load from */
    int32_t nreach;
    char bus_id[TT_IPC_BUS_ID_BYTES]; /* the owner's GPU, for the topology */
    /* Flow control: how far the owner has announced (last seq + 1). */
    _Alignas(TT_LOCAL_LINE) _Atomic uint64_t announced;
    /* Entry seq % TT_IPC_BOARD: 2 (seq + 1) + whether it could go direct. */
    _Alignas(TT_LOCAL_LINE) _Atomic uint64_t board[TT_IPC_BOARD];
} tt_ipc_seg_hdr_t;

typedef struct {
    tt_local_queue_t *q;   /* in the receiver's segment */
    tt_local_slot_t *hdrs; /* nslots, after q */
    tt_req_t *reqs;
    uint64_t pos;       /* next slot position to fill (out) or to read (in) */
    uint64_t tail_seen; /* out: the receiver's tail when last read */
} tt_ipc_side_t;

typedef struct tt_ipc_ctx tt_ipc_ctx_t;

typedef struct {
    int peer;
    int pidfd; /* readable once the peer process has exited */
    int pid;
    tutti_status_t failed;      /* why the connection is unusable, or 0 */
    tt_ipc_seg_hdr_t *peer_seg; /* the peer's segment (we publish into it) */
    char *peer_fifo;            /* the peer's FIFO, opened before a call could need it */
    int shared;                 /* peer_fifo is the peer's own address (same process) */
    tt_ipc_side_t out[TT_MAX_CHANNELS], in[TT_MAX_CHANNELS];
    tt_ipc_ctx_t *ctx;
} tt_ipc_conn_t;

struct tt_ipc_ctx {
    const tt_tp_env_t *env;
    const tt_ipc_backend_t *be;
    void *dev; /* the backend's per-communicator state, once attached */
    char name[64];
    tt_ipc_seg_hdr_t *seg; /* our own segment */
    size_t seg_bytes;
    char *fifo; /* our FIFO, once allocated */
    size_t fifo_bytes;
    int nchannels, nslots;
    size_t slot_bytes;
    uint64_t announce_room;  /* seqs below this may be announced without checking the others */
    tt_ipc_seg_hdr_t **segs; /* every rank's segment (ours included), for the board */
    int reach_verdict;       /* 1 or 0 once every rank's FIFO is published; -1 before */
    int device;              /* the GPU bound to */
    int opened;              /* every peer's FIFO is open */
    int open_failed;         /* opening one failed (said once): no direct runs */
    tt_ipc_conn_t **conns;   /* by rank, for opening the peers' FIFOs */
    int unlinked;
    tt_mem_ops_t mem; /* the engine's access to this rank's GPU, once bound */
};

extern const tt_transport_ops_t tt_cuda_ipc_ops;

/* Byte offset of the queue (sender, channel) in a segment; its size. */
size_t tt_ipc_queue_offset(int nchannels, int nslots, int sender, int channel);
size_t tt_ipc_segment_bytes(int nranks, int nchannels, int nslots);
/* Byte offset of the slot ring (receiver, channel) in a sender's FIFO. */
size_t tt_ipc_fifo_offset(int nchannels, int nslots, size_t slot_bytes, int receiver, int channel);

/* The device ops (transport.h): binding publishes this rank's FIFO (once)
 * and opens the FIFOs peers published so far (on every call until all are);
 * the board (cuda_ipc_board.c) waits in announce only when this rank is
 * TT_IPC_BOARD calls ahead of some rank. */
tutti_status_t tt_ipc_bind(void *ctx, int device);
int tt_ipc_open_peers(void *ctx);
tutti_status_t tt_ipc_announce(void *ctx, uint64_t seq, int capable, int64_t timeout_ms);
int tt_ipc_announcement(const void *ctx, int rank, uint64_t seq);
int tt_ipc_reach_all(void *ctx);
int tt_ipc_bus_id(const void *ctx, int rank, char *out, size_t len);
const tt_mem_ops_t *tt_ipc_mem(void *ctx);
/* Fills ctx->mem from the backend bound to (cuda_ipc_mem.c). */
void tt_ipc_mem_init(tt_ipc_ctx_t *ctx);

tutti_status_t tt_ipc_isend(void *conn, int channel, tt_req_t *req);
tutti_status_t tt_ipc_irecv(void *conn, int channel, tt_req_t *req);
tutti_status_t tt_ipc_progress(void *conn, int *progressed);
tutti_status_t tt_ipc_alive(void *conn);

#endif
