/* SPDX-License-Identifier: MIT */
/*
 * verbs transport internals. Each peer connection has one or more RC queue
 * pairs (channels spread over them) and one completion queue, polled by the
 * engine's progress calls. Data moves by RDMA write with immediate: small
 * messages through a ring of registered slots at the receiver, returned by
 * credits; large ones straight into the receiver's registered buffer once
 * it has sent a ready-to-receive descriptor (RTR). libibverbs is opened at
 * run time (verbs_lib.c), so nothing here links against it.
 */
#ifndef TT_VERBS_H
#define TT_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sock.h"
#include "topo/topo.h"
#include "transports/transport.h"

#define TT_VERBS_MAX_QPS 8         /* per peer */
#define TT_VERBS_MAX_PORTS 8       /* ports a rank offers its peers */
#define TT_VERBS_RTR_DEPTH 8       /* RTR descriptors in flight per channel */
#define TT_VERBS_MAGIC 0x74747662u /* "ttvb" */
#define TT_VERBS_WHY 256

/* verbs' variables (see config_table.h for the two lists' form). */
#define TT_VERBS_CONFIG(X)                                                                                   \
    X(IB_HCA, STR, "",                                                                                       \
      "RDMA devices[:port] for verbs, comma-separated prefixes (=: exact names, ^: all but these); "         \
      "default: the active port nearest the rank's GPU or CPU")                                              \
    X(IB_GID_INDEX, INT, "-1",                                                                               \
      "GID index for verbs (RoCE; InfiniBand across subnets); -1: a RoCE v2 IPv4 GID")                       \
    X(IB_QPS_PER_PEER, INT, "2",                                                                             \
      "RC queue pairs per peer for verbs, 1..8; slices in flight spread over them")                          \
    X(IB_TIMEOUT, INT, "18", "verbs ACK timeout: 4.096 us x 2^value per retry (1..31)")                      \
    X(IB_RETRY_CNT, INT, "7", "verbs transport retries before a peer counts as lost (0..7)")                 \
    X(IB_SLOT_BYTES, SIZE, "128K", "bytes of one verbs receive slot (a multiple of 64, >= 128)")             \
    X(IB_SLOTS, INT, "4", "verbs receive slots per peer and slice in flight (the sender's credits)")         \
    X(IB_ZCOPY_BYTES, SIZE, "128K",                                                                          \
      "verbs messages from this size are written straight into the receiver's buffer; 0: never")             \
    X(IB_REG_CACHE, INT, "1",                                                                                \
      "1: keep user-buffer registrations between calls while tutti can see their memory released; 0: never") \
    X(IB_GDR, STR, "auto", "GPUDirect RDMA for device buffers: 1, 0, or auto (where driver and NIC allow)")  \
    X(IBVERBS_LIB, STR, "",                                                                                  \
      "testing hook: the libibverbs to open instead of libibverbs.so.1 (the test suites' stand-in)")
#define TT_VERBS_CONFIG_RULES(R)                                                                             \
    R(IB_GID_INDEX, .min = -1, .max = 65535)                                                                 \
    R(IB_QPS_PER_PEER, .min = 1, .max = 8)                                                                   \
    R(IB_TIMEOUT, .min = 1, .max = 31)                                                                       \
    R(IB_RETRY_CNT, .min = 0, .max = 7)                                                                      \
    R(IB_SLOT_BYTES, .min = 128, .max = 1 << 30, .multiple = 64)                                             \
    R(IB_SLOTS, .min = 1, .max = 4096)                                                                       \
    R(IB_ZCOPY_BYTES, .min = 0)                                                                              \
    R(IB_REG_CACHE, .min = 0, .max = 1)                                                                      \
    R(IB_GDR, .words = "auto,1,0")
enum { TT_VERBS_CONFIG(TT_CONFIG_ID) };
extern const tt_config_table_t tt_verbs_config;

/* The libibverbs entry points tutti uses, resolved with dlsym. The data-path
 * calls (ibv_post_send, ibv_post_recv, ibv_poll_cq) are inline wrappers in
 * verbs.h that go through the context's ops and need no symbol. */
typedef struct {
    void *handle;
    char path[128];
    struct ibv_device **(*get_device_list)(int *num);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *dev);
    struct ibv_context *(*open_device)(struct ibv_device *dev);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
    int (*query_port)(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
    int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ibv_gid_entry *entry,
                        uint32_t flags, size_t entry_size); /* optional (rdma-core >= 32) */
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova, int fd,
                                    int access); /* optional (rdma-core >= 34) */
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx, struct ibv_comp_channel *ch,
                                int vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    const char *(*wc_status_str)(enum ibv_wc_status status);
    /* Completion channels, for an engine that sleeps (optional: without
     * them a waiting rank naps instead). */
    struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
    int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
    int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx);
    void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
} tt_ibv_t;

/* libibverbs (or TUTTI_IBVERBS_LIB), opened once per process; NULL with
 * why filled when it cannot be used here. */
const tt_ibv_t *tt_verbs_lib(char *why, size_t len);
/* ibv_query_port as rdma-core's inline wrapper does it, without its symbol. */
int tt_ibv_query_port(const tt_ibv_t *ibv, struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);

typedef struct tt_verbs_reg tt_verbs_reg_t;
typedef struct tt_verbs_cache tt_verbs_cache_t;

/* A GID table entry, as the GID choice sees it. */
typedef struct {
    union ibv_gid gid;
    int type; /* IBV_GID_TYPE_* ; -1: unknown */
} tt_verbs_gid_t;

/* A port of a device, as a connection uses it. */
typedef struct {
    struct ibv_context *ctx;
    char dev[64];
    int port;
    int roce; /* Ethernet link layer */
    uint16_t lid;
    int gid_index; /* -1: LID routing (InfiniBand without TUTTI_IB_GID_INDEX) */
    union ibv_gid gid;
    uint32_t subnet; /* RoCE, IPv4 GID: its network (host order) ... */
    int subnet_bits; /* ... and prefix length; 0: not known */
    enum ibv_mtu mtu;
    int max_qp_wr, max_sge;
} tt_verbs_port_t;

/* An opened port; its protection domain and registration cache are made
 * when a connection first uses it (tt_verbs_dev_ready). */
typedef struct {
    tt_verbs_port_t port;
    struct ibv_pd *pd;
    tt_verbs_cache_t *cache;
    int owns_ctx; /* port.ctx is closed with this entry (ports of a device share it) */
} tt_verbs_dev_t;

/* Opens every active port this rank may use (TUTTI_IB_HCA) of one link
 * layer, InfiniBand where there is any (so every rank of a job agrees): at
 * [0] the one nearest to the rank's GPU, else to its CPU's NUMA node
 * (tutti's topology), ranks of one host spread over equally near ones;
 * then the others, each with its GID (TUTTI_IB_GID_INDEX or automatic).
 * TUTTI_ERR_UNSUPPORTED with why filled when no port is usable. */
tutti_status_t tt_verbs_open_ports(const tt_ibv_t *ibv, const tt_tp_env_t *env, tt_verbs_dev_t *out, int *n,
                                   char *why, size_t len);

/* TUTTI_IB_HCA, parsed: names (prefixes unless exact), optional ports. */
typedef struct {
    int exclude, exact, n;
    struct {
        char name[64];
        int port; /* 0: any */
    } e[16];
} tt_verbs_hca_t;
int tt_verbs_hca_parse(const char *text, tt_verbs_hca_t *out);
/* Whether device name, port passes the filter. */
int tt_verbs_hca_match(const tt_verbs_hca_t *f, const char *name, int port);
/* Of the GID table, the entry to use: a RoCE v2 IPv4-mapped GID, else any
 * other RoCE v2 global GID, else RoCE v2, else 0. */
int tt_verbs_pick_gid(const tt_verbs_gid_t *tab, int n);
/* Of the ports names[0..n), the index of the one nearest the rank's GPU
 * (the lrank-th local rank's) or else its NUMA node numa in t (NULL: not
 * known), the ranks of a host taking turns among equally near ones. */
int tt_verbs_pick_nearest(const tt_topo_t *t, const char *const *names, int n, int numa, int lrank);

/* Registration cache of user buffers (verbs_reg.c). */
tt_verbs_cache_t *tt_verbs_cache_new(const tt_ibv_t *ibv, struct ibv_pd *pd, int enabled);
void tt_verbs_cache_free(tt_verbs_cache_t *c);
/* A registration covering [addr, addr + len) (write: remote write access);
 * NULL after logging when the memory cannot be registered. Release it when
 * the message that uses it is done. */
tt_verbs_reg_t *tt_verbs_cache_get(tt_verbs_cache_t *c, void *addr, size_t len, int write);
void tt_verbs_cache_put(tt_verbs_cache_t *c, tt_verbs_reg_t *r);
struct ibv_mr *tt_verbs_reg_mr(const tt_verbs_reg_t *r);
/* Counters of every cache of this process, for tests and debug logs. */
typedef struct {
    uint64_t hits, misses, invalidated;
    int watching; /* released memory is noticed (userfaultfd) */
} tt_verbs_cache_stats_t;
void tt_verbs_cache_stats(tt_verbs_cache_stats_t *out);

/* GPUDirect RDMA (verbs_gdr.c). */
typedef enum { TT_GDR_NONE = 0, TT_GDR_DMABUF, TT_GDR_PEERMEM } tt_gdr_path_t;
typedef struct {
    int cuda;        /* the CUDA driver loads and has a device */
    int dmabuf_attr; /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */
    int gdr_attr;    /* CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED */
    int reg_dmabuf;  /* libibverbs has ibv_reg_dmabuf_mr */
    int peermem;     /* the nvidia_peermem (or nv_peer_mem) module is loaded */
} tt_gdr_caps_t;
/* TUTTI_IB_GDR (0, 1 or auto) against what the machine offers.
 * TUTTI_ERR_CONFIG with why when 1 was asked and cannot be met. */
tutti_status_t tt_verbs_gdr_decide(const char *setting, const tt_gdr_caps_t *caps, tt_gdr_path_t *out,
                                   char *why, size_t len);
void tt_verbs_gdr_probe(const tt_ibv_t *ibv, tt_gdr_caps_t *caps);
/* Whether ptr is CUDA device memory (0 without the CUDA driver). */
int tt_verbs_gdr_is_device(const void *ptr);
/* Registers device memory for the NIC by the chosen path; NULL after logging. */
struct ibv_mr *tt_verbs_gdr_reg(const tt_ibv_t *ibv, struct ibv_pd *pd, void *ptr, size_t len, int access,
                                tt_gdr_path_t path);

/* Device buffers given to the cache are registered by this path. */
void tt_verbs_cache_set_gdr(tt_verbs_cache_t *c, tt_gdr_path_t path);

/* What every rank publishes (its address blob). */
typedef struct {
    uint32_t magic;
    uint8_t usable, roce, port, mtu;
    uint16_t lid;
    int16_t gid_index;
    union ibv_gid gid;
    tt_sockaddr_t oob; /* set-up socket */
    uint32_t nqps, nslots, slot_bytes, zcopy_bytes;
} tt_verbs_addr_t;

/* What two ranks exchange over the set-up socket for a pair of ports they
 * try: the queue pairs made on the port, or why they could not be. */
typedef struct {
    uint32_t magic;
    int32_t rank;
    uint32_t qpn[TT_VERBS_MAX_QPS], psn[TT_VERBS_MAX_QPS];
    uint64_t region; /* the registered region: receive rings, then RTR slots */
    uint32_t rkey;
    int32_t failed; /* 1: nothing above is set */
    char why[TT_VERBS_WHY];
} tt_verbs_wire_t;

/* A port as a rank offers it to a peer (verbs_pair.c). */
typedef struct {
    char dev[32];
    uint8_t port, roce, mtu, subnet_bits;
    int16_t gid_index;
    uint16_t lid;
    uint32_t subnet;
    union ibv_gid gid;
} tt_verbs_port_info_t;

/* Every port a rank offers, in the order it prefers them. */
typedef struct {
    uint32_t magic;
    int32_t rank;
    uint32_t nports;
    tt_verbs_port_info_t port[TT_VERBS_MAX_PORTS];
} tt_verbs_offer_t;

/* Which ports two ranks try together: positions in the lower rank's
 * offer and in the higher rank's. */
typedef struct {
    int lo, hi;
} tt_verbs_pair_t;

/* The pairs two ranks try, in order, from their offers (the lower rank's
 * first): ports of one link layer only; pairs on one IPv4 subnet first,
 * then those not known to be on different ones, then the rest; each group
 * by the sum of the two places in the offers, then the lower rank's place.
 * Both ranks derive the same list. */
int tt_verbs_pair_order(const tt_verbs_offer_t *lo, const tt_verbs_offer_t *hi, tt_verbs_pair_t *out,
                        int max);

/* Immediate data: kind, channel, value. */
enum { TT_IMM_DATA = 1, TT_IMM_ZDONE, TT_IMM_CREDIT, TT_IMM_RTR, TT_IMM_ABORT };
#define TT_IMM(kind, ch, val) ((uint32_t)(kind) << 28 | (uint32_t)(ch) << 24 | ((uint32_t)(val)&0xffffffu))
/* wr_id of work requests: kind, channel, send-queue position. */
enum { TT_WR_RECV = 1, TT_WR_SIGNAL, TT_WR_ZCOPY, TT_WR_PROBE, TT_WR_ABORT };
#define TT_WR(kind, ch, seq)                                                                                 \
    ((uint64_t)(kind) << 56 | (uint64_t)(ch) << 48 | ((uint64_t)(seq)&0xffffffffffffull))

/* An RTR descriptor: where the receiver wants a large message written. */
typedef struct {
    uint64_t addr;
    uint32_t rkey;
    uint32_t direct; /* 0: send it through the slots (the receiver reduces it) */
    uint64_t bytes;
} tt_verbs_rtr_t;

typedef struct {
    struct ibv_qp *qp;
    uint64_t posted, freed; /* send WRs posted; freed by polled signalled completions */
    uint64_t last_signal;   /* posted count at the last signalled WR */
    uint32_t sq_depth, rq_depth, sig_every, max_inline;
    uint32_t recv_owed; /* receive WQEs consumed and not yet reposted */
} tt_verbs_qp_t;

/* Send side of one channel. */
typedef struct {
    tt_req_t *q;
    uint64_t slots_used, credits; /* pieces sent; slots the receiver gave back */
    uint64_t rtr_seen, rtr_used;
    int hdr_sent, phase; /* phase of the head's large message */
    size_t off;          /* payload bytes of the head sent */
    tt_verbs_reg_t *reg; /* source registration of a direct write */
    tt_verbs_rtr_t dst;  /* where the head's direct write goes */
} tt_verbs_tx_t;

/* Receive side of one channel. */
typedef struct {
    tt_req_t *q;
    tt_req_t *rtr_next;     /* first large receive still owed an RTR */
    uint64_t arrived, used; /* slots filled by the sender; consumed */
    uint32_t *piece;        /* bytes in each slot, by position */
    uint64_t zdone;         /* direct writes completed by the sender */
    uint64_t rtr_sent, large_done;
    uint32_t credits_owed;
    int hdr_ok;
    tt_verbs_reg_t *regs[TT_VERBS_RTR_DEPTH]; /* destinations offered, by RTR position */
} tt_verbs_rx_t;

struct tt_verbs_ctx;

typedef struct {
    int peer;
    struct tt_verbs_ctx *ctx;
    tt_verbs_dev_t *dev; /* the port this connection runs on */
    int nqps, nch, nslots;
    size_t slot_bytes, zcopy_bytes;
    tutti_status_t failed;
    int peer_aborted;
    char why[TT_VERBS_WHY]; /* the first failure, as the NIC reported it */
    struct ibv_cq *cq;
    struct ibv_comp_channel *chan; /* the cq's events, for a sleeping engine; NULL: none */
    int notify_armed;              /* an event was requested and has not come */
    tt_verbs_qp_t qp[TT_VERBS_MAX_QPS];
    char *region; /* ours, registered: rings in, staging out, RTR in, RTR out */
    size_t region_bytes;
    struct ibv_mr *mr;
    uint64_t peer_region;
    uint32_t peer_rkey;
    tt_verbs_tx_t tx[TT_MAX_CHANNELS];
    tt_verbs_rx_t rx[TT_MAX_CHANNELS];
    int64_t probe_at_ms; /* next keepalive write; 0 while one is out */
    int asking;          /* its set-up runs on the caller's thread (dial), not the accepting thread */
    int cut;             /* ... and was cut short: tt_verbs_cut_short said why */
} tt_verbs_conn_t;

/* A pair on its way up at first use (verbs_connect.c, verbs_accept.c):
 * offered by this rank (its main thread dials the peer when it joins), or
 * answered (the peer dials in; this rank's accepting thread brings the
 * connection up, and its main thread takes it when it joins). */
typedef enum {
    TT_VERBS_PAIR_NONE = 0,
    TT_VERBS_PAIR_OFFERED,
    TT_VERBS_PAIR_ANSWERED, /* waiting for the peer to dial */
    TT_VERBS_PAIR_BUSY,     /* the accepting thread is bringing it up */
    TT_VERBS_PAIR_UP,
    TT_VERBS_PAIR_FAILED
} tt_verbs_pair_state_t;

typedef struct {
    tt_verbs_pair_state_t state;
    int dropped;           /* withdrawn while BUSY: the accepting thread frees it */
    tutti_status_t status; /* FAILED's, and why (as the accepting thread logged it) */
    char *why;
    tt_verbs_conn_t *conn;
} tt_verbs_pending_t;

typedef struct tt_verbs_ctx {
    const tt_tp_env_t *env;
    pthread_mutex_t lock;         /* pending, busy_fd, and the ports' resources made on first use */
    tt_verbs_pending_t *pending;  /* by rank */
    pthread_t acceptor;           /* serves listen_fd once this rank has answered an offer */
    int acceptor_on;              /* acceptor runs */
    int wake_fd;                  /* rung to stop the acceptor */
    _Atomic int stopping;         /* set before wake_fd rings: the acceptor ends */
    int busy_fd;                  /* the set-up socket the acceptor is serving; -1: none */
    pid_t owner;                  /* the process that made ctx (a forked copy has no acceptor) */
    const tt_ibv_t *ibv;
    int usable;
    char why[TT_VERBS_WHY];                 /* why not, when not */
    tt_verbs_dev_t dev[TT_VERBS_MAX_PORTS]; /* the ports offered, the preferred first */
    int ndev;
    tt_verbs_offer_t offer;
    int listen_fd; /* the set-up socket peers dial, for the communicator's life */
    tt_verbs_addr_t addr;
    int nqps, nslots, timeout, retry_cnt;
    size_t slot_bytes, zcopy_bytes;
    tt_gdr_path_t gdr;
} tt_verbs_ctx_t;

/* Byte offsets inside a connection's region. */
size_t tt_verbs_ring_off(const tt_verbs_conn_t *c, int ch, uint64_t slot);
size_t tt_verbs_stage_off(const tt_verbs_conn_t *c, int ch, uint64_t slot);
size_t tt_verbs_rtr_in_off(const tt_verbs_conn_t *c, int ch, uint64_t pos);
size_t tt_verbs_rtr_out_off(const tt_verbs_conn_t *c, int ch, uint64_t pos);
size_t tt_verbs_region_bytes(int nch, int nslots, size_t slot_bytes);

/* One connection (verbs_qp.c): its region of memory, made once; then, on
 * a port, the region's registration, a completion queue and queue pairs
 * (attach, which fills mine or says why not in mine->why), brought up
 * to the peer's port (connect: 0 or an errno), or taken down again
 * (detach) to try another port. */
tutti_status_t tt_verbs_conn_create(tt_verbs_ctx_t *ctx, tt_verbs_conn_t *c);
tutti_status_t tt_verbs_conn_attach(tt_verbs_conn_t *c, tt_verbs_dev_t *dev, tt_verbs_wire_t *mine);
int tt_verbs_conn_connect(tt_verbs_conn_t *c, const tt_verbs_port_info_t *peer, const tt_verbs_wire_t *theirs,
                          const tt_verbs_wire_t *mine);
void tt_verbs_conn_detach(tt_verbs_conn_t *c);
void tt_verbs_conn_destroy(tt_verbs_conn_t *c);

/* The port's protection domain and registration cache, made on first use;
 * TUTTI_SUCCESS, or a status with why filled (verbs_dev.c). */
tutti_status_t tt_verbs_dev_ready(tt_verbs_ctx_t *ctx, tt_verbs_dev_t *dev, char *why, size_t len);

/* Ports for one connection (verbs_pair.c): this rank's offer, and the
 * pairs tried in turn over the set-up socket fd until both ranks' queue
 * pairs are up and a write went each way. */
void tt_verbs_offer_make(tt_verbs_ctx_t *ctx);
tutti_status_t tt_verbs_pair_up(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline);
/* pair_up; its errors are logged but for TUTTI_ERR_CONFIG, which pair_up
 * said in full, and a set-up cut short. The caller closes fd. */
tutti_status_t tt_verbs_exchange(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline);
/* Why the asking side's set-up (c->asking) must end before its deadline:
 * TUTTI_ERR_ABORTED once the communicator is aborted or revoked, or what
 * env->watch says (it logged why); TUTTI_SUCCESS to go on. */
tutti_status_t tt_verbs_cut_short(tt_verbs_conn_t *c);

/* Posting (verbs_post.c). */
int tt_verbs_sq_room(const tt_verbs_qp_t *q);
/* Posts one RDMA write with immediate: from (local, lkey) or inline, len
 * bytes to remote; wr_id of kind TT_WR_ZCOPY is always signalled. */
int tt_verbs_post_write(tt_verbs_conn_t *c, int qi, const void *local, uint32_t lkey, size_t len,
                        uint64_t remote, uint32_t rkey, uint32_t imm, uint64_t wr_kind, int ch);
int tt_verbs_post_recvs(tt_verbs_conn_t *c, int qi, uint32_t n);
void tt_verbs_conn_fail(tt_verbs_conn_t *c, tutti_status_t st, const char *why);

/* The two sides of the protocol (verbs_send.c, verbs_recv.c). */
void tt_verbs_tx_drive(tt_verbs_conn_t *c, int ch, int *progressed);
void tt_verbs_rx_drive(tt_verbs_conn_t *c, int ch, int *progressed);
void tt_verbs_rx_offer(tt_verbs_conn_t *c, int ch);
void tt_verbs_tx_zcopy_done(tt_verbs_conn_t *c, int ch);

/* Connections at first use (verbs_connect.c; transports/transport.h says
 * what each op does). */
tutti_status_t tt_verbs_offer(void *ctx, int peer, void *blob, size_t *len);
tutti_status_t tt_verbs_answer(void *ctx, int peer, const void *offer, size_t offer_len, void *blob,
                               size_t *len);
tutti_status_t tt_verbs_join(void *ctx, int peer, int offered, const void *theirs, size_t len, void **conn);
void tt_verbs_withdraw(void *ctx, int peer);
/* The accepting thread (verbs_accept.c): started when this rank first
 * answers an offer (under ctx->lock), stopped by finalize, which then
 * frees the pairs still pending. */
tutti_status_t tt_verbs_acceptor_start(tt_verbs_ctx_t *ctx);
void tt_verbs_acceptor_stop(tt_verbs_ctx_t *ctx);

/* Set-up (verbs_dev.c). */
/* Whether this machine has an active port; why describes them, or why not. */
int tt_verbs_probe(const tt_ibv_t *ibv, char *why, size_t len);
/* Whether the process has the CUDA driver loaded already. */
int tt_verbs_gdr_cuda_loaded(void);

/* The ops (verbs_progress.c). */
tutti_status_t tt_verbs_isend(void *conn, int channel, tt_req_t *req);
tutti_status_t tt_verbs_irecv(void *conn, int channel, tt_req_t *req);
int tt_verbs_peek(void *conn, int channel, tt_msg_hdr_t *hdr);
tutti_status_t tt_verbs_progress(void *conn, int *progressed);
tutti_status_t tt_verbs_alive(void *conn);
int tt_verbs_arm(void *conn, tt_wait_set_t *ws);
void tt_verbs_disarm(void *conn);
void tt_verbs_abort(void *conn);

#endif
