/* SPDX-License-Identifier: MIT */
/*
 * tutti: collective communication for host (and later device) buffers.
 * This is the whole public C API; every call returns a tutti_status_t.
 */
#ifndef TUTTI_H
#define TUTTI_H

#include <stddef.h>
#include <stdint.h>

#include "tutti_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TUTTI_API __attribute__((visibility("default")))
#else
#define TUTTI_API
#endif

/*
 * Status codes, one table: X(name, value, description). tutti_strerror()
 * returns the description.
 */
#define TUTTI_STATUS_TABLE(X)                                                                                \
    X(TUTTI_SUCCESS, 0, "success")                                                                           \
    X(TUTTI_ERR_INVALID_ARG, 1, "invalid argument")                                                          \
    X(TUTTI_ERR_NO_MEMORY, 2, "out of memory")                                                               \
    X(TUTTI_ERR_SYSTEM, 3, "system call failed")                                                             \
    X(TUTTI_ERR_TIMEOUT, 4, "timed out waiting for a peer")                                                  \
    X(TUTTI_ERR_PEER_FAILED, 5, "a peer rank failed or disconnected")                                        \
    X(TUTTI_ERR_MISMATCH, 6, "ranks called different collectives or arguments")                              \
    X(TUTTI_ERR_UNSUPPORTED, 7, "operation not supported")                                                   \
    X(TUTTI_ERR_AUTH, 8, "connection refused: wrong or missing key")                                         \
    X(TUTTI_ERR_ABORTED, 9, "communicator was aborted after an earlier error")                               \
    X(TUTTI_ERR_CONFIG, 10, "invalid configuration variable")                                                \
    X(TUTTI_ERR_INTERNAL, 11, "internal error")                                                              \
    X(TUTTI_ERR_REVOKED, 12, "communicator was revoked")

typedef enum {
#define TUTTI_STATUS_ENUM(name, value, text) name = value,
    TUTTI_STATUS_TABLE(TUTTI_STATUS_ENUM)
#undef TUTTI_STATUS_ENUM
} tutti_status_t;

/**
 * Element types (NCCL's set). fp16 is IEEE binary16, bf16 is bfloat16.
 * TUTTI_FP8_E4M3 and TUTTI_FP8_E5M2 are the OCP 8-bit floats of CUDA's
 * __nv_fp8_e4m3 (no infinities, 0x7f and 0xff are NaN, largest 448) and
 * __nv_fp8_e5m2 (IEEE-like, with infinities, largest 57344).
 */
typedef enum {
    TUTTI_INT8 = 0,
    TUTTI_UINT8,
    TUTTI_INT32,
    TUTTI_UINT32,
    TUTTI_INT64,
    TUTTI_UINT64,
    TUTTI_FP16,
    TUTTI_BF16,
    TUTTI_FP32,
    TUTTI_FP64,
    TUTTI_FP8_E4M3,
    TUTTI_FP8_E5M2,
    TUTTI_NUM_DTYPES
} tutti_dtype_t;

/**
 * Reduction operators. fp16/bf16/fp8 are reduced in fp32 and rounded to
 * nearest even when stored; an fp8 result beyond the largest finite value
 * (an infinity included) is stored as that value with its sign, as CUDA's
 * __NV_SATFINITE conversion and NCCL do, and every fp8 NaN is stored as 0x7f.
 * min/max propagate NaN. avg is the sum divided by the number of ranks
 * (integer division, truncating, for integer types; in fp32 for the narrow
 * floats). See tutti_collectives(3).
 */
typedef enum { TUTTI_SUM = 0, TUTTI_PROD, TUTTI_MIN, TUTTI_MAX, TUTTI_AVG, TUTTI_NUM_OPS } tutti_op_t;

/** An opaque communicator: a group of ranks that run collectives together. */
typedef struct tutti_comm *tutti_comm_t;

/**
 * Stream argument of every collective: a cudaStream_t, or NULL. With CUDA
 * device buffers the call is queued on the stream (NULL: the default
 * stream) and returns; later work on the stream sees the result. With host
 * buffers the call waits for the stream's earlier work, then runs, blocking.
 * See tutti_collectives(3).
 */
typedef void *tutti_stream_t;

#define TUTTI_UNIQUE_ID_BYTES 128
/** Rendezvous token: the root's address and a 128-bit random key. */
typedef struct {
    unsigned char internal[TUTTI_UNIQUE_ID_BYTES];
} tutti_unique_id_t;

/* Bits of tutti_comm_params_t.field_mask: a field is read only when set. */
#define TUTTI_PARAM_TIMEOUT_MS (1ull << 0)
#define TUTTI_PARAM_NODE_ID (1ull << 1)

/**
 * Optional communicator parameters. Zero-initialise, set the fields you want
 * and their bits in field_mask; unset fields take their TUTTI_* defaults.
 */
typedef struct {
    uint64_t field_mask;
    /** Milliseconds a blocking call may wait without progress (TUTTI_TIMEOUT). */
    int64_t timeout_ms;
    /** Host this rank counts as (TUTTI_NODE_ID); ranks on one host use shm. */
    int node_id;
} tutti_comm_params_t;

/** Description of a status code; never NULL. */
TUTTI_API const char *tutti_strerror(tutti_status_t status);

/** Name of a status code ("TUTTI_ERR_TIMEOUT"); never NULL. */
TUTTI_API const char *tutti_status_name(tutti_status_t status);

/**
 * Run-time library version (compare with TUTTI_VERSION).
 * @param major, minor, patch  outputs; any may be NULL.
 * @return TUTTI_VERSION_CODE of the loaded library.
 */
TUTTI_API int tutti_get_version(int *major, int *minor, int *patch);

/** Size in bytes of one element of dtype, or 0 for an unknown dtype. */
TUTTI_API size_t tutti_dtype_size(tutti_dtype_t dtype);

/** Name of a dtype ("fp32") or op ("sum"); "unknown" when out of range. */
TUTTI_API const char *tutti_dtype_name(tutti_dtype_t dtype);
TUTTI_API const char *tutti_op_name(tutti_op_t op);

/**
 * Creates a rendezvous id. Call it on the process that will be rank 0 and
 * pass the id to every rank (for example with MPI_Bcast). It binds a listening
 * socket (TUTTI_SOCKET_IFNAME picks the interface) that rank 0's
 * tutti_comm_init then serves.
 * @param id  output.
 * @return TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG (id NULL), TUTTI_ERR_SYSTEM.
 */
TUTTI_API tutti_status_t tutti_get_unique_id(tutti_unique_id_t *id);

/**
 * Joins a communicator of nranks ranks as rank. Blocks until every rank has
 * joined (or TUTTI_TIMEOUT passes) and peer connections are set up.
 * @param comm    output handle.
 * @param nranks  number of ranks, >= 1.
 * @param rank    this rank, 0 <= rank < nranks; rank 0 must run on the
 *                process that called tutti_get_unique_id (or bind the id's port).
 * @param id      the id from tutti_get_unique_id, the same on every rank.
 * @param params  optional (NULL for defaults).
 * @return TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG, TUTTI_ERR_TIMEOUT,
 *         TUTTI_ERR_AUTH, TUTTI_ERR_SYSTEM, TUTTI_ERR_NO_MEMORY, TUTTI_ERR_CONFIG.
 */
TUTTI_API tutti_status_t tutti_comm_init(tutti_comm_t *comm, int nranks, int rank,
                                         const tutti_unique_id_t *id, const tutti_comm_params_t *params);

/**
 * As tutti_comm_init, with the join spread over nids roots, so that no
 * process admits every rank of a large job (NCCL's scalable init). The
 * ranks fall in nids contiguous blocks, the first nranks % nids of them one
 * rank larger: block i starts at rank i * (nranks / nids) + min(i, nranks %
 * nids). ids[i] is made by tutti_get_unique_id on the process of a rank of
 * block i (ids[0] on rank 0's), and every rank passes the same ids in the
 * same order. Rank 0 then handles one small record per rank, and one
 * connection per rank of its block and per other root.
 * @param nids  1..nranks; 1 is tutti_comm_init.
 * @return as tutti_comm_init.
 */
TUTTI_API tutti_status_t tutti_comm_init_roots(tutti_comm_t *comm, int nranks, int rank, int nids,
                                               const tutti_unique_id_t *ids, const tutti_comm_params_t *params);

/**
 * Joins a communicator described by the launcher's environment: tutti-run
 * (TUTTI_RANK, TUTTI_NRANKS, TUTTI_ROOT_ADDR, TUTTI_KEY), torchrun (RANK,
 * WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK), mpirun/srun through
 * PMIx when tutti was built with it, or srun without PMIx (SLURM_PROCID,
 * SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST). With none of these, the
 * process is a communicator of one rank, as an MPI singleton is. See tutti(7).
 * @return as tutti_comm_init; TUTTI_ERR_CONFIG for half-set launcher
 *         variables, mpirun without PMIx, or an srun step tutti cannot join.
 */
TUTTI_API tutti_status_t tutti_comm_init_env(tutti_comm_t *comm, const tutti_comm_params_t *params);

/**
 * Frees a communicator after its last collective. Collective: call it on every
 * rank. The handle is invalid afterwards (later calls with it return
 * TUTTI_ERR_INVALID_ARG).
 */
TUTTI_API tutti_status_t tutti_comm_destroy(tutti_comm_t comm);

/**
 * Frees a communicator without talking to the peers, for use after an error.
 * Local: peers see this rank as failed. May be called from another thread
 * while a collective on comm waits: that call returns TUTTI_ERR_ABORTED at
 * once, and comm is freed after it returned.
 */
TUTTI_API tutti_status_t tutti_comm_abort(tutti_comm_t comm);

/** Color of a rank that joins no communicator in tutti_comm_split (MPI_UNDEFINED). */
#define TUTTI_SPLIT_NOCOLOR (-1)

/**
 * Splits comm into disjoint communicators, one per color, as MPI_Comm_split
 * does. Collective: every rank of comm calls it, in the same order relative
 * to comm's collectives. Ranks passing the same color join one new
 * communicator, ranked by key (ties by their rank in comm). The new
 * communicators keep comm's timeout and host assignment (TUTTI_PARAM_*);
 * the rest of their configuration comes from TUTTI_* as for
 * tutti_comm_init. comm stays valid and independent of them.
 * @param comm     the parent communicator.
 * @param color    >= 0: the group to join; TUTTI_SPLIT_NOCOLOR (any
 *                 negative value): none, *newcomm is set to NULL.
 * @param key      orders the ranks of a color (any int; equal keys keep
 *                 comm's order).
 * @param newcomm  output: the new communicator, or NULL with no color.
 * @return TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG (comm invalid, newcomm NULL),
 *         TUTTI_ERR_NO_MEMORY, or the status of a failed all-gather on comm
 *         or of joining the new communicator (as tutti_comm_init), with
 *         tutti_comm_last_error(comm) saying which.
 */
TUTTI_API tutti_status_t tutti_comm_split(tutti_comm_t comm, int color, int key, tutti_comm_t *newcomm);

/* Flags of tutti_comm_split_flags, or'ed. */
#define TUTTI_SPLIT_SHARE 0x1 /* the new communicators take comm's connections (see below) */

/**
 * tutti_comm_split with flags. With TUTTI_SPLIT_SHARE, a pair of ranks of a
 * new communicator that both hold their connection in comm uses it instead
 * of making its own (NCCL's splitShare): no new descriptors, shared memory
 * or registered memory for it. In exchange, calls on comm and on the
 * communicators sharing its connections must not overlap: each rank
 * finishes its calls on one (waits for its non-blocking ones) before it
 * starts any on another, in the same order on every rank. An overlap is
 * reported as TUTTI_ERR_MISMATCH ("of another communicator sharing its
 * connections"), never a wrong result; a failure or abort of either ends
 * the other's calls on the pairs they share. The connections stay until
 * the last communicator using them is destroyed, in any order. A revoked
 * or failed comm shares nothing (nor once a communicator sharing its
 * connections failed or was revoked), nor does a rank that does not pass
 * the flag (its peers connect to it as without it).
 * @return as tutti_comm_split; TUTTI_ERR_INVALID_ARG also for unknown flags.
 */
TUTTI_API tutti_status_t tutti_comm_split_flags(tutti_comm_t comm, int color, int key, unsigned flags,
                                                tutti_comm_t *newcomm);

/**
 * Revokes comm: every call on it in progress or made later, on this rank
 * and on every rank that learns of it (through rank 0's service, at once),
 * returns TUTTI_ERR_REVOKED instead of waiting for its peers or for
 * TUTTI_TIMEOUT. Queued device calls end the same way when their turn
 * comes. comm stays valid for tutti_comm_shrink, tutti_comm_destroy (which
 * then waits for no one) and tutti_comm_abort. May be called from another
 * thread while a call on comm waits; returns once the calls inside comm
 * on other threads have returned. Revoking twice is harmless.
 * @return TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG (comm invalid).
 */
TUTTI_API tutti_status_t tutti_comm_revoke(tutti_comm_t comm);

/* Flags of tutti_comm_shrink, or'ed. */
#define TUTTI_SHRINK_DEFAULT 0x0 /* comm stays usable when it was */
#define TUTTI_SHRINK_ABORT 0x1   /* revoke comm first: calls waiting on it end */
#define TUTTI_SHRINK_DEAD 0x2    /* also exclude the ranks found dead, before or during the shrink */
#define TUTTI_SHRINK_SHARE 0x4   /* take comm's connections, as TUTTI_SPLIT_SHARE (not when revoked) */

/**
 * Makes a communicator of the ranks of comm that remain: without the n
 * ranks of exclude (and, with TUTTI_SHRINK_DEAD, without every rank found
 * dead: its process ended, or it joined no shrink within TUTTI_TIMEOUT).
 * The survivors keep their order (rank r of comm becomes r minus the
 * excluded ranks below it). Called by every remaining rank, with the same
 * exclude list and flags; excluded ranks do not call it. It needs no
 * working collective on comm (rank 0 may be dead): the lowest surviving
 * rank gathers the others over listeners each rank opened when comm was
 * made, every message proving comm's key. A rank that dies during the
 * shrink is excluded too with TUTTI_SHRINK_DEAD; without it the shrink
 * fails with TUTTI_ERR_PEER_FAILED on every survivor. A rank the survivors
 * left out (stopped or late past TUTTI_TIMEOUT, say) never gets a
 * communicator from it: its own call returns TUTTI_ERR_REVOKED ("excluded
 * by the survivors"); so does a rank left behind by a grow or shrink whose
 * part failed while the others went on in its result and freed comm ("left
 * behind": they keep comm's listeners to say so, and name the communicator
 * they went on in by its tutti_comm_id). The new communicator
 * keeps comm's timeout and host assignment; comm is left as it was (with
 * TUTTI_SHRINK_ABORT: revoked), to be destroyed or aborted.
 * @param comm     the communicator to shrink (may be revoked or failed).
 * @param exclude  ranks of comm to leave out (may be NULL when n is 0).
 * @param n        how many, >= 0.
 * @param flags    TUTTI_SHRINK_* or'ed.
 * @param newcomm  output: the new communicator.
 * @return TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG (bad list, this rank
 *         excluded, unknown flags), TUTTI_ERR_PEER_FAILED (a rank that was
 *         to remain died, without TUTTI_SHRINK_DEAD), TUTTI_ERR_TIMEOUT, TUTTI_ERR_MISMATCH
 *         (ranks passed different lists or flags), TUTTI_ERR_REVOKED (this
 *         rank was left out or left behind), TUTTI_ERR_INTERNAL (an answer that proved the
 *         key but did not hold together), TUTTI_ERR_NO_MEMORY, TUTTI_ERR_SYSTEM.
 */
TUTTI_API tutti_status_t tutti_comm_shrink(tutti_comm_t comm, const int *exclude, int n, unsigned flags,
                                           tutti_comm_t *newcomm);

/**
 * Adds ranks to comm: a new communicator of nranks ranks where the ranks of
 * comm keep their ranks and the newcomers take the ones above. Rank 0 of
 * comm makes id with tutti_get_unique_id and hands it to the newcomers,
 * which call tutti_comm_init(newcomm, nranks, rank, id, params) with
 * rank >= the size of comm; every rank of comm calls tutti_comm_grow, with
 * id on rank 0 (ignored elsewhere: rank 0's is all-gathered over comm with
 * every rank's nranks). comm stays valid and independent of the new
 * communicator, which keeps its timeout and host assignment. A rank whose
 * part failed while the others' succeeded is left behind: its later
 * tutti_comm_shrink of comm returns TUTTI_ERR_REVOKED ("left behind").
 * @return TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG (nranks not above comm's
 *         size, id NULL on rank 0), TUTTI_ERR_MISMATCH (on every rank, when
 *         ranks passed different nranks), or the status of the all-gather
 *         on comm or of joining (as tutti_comm_init).
 */
TUTTI_API tutti_status_t tutti_comm_grow(tutti_comm_t comm, int nranks, const tutti_unique_id_t *id,
                                         tutti_comm_t *newcomm);

/** Outputs this rank's index / the number of ranks. */
TUTTI_API tutti_status_t tutti_comm_rank(tutti_comm_t comm, int *rank);
TUTTI_API tutti_status_t tutti_comm_size(tutti_comm_t comm, int *size);

/**
 * Outputs comm's name: 64 bits that every rank of comm reads alike from the
 * moment comm is made, before any collective on it (each derives it from
 * the key the ranks share), and that no other communicator has but by a
 * chance of 2^-64. A rank left behind by a grow or shrink hears the name
 * of the communicator the others went on in (tutti_comm_shrink).
 * @return TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG (comm invalid, id NULL).
 */
TUTTI_API tutti_status_t tutti_comm_id(tutti_comm_t comm, uint64_t *id);

/**
 * What the last failing call on comm (or, with comm NULL or invalid, on this
 * thread) went wrong with: argument, peer rank, collective, step. Never NULL;
 * "" when nothing failed. Valid until the next call on comm.
 */
TUTTI_API const char *tutti_comm_last_error(tutti_comm_t comm);

/*
 * Collectives. Blocking for host memory; queued on the stream for CUDA
 * device memory. Counts are in
 * elements. Collectives must be called by every rank of comm, in the same
 * order and with the same count, dtype, op and root; otherwise ranks return
 * TUTTI_ERR_MISMATCH. Each returns TUTTI_SUCCESS, TUTTI_ERR_INVALID_ARG,
 * TUTTI_ERR_TIMEOUT, TUTTI_ERR_PEER_FAILED, TUTTI_ERR_MISMATCH,
 * TUTTI_ERR_ABORTED (after an earlier failure), TUTTI_ERR_REVOKED (comm was
 * revoked) or TUTTI_ERR_NO_MEMORY.
 * Buffers must not overlap except in the in-place forms documented below.
 */

/** recvbuf[i] = op over ranks of sendbuf[i], i < count. In-place: sendbuf == recvbuf. */
TUTTI_API tutti_status_t tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm,
                                         tutti_stream_t stream);

/**
 * sendbuf holds nranks * recvcount elements; rank r receives block r reduced.
 * In-place: recvbuf == sendbuf + rank * recvcount elements.
 */
TUTTI_API tutti_status_t tutti_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                              tutti_dtype_t dtype, tutti_op_t op, tutti_comm_t comm,
                                              tutti_stream_t stream);

/**
 * recvbuf (nranks * sendcount elements) gets every rank's sendbuf in rank
 * order. In-place: sendbuf == recvbuf + rank * sendcount elements.
 */
TUTTI_API tutti_status_t tutti_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                         tutti_dtype_t dtype, tutti_comm_t comm, tutti_stream_t stream);

/** recvbuf = root's sendbuf (sendbuf is read on root only). In-place: sendbuf == recvbuf. */
TUTTI_API tutti_status_t tutti_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_dtype_t dtype, int root, tutti_comm_t comm,
                                         tutti_stream_t stream);

/** Root's recvbuf = op over ranks of sendbuf; recvbuf is unused (may be NULL) elsewhere. */
TUTTI_API tutti_status_t tutti_reduce(const void *sendbuf, void *recvbuf, size_t count, tutti_dtype_t dtype,
                                      tutti_op_t op, int root, tutti_comm_t comm, tutti_stream_t stream);

/**
 * Block j (count elements) of sendbuf goes to rank j, landing in block r of
 * its recvbuf. Both buffers hold nranks * count elements. In-place:
 * sendbuf == recvbuf.
 */
TUTTI_API tutti_status_t tutti_alltoall(const void *sendbuf, void *recvbuf, size_t count, tutti_dtype_t dtype,
                                        tutti_comm_t comm, tutti_stream_t stream);

/** Returns once every rank has entered the barrier. */
TUTTI_API tutti_status_t tutti_barrier(tutti_comm_t comm, tutti_stream_t stream);

/**
 * Point-to-point. Blocking: a send returns once its data left this rank's
 * buffer, a recv once the data arrived. Messages between two ranks match in
 * order; counts and dtypes of matching calls must agree. peer != own rank.
 */
TUTTI_API tutti_status_t tutti_send(const void *sendbuf, size_t count, tutti_dtype_t dtype, int peer,
                                    tutti_comm_t comm, tutti_stream_t stream);
TUTTI_API tutti_status_t tutti_recv(void *recvbuf, size_t count, tutti_dtype_t dtype, int peer,
                                    tutti_comm_t comm, tutti_stream_t stream);

/**
 * Receives the next message that any peer sends this rank, as tutti_recv
 * from that peer would, blocking; the senders use plain tutti_send.
 * @param recvbuf host memory of count elements of dtype (the send's count
 *        and dtype, as for tutti_recv)
 * @param source gets the sender's rank
 * @param stream must be NULL (host memory only)
 * @return TUTTI_SUCCESS; TUTTI_ERR_TIMEOUT when no peer sent within the
 *         timeout (nothing was received and the communicator stays usable);
 *         TUTTI_ERR_UNSUPPORTED for device memory, or a peer reached over a
 *         transport that cannot tell a message arrived; TUTTI_ERR_INVALID_ARG;
 *         then the errors of tutti_recv.
 */
TUTTI_API tutti_status_t tutti_recv_any(void *recvbuf, size_t count, tutti_dtype_t dtype, int *source,
                                        tutti_comm_t comm, tutti_stream_t stream);

/*
 * Compressed all-reduce (tutti_compression(3)). Each rank sends a compressed
 * form of its gradient plus the error it kept from earlier calls; what the
 * compression dropped goes back into that error (error feedback), so it is
 * sent later instead of lost.
 */
typedef enum {
    TUTTI_COMPRESS_NONE = 0, /* the dense all-reduce */
    TUTTI_COMPRESS_TOPK,     /* the k largest |g + e|, as (index, value) pairs */
    TUTTI_COMPRESS_INT8,     /* two-phase, 8-bit codes with per-block scales */
    TUTTI_COMPRESS_INT4,     /* two-phase, 4-bit codes with per-block scales */
    TUTTI_COMPRESS_SIGN      /* two-phase, 1 bit per element times a per-block scale */
} tutti_compress_kind_t;

typedef enum { TUTTI_ROUND_NEAREST = 0, TUTTI_ROUND_STOCHASTIC } tutti_rounding_t;

/* How to compress; zero-initialised fields take the defaults. */
typedef struct {
    tutti_compress_kind_t kind;
    double density;            /* top-k: fraction kept when k is 0 (default 0.01) */
    size_t k;                  /* top-k: elements kept per rank; 0: from density */
    int sampled;               /* top-k: 1: threshold from a sample (DGC), about k sent */
    size_t block;              /* quantizers: elements per scale; 0: one scale per rank's chunk */
    tutti_rounding_t rounding; /* int8/int4 */
    uint64_t seed;             /* stochastic rounding and sampling */
    int no_error_feedback;     /* 1: drop what compression loses (for experiments) */
} tutti_compress_t;

/* Error-feedback state for one tensor, kept by the caller between calls. */
typedef struct tutti_ef_state *tutti_ef_state_t;

/* State for tensors of count elements in a communicator of nranks ranks. */
TUTTI_API tutti_status_t tutti_ef_create(tutti_ef_state_t *state, size_t count, int nranks);
/* Zeroes the errors (after a change of model or learning-rate schedule). */
TUTTI_API tutti_status_t tutti_ef_reset(tutti_ef_state_t state);
TUTTI_API tutti_status_t tutti_ef_destroy(tutti_ef_state_t state);
/* The errors themselves, fp32: worker (count elements: what this rank has
 * yet to send) and server (this rank's chunk of the two-phase schemes; NULL
 * until one ran). Valid until the next call on state. */
TUTTI_API tutti_status_t tutti_ef_errors(tutti_ef_state_t state, const float **worker, size_t *worker_count,
                                         const float **server, size_t *server_count);

/* Carries state over to a communicator of nranks ranks (after
 * tutti_comm_shrink or tutti_comm_grow): the worker error (what this rank
 * has yet to send) is kept; the server error of this rank's chunk, in the
 * result's units, is added to the worker error where that chunk lies
 * (times nranks for TUTTI_AVG), so nothing owed is dropped. */
TUTTI_API tutti_status_t tutti_ef_regroup(tutti_ef_state_t state, int nranks, tutti_op_t op);

/**
 * recvbuf = sum (or avg) over ranks of sendbuf, compressed as how says.
 * dtype fp32, fp16 or bf16; op sum or avg. state may be NULL only with
 * no_error_feedback or kind NONE. In-place: sendbuf == recvbuf. Device
 * buffers are queued on stream like every collective's; state is then
 * updated when the stream reaches the call.
 */
TUTTI_API tutti_status_t tutti_allreduce_compressed(const void *sendbuf, void *recvbuf, size_t count,
                                                    tutti_dtype_t dtype, tutti_op_t op,
                                                    const tutti_compress_t *how, tutti_ef_state_t state,
                                                    tutti_comm_t comm, tutti_stream_t stream);

/* What this rank's last compressed all-reduce on comm did. */
typedef struct {
    uint64_t bytes_sent;       /* put on the wire by this rank */
    uint64_t dense_bytes_sent; /* what the dense ring all-reduce would have sent */
    uint64_t k_sent;           /* top-k: pairs this rank sent */
    int fell_back;             /* 1: ran dense, compression would have sent more */
} tutti_compress_stats_t;

TUTTI_API tutti_status_t tutti_compress_last_stats(tutti_comm_t comm, tutti_compress_stats_t *stats);

/** Name of a compression kind ("topk") or rounding mode ("stochastic");
 * "unknown" when out of range. */
TUTTI_API const char *tutti_compress_kind_name(tutti_compress_kind_t kind);
TUTTI_API const char *tutti_rounding_name(tutti_rounding_t rounding);

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_H */
