/* SPDX-License-Identifier: MIT */
/*
 * The user-space stand-in for libibverbs that tutti's verbs tests load in
 * place of the real library (tests/fakes/fakeverbs/README.md says what it models).
 * Every process that opens a device becomes a host with its own NIC; the
 * NICs of one test meet in a shared "fabric" directory and exchange packets
 * through rings in shared memory, one ring per connected queue pair.
 */
#ifndef FV_H
#define FV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FV_MAX_DEVS 8
#define FV_MAX_PORTS 2
#define FV_MAX_CTX 128           /* opened devices per fabric */
#define FV_MAX_QPS 64            /* queue pairs per opened device */
#define FV_RING_BYTES (64 << 10) /* request ring of one queue pair */
#define FV_MAX_SGE 8
#define FV_MAX_INLINE 256
#define FV_MAX_MSG (1u << 30) /* port max_msg_sz */
#define FV_ROCE_GIDS 4
#define FV_MAGIC 0x66766231u /* "fvb1" */

/* Codes a responder leaves for the requester of a refused message. */
enum { FV_NAK_NONE = 0, FV_NAK_ACCESS, FV_NAK_INVALID, FV_NAK_OPERATIONAL, FV_NAK_SEQ };

enum { FV_OP_WRITE = 1, FV_OP_WRITE_IMM, FV_OP_SEND, FV_OP_SEND_IMM };

/* One record of a request ring: a packet of at most the path MTU. */
typedef struct {
    uint32_t bytes; /* of the record, header included, 8-byte aligned; 0: wrap to the start */
    uint8_t opcode, first, last, pad;
    uint32_t psn;
    uint32_t imm;     /* as posted (network order) */
    uint32_t rkey;    /* R_Key of the write */
    uint32_t payload; /* bytes of data after this header */
    uint64_t msn;     /* the requester's message number */
    uint64_t raddr;   /* where the message's first byte goes */
    uint64_t msg_len; /* bytes of the whole message */
    uint64_t offset;  /* of this packet within the message */
} fv_pkt_t;

/* What peers see of one queue pair: its inbound ring and its answers. */
typedef struct {
    _Alignas(64) _Atomic uint32_t qpn; /* 0: slot free */
    _Atomic uint32_t state;            /* enum ibv_qp_state, for requesters to see */
    _Atomic uint32_t remote_qpn;       /* the only requester it accepts (set at RTR) */
    uint32_t port;
    uint32_t gid_type; /* RoCE: version of its source GID; packets of the other one miss it */
    _Atomic uint32_t mtu_bytes;
    _Alignas(64) _Atomic uint64_t head; /* ring bytes produced by the requester */
    _Alignas(64) _Atomic uint64_t tail; /* ring bytes consumed by this responder */
    _Atomic uint64_t acked;             /* messages completed, in order */
    _Atomic uint64_t nak_msn;           /* msn + 1 of a refused message, or 0 */
    _Atomic uint32_t nak_code;
    _Atomic uint64_t rnr_msn; /* msn + 1 of a message waiting for a receive WQE, or 0 */
    _Atomic uint32_t rnr_timer;
    _Alignas(8) char ring[FV_RING_BYTES]; /* packets (fv_pkt_t) at multiples of 8 */
} fv_qp_shared_t;

/* The shared half of one opened device: what other NICs read and poke. */
typedef struct {
    uint32_t magic;
    _Atomic int32_t pid;
    _Atomic uint32_t doorbell; /* futex word: bumped by whoever gives this NIC work */
    _Atomic uint32_t sleeping;
    fv_qp_shared_t qp[FV_MAX_QPS];
} fv_seg_t;

typedef struct {
    _Atomic int32_t pid; /* 0: free */
    _Atomic uint32_t gen;
    int32_t dev;     /* index in the device list */
    int32_t roce;    /* link layer of every port: 1 Ethernet, 0 InfiniBand */
    uint32_t nports; /* LIDs and GIDs derive from the slot and the port */
    int32_t net;     /* devices of one network reach each other: 0, or the pid for an alone device */
} fv_dir_ctx_t;

/* The fabric directory, one shared segment per test. */
typedef struct {
    uint32_t magic;
    _Atomic uint32_t ready;
    _Atomic uint32_t next_gen;
    fv_dir_ctx_t ctx[FV_MAX_CTX];
} fv_dir_t;

typedef struct {
    char name[IBV_SYSFS_NAME_MAX];
    int roce;
    int nports;
    int down;  /* ports report DOWN */
    int alone; /* on a network of its own process's only */
} fv_devcfg_t;

typedef struct fv_ctx fv_ctx_t;
typedef struct fv_qp fv_qp_t;

typedef struct {
    struct ibv_pd pd;
} fv_pd_t;

typedef struct fv_mr {
    struct ibv_mr mr;
    int access;
    uint64_t iova;     /* the address remote and local keys address */
    char *base;        /* where iova maps in this process */
    char *orphan;      /* after ttfake_release_pages: the pages the NIC still holds */
    int dmabuf_mapped; /* base is our own mapping of a dmabuf */
    struct fv_mr *next;
} fv_mr_t;

typedef struct {
    struct ibv_wc wc;
    fv_qp_t *qp; /* whose queue slot the completion retires */
    int send;
    uint64_t index; /* of the WQE in its queue */
} fv_cqe_t;

typedef struct {
    struct ibv_cq cq;
    pthread_mutex_t lock;
    int cap;
    fv_cqe_t *e;
    uint64_t head, tail; /* produced, consumed */
    int overrun;
    int notify; /* ibv_req_notify_cq was called: the next entry raises an event on cq.channel */
} fv_cq_t;

/* A completion channel: events are the CQs' addresses, written down a pipe. */
typedef struct {
    struct ibv_comp_channel ch; /* ch.fd: the reading end */
    int wfd;
} fv_chan_t;

typedef struct {
    uint64_t wr_id;
    int opcode; /* FV_OP_* */
    int signaled;
    int num_sge;
    struct ibv_sge sge[FV_MAX_SGE];
    char inl[FV_MAX_INLINE];
    int is_inline;
    uint64_t raddr;
    uint32_t rkey;
    uint32_t imm;
    uint64_t len;
    uint64_t msn;
    uint32_t psn_first;
    int error; /* local error found at post time, reported at completion */
} fv_wqe_t;

typedef struct {
    uint64_t wr_id;
    int num_sge;
    struct ibv_sge sge[FV_MAX_SGE];
} fv_rwqe_t;

struct fv_qp {
    struct ibv_qp qp;
    fv_ctx_t *ctx;
    int slot;
    fv_qp_shared_t *sh;
    struct ibv_qp_cap cap;
    int sig_all;
    /* attributes set through modify */
    int port, access, path_mtu_bytes, timeout, retry_cnt, rnr_retry, min_rnr_timer;
    uint32_t dest_qpn, rq_psn, sq_psn;
    struct ibv_ah_attr ah;
    /* send queue: posted [retired, head); transmitted up to tx (tx_off into it) */
    fv_wqe_t *sq;
    uint64_t sq_head, sq_tx, sq_done;
    _Atomic uint64_t sq_retired; /* advanced by whoever polls the CQ */
    uint64_t tx_off;
    uint32_t next_psn;
    long long last_ack_ns; /* when the acknowledged count last moved */
    int retries, rnr_retries;
    long long rnr_since_ns;
    /* receive queue: posted [retired, head); consumed up to used */
    fv_rwqe_t *rq;
    uint64_t rq_head, rq_used;
    _Atomic uint64_t rq_retired;
    /* responder: next expected PSN, messages completed */
    uint32_t epsn;
    uint64_t rx_msgs;
    fv_mr_t *rx_mr; /* target of the write being received */
    int rx_drop;    /* rest of a refused message is discarded */
    uint64_t rx_send_off;
};

typedef struct {
    fv_seg_t *seg; /* mapped segment of a peer context, or NULL */
    uint32_t gen;
    int pidfd;
} fv_peer_t;

struct fv_ctx {
    struct verbs_context vctx; /* ends with the ibv_context handed out */
    const fv_devcfg_t *dev;
    int index; /* slot in the fabric directory */
    uint32_t gen;
    fv_seg_t *seg;
    char seg_name[96];
    pthread_mutex_t lock; /* the NIC: one thread at a time moves packets */
    pthread_t thread;
    _Atomic int stop;
    fv_qp_t *qps[FV_MAX_QPS];
    fv_mr_t *mrs;
    uint32_t next_key;
    fv_peer_t peers[FV_MAX_CTX];
};

/* fv_fabric.c */
fv_dir_t *fv_dir(void);
const char *fv_fabric_name(void);
int fv_devcfg_count(void);
const fv_devcfg_t *fv_devcfg(int i);
uint16_t fv_lid(int ctx_index, int port);
/* GID entry idx of a port of directory context ctx_index; -1 if no such entry. */
int fv_gid(int ctx_index, int roce, int port, int idx, union ibv_gid *gid, int *type);
fv_seg_t *fv_peer_seg(fv_ctx_t *ctx, int index, uint32_t gen, int *alive);
void fv_ring_doorbell(fv_seg_t *seg);
long long fv_now_ns(void);
/* ctx's contexts' verbs, filled in by fv_verbs.c and fv_qp.c */
void fv_set_ops(struct ibv_context *c);
fv_ctx_t *fv_ctx_of(struct ibv_context *c);

/* fv_mr.c */
void fv_ctx_track(fv_ctx_t *c, int add);
extern _Atomic int fv_inject_bad_rkey, fv_inject_qp_error;
fv_mr_t *fv_mr_find(fv_ctx_t *ctx, uint32_t key, int remote);
/* Where [addr, addr + len) of mr lives in this process, NULL if outside it. */
char *fv_mr_ptr(fv_mr_t *mr, uint64_t addr, uint64_t len);

/* fv_cq.c */
int fv_cq_push(fv_cq_t *cq, const fv_cqe_t *e);
void fv_cq_forget(fv_cq_t *q, fv_qp_t *qp);

/* fv_nic.c */
void fv_nic_progress(fv_ctx_t *ctx);
int fv_nic_busy(fv_ctx_t *ctx);
void fv_qp_to_error(fv_qp_t *qp);
void *fv_nic_thread(void *arg);

/* fv_qp.c */
uint32_t fv_qpn_make(int ctx_index, uint32_t gen, int slot);
void fv_qpn_split(uint32_t qpn, int *ctx_index, uint32_t *gen, int *slot);
int fv_mtu_bytes(enum ibv_mtu mtu);

#endif
