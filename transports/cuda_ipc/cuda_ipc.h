/* SPDX-License-Identifier: MIT */
/*
 * cuda_ipc transport internals. It serves device buffers only: the core
 * connects it beside the host transports when every rank is on one host,
 * and the device layer's direct runs (src/device/direct_run.h) use it
 * through its device ops. Its connections carry no messages: a direct run
 * is GPU work on the caller's stream (copies, reductions, and stores and
 * waits on words in shared host memory), which the device layer puts
 * there; the transport owns the memory that work touches.
 *
 * Every rank of the (single-host) communicator owns:
 * - a host segment, like shm's: a header, the board where it announces,
 *   call by call, whether it can run the call on its device buffers (and
 *   the call's signature), and one inbox per peer: the words that peer's
 *   stream writes for this rank (two per round of a direct collective, two
 *   per chunk of a direct send or receive), and this rank's point-to-point
 *   offers (as receiver) and decisions (as sender) for that peer;
 * - a window in its GPU's memory, allocated at its first device call and
 *   exported as an IPC handle in its segment. TUTTI_IPC_WINDOW_BYTES (W)
 *   is the collectives' part: two halves, where its part of each round
 *   waits for the peers' kernels to read it. Half as much again (W / 2)
 *   follows for direct sends: a region per receiver (this rank's own
 *   unused), of two slots, W / 2 / nranks / 2 bytes each rounded down to
 *   256, where a chunk waits for the receiver to copy it out.
 * At its first device calls a rank opens each peer's window (the same
 * address when the peer is a thread of this process, else its IPC handle)
 * and registers each segment with its GPU, so its stream can write the
 * peers' inboxes and wait on its own.
 *
 * Device memory is reached through a backend: CUDA in real builds; the
 * tests plug in host memory, so everything above runs without a GPU.
 */
#ifndef TT_IPC_H
#define TT_IPC_H

#include <stdatomic.h>
#include <stdint.h>

#include "transports/device.h"
#include "transports/local.h"
#include "transports/transport.h"

#define TT_IPC_MAGIC 0x74746970u /* "ttip" */
#define TT_IPC_HANDLE_BYTES 64   /* a cudaIpcMemHandle_t */
#define TT_IPC_REACH_MAX 32      /* GPUs one rank can list as reachable */
#define TT_IPC_BOARD 4096        /* announcements kept per rank */
#define TT_IPC_RING 4096         /* point-to-point offers and decisions kept per pair */
/* An offer's state: the receiver cannot receive directly (or withdrew),
 * can and waits, or the sender took it (the message is direct). */
enum { TT_IPC_OFFER_NO = 0, TT_IPC_OFFER_OPEN = 1, TT_IPC_OFFER_TAKEN = 2 };

/* cuda_ipc's variables (see config_table.h for the two lists' form). The
 * windows are shared memory: every rank of a host must size them alike. */
#define TT_IPC_CONFIG(X)                                                                                     \
    X(CUDA_IPC, INT, "1",                                                                                    \
      "1: device calls of ranks on one host run on the GPUs through cuda_ipc when all can; 0: staged")       \
    X(IPC_WINDOW_BYTES, SIZE, "32M",                                                                         \
      "bytes of each rank's cuda_ipc window in GPU memory for direct collectives (two halves, one round in " \
      "each); direct sends take half as much again")
#define TT_IPC_CONFIG_RULES(R)                                                                               \
    R(CUDA_IPC, .min = 0, .max = 1)                                                                          \
    R(IPC_WINDOW_BYTES, .min = 1 << 16, .max = 1 << 30, .multiple = 512, .agreed = TT_CFG_AGREE_HOST)
enum { TT_IPC_CONFIG(TT_CONFIG_ID) };
extern const tt_config_table_t tt_cuda_ipc_config;

/*
 * Device memory and registrations as the transport needs them. Every op
 * returns a status (said() then gives the backend's words for this
 * thread's last failure); dev is what attach gave for one communicator,
 * and every op but attach and detach runs with dev's GPU current.
 */
typedef struct {
    const char *name;
    /* TUTTI_SUCCESS where a GPU can be used, else why not in why; NULL:
     * always. */
    tutti_status_t (*usable)(char *why, size_t len);
    /* Binds a communicator to GPU device. */
    tutti_status_t (*attach)(int device, void **dev);
    void (*detach)(void *dev);
    /* This GPU, and every GPU whose memory its kernels can load from
     * (itself included), as keys equal in every process. */
    tutti_status_t (*identity)(void *dev, uint64_t *self, uint64_t *reach, int *nreach);
    tutti_status_t (*window_alloc)(void *dev, size_t bytes, void **ptr,
                                   unsigned char handle[TT_IPC_HANDLE_BYTES]);
    void (*window_free)(void *dev, void *ptr, size_t bytes);
    tutti_status_t (*window_open)(void *dev, const unsigned char handle[TT_IPC_HANDLE_BYTES], size_t bytes,
                                  void **ptr);
    void (*window_close)(void *dev, void *ptr, size_t bytes);
    /* A window of this same process (ranks that are threads, as
     * ncclCommInitAll makes): its address is usable as it is, once dev's
     * GPU may load from owner_device's (peer access). IPC handles cannot be
     * opened in the process that made them. */
    tutti_status_t (*window_share)(void *dev, void *ptr, int owner_device, void **out);
    /* Host memory (a segment) that dev's GPU may read and write at *devptr. */
    tutti_status_t (*host_register)(void *dev, void *ptr, size_t bytes, void **devptr);
    void (*host_unregister)(void *dev, void *ptr);
    const char *(*said)(void);
} tt_cuda_ipc_backend_t;

#ifdef TT_HAVE_CUDA
/* The backend of the CUDA runtime itself (the tests bring a fake one). */
extern const tt_cuda_ipc_backend_t tt_cuda_ipc_runtime_backend;
#endif
/* Tests set their own backend before creating communicators. */
void tt_cuda_ipc_set_backend(const tt_cuda_ipc_backend_t *backend);

/* The segment owner's side of its pair with one peer q. */
typedef struct {
    /* What q's stream writes: direct collectives' rounds, then direct
     * sends' chunks (sent: q's chunks for the owner in q's window; taken:
     * the owner's chunks for q that q has copied out). */
    _Alignas(TT_LOCAL_LINE) _Atomic uint32_t ready;
    _Atomic uint32_t done;
    _Alignas(TT_LOCAL_LINE) _Atomic uint32_t sent;
    _Atomic uint32_t taken;
    /* What the owner writes, q reads: flow control (decisions written for
     * q, receives from q whose agreement is over), then entry k %
     * TT_IPC_RING of its offers (4 (k + 1) + TT_IPC_OFFER_*, after the
     * signature) and of its decisions (2 (k + 1) + direct). */
    _Alignas(TT_LOCAL_LINE) _Atomic uint64_t decided;
    _Atomic uint64_t took;
    _Alignas(TT_LOCAL_LINE) _Atomic uint64_t offer[TT_IPC_RING];
    uint64_t offer_sig[TT_IPC_RING];
    _Atomic uint64_t decision[TT_IPC_RING];
} tt_cuda_ipc_inbox_t;

typedef struct {
    uint32_t magic;
    int32_t owner;
    int32_t nranks;
    uint64_t window_bytes;
    unsigned char key[TT_KEY_BYTES];
    _Atomic uint32_t aborted;      /* set by the owner when it gives up */
    _Atomic uint32_t window_ready; /* the fields below are written */
    unsigned char handle[TT_IPC_HANDLE_BYTES];
    uint64_t device;                  /* the owner's GPU */
    uint64_t window_addr;             /* the window's address in the owner's process */
    int32_t window_device;            /* the owner's GPU, as its process numbers GPUs */
    int32_t pid;                      /* the owner's process, */
    uint64_t pid_ns;                  /*   in this PID namespace (containers may repeat PIDs) */
    uint64_t reach[TT_IPC_REACH_MAX]; /* GPUs it can load from */
    int32_t nreach;
    /* Flow control: how far the owner has announced (last seq + 1). */
    _Alignas(TT_LOCAL_LINE) _Atomic uint64_t announced;
    /* Entry seq % TT_IPC_BOARD: 2 (seq + 1) + whether it could go direct,
     * written after the call's signature. */
    _Alignas(TT_LOCAL_LINE) _Atomic uint64_t board[TT_IPC_BOARD];
    uint64_t sig[TT_IPC_BOARD];
} tt_cuda_ipc_seg_hdr_t;

typedef struct tt_cuda_ipc_ctx tt_cuda_ipc_ctx_t;

typedef struct {
    int peer;
    int pidfd; /* readable once the peer process has exited (-1: not watched) */
    int pid;
    tt_cuda_ipc_seg_hdr_t *peer_seg; /* the peer's segment (we write our inbox there) */
    void *peer_seg_dev;              /* as this rank's GPU reaches it, once registered */
    char *peer_window;               /* the peer's window, opened before a call could need it */
    int shared;                      /* peer_window is the peer's own address (same process) */
    tt_cuda_ipc_ctx_t *ctx;
} tt_cuda_ipc_conn_t;

struct tt_cuda_ipc_ctx {
    const tt_tp_env_t *env;
    const tt_cuda_ipc_backend_t *be;
    void *dev; /* the backend's per-communicator state, once attached */
    char name[64];
    tt_cuda_ipc_seg_hdr_t *seg; /* our own segment */
    void *seg_dev;              /* as our GPU reaches it, once registered */
    size_t seg_bytes;
    char *window;                 /* our window, once allocated */
    size_t window_bytes;          /* the collectives' part (TUTTI_IPC_WINDOW_BYTES) */
    size_t mapped_bytes;          /* the whole window: the sends' regions follow */
    size_t slot_bytes;            /* one slot of a sends' region (0: too small to use) */
    uint64_t announce_room;       /* seqs below this may be announced without checking the others */
    tt_cuda_ipc_seg_hdr_t **segs; /* every rank's segment (ours included), for the board */
    int reach_verdict;            /* 1 or 0 once every rank's window is published; -1 before */
    int device;                   /* the GPU bound to */
    int opened;                   /* every peer's window is open and its segment registered */
    int open_failed;              /* opening one failed (said once): no direct runs */
    int kept;                     /* the GPU may still use the windows and segments */
    tt_cuda_ipc_conn_t **conns;   /* by rank */
    tt_direct_peer_t *view;       /* by rank, filled as each peer opens (from bind on) */
    int unlinked;
};

extern const tt_transport_ops_t tt_cuda_ipc_ops;

/* Byte offset of sender's inbox in a segment; a segment's size. */
size_t tt_cuda_ipc_inbox_offset(int sender);
size_t tt_cuda_ipc_segment_bytes(int nranks);
/* A PID namespace's identity (its inode); 0 where /proc cannot tell. */
uint64_t tt_cuda_ipc_pid_ns(void);

/* The device ops (transport.h): binding and opening (cuda_ipc_window.c),
 * the board (cuda_ipc_board.c), which waits in announce only when this
 * rank is TT_IPC_BOARD calls ahead of some rank. */
tutti_status_t tt_cuda_ipc_bind(void *ctx, int device);
tutti_status_t tt_cuda_ipc_open_peers(void *ctx, int *all);
const tt_direct_peer_t *tt_cuda_ipc_peers(void *ctx, size_t *window_bytes);
void tt_cuda_ipc_release(void *ctx, int peer, unsigned round, const unsigned *chunks_to,
                         const unsigned *chunks_from);
const tt_direct_peer_t *tt_cuda_ipc_pair(void *ctx, int peer, size_t *slot_bytes);
/* Point-to-point agreement (cuda_ipc_pair.c). */
int tt_cuda_ipc_offer(void *ctx, int sender, uint64_t k, int capable, uint64_t sig);
int tt_cuda_ipc_claim(void *ctx, int receiver, uint64_t k, uint64_t sig);
int tt_cuda_ipc_withdraw(void *ctx, int sender, uint64_t k);
int tt_cuda_ipc_decide(void *ctx, int receiver, uint64_t k, int direct);
int tt_cuda_ipc_decision(const void *ctx, int sender, uint64_t k);
void tt_cuda_ipc_took(void *ctx, int sender, uint64_t k);
tt_cuda_ipc_inbox_t *tt_cuda_ipc_inbox(void *seg, int peer);
/* Whether segment from's GPU can load from device's memory. */
int tt_cuda_ipc_reaches(const tt_cuda_ipc_seg_hdr_t *from, uint64_t device);
void tt_cuda_ipc_keep(void *ctx);
/* Unless the GPU may still use them (kept): closes the peer's window and
 * unregisters its segment (a connection's close); unregisters this rank's
 * segment (finalize, which frees the window itself). */
void tt_cuda_ipc_unbind_peer(tt_cuda_ipc_conn_t *c);
void tt_cuda_ipc_unbind(tt_cuda_ipc_ctx_t *ctx);
tutti_status_t tt_cuda_ipc_announce(void *ctx, uint64_t seq, int capable, uint64_t sig, int64_t timeout_ms);
tt_board_t tt_cuda_ipc_announcement(const void *ctx, int rank, uint64_t seq, uint64_t *sig);
tutti_status_t tt_cuda_ipc_reach_all(void *ctx, int *all);
tutti_status_t tt_cuda_ipc_alive(void *conn);

#endif
