/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce: its public call (allreduce.c), its CPU path
 * on host buffers (allreduce_cpu.c), its GPU path on device buffers
 * (allreduce_gpu.c) and what the two share (state.c).
 * Both send the same messages and keep the same error-feedback state, so
 * ranks may mix them in one call.
 */
#ifndef TT_COMPRESS_ALLREDUCE_H
#define TT_COMPRESS_ALLREDUCE_H

#include <pthread.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "codec/codec.h"

/* The public call's name, in its errors and logs. */
#define TT_COMPRESS_CALL "tutti_allreduce_compressed"

struct tutti_ef_state {
    size_t count;
    int nranks;
    float *worker;       /* count */
    float *server;       /* the largest chunk */
    size_t server_count; /* this rank's chunk, 0 until a two-phase call */
    size_t server_off;   /* where that chunk starts in the tensor */
    /* The worker error moves to the GPU with the first device-buffer call
     * and stays there while device calls follow; worker is then stale. */
    float *worker_dev;
    int worker_on_device;
    int device;    /* the GPU of worker_dev */
    void *updated; /* event: after the last device call's work on the error */
    /* Device calls queued with this state that the proxy has not finished:
     * reading, resetting or destroying the state waits for them. */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int queued;
};

#define TT_COMPRESS_INNER_MAX 2 /* collectives one compressed all-reduce is made of */

/* The compress layer's state on a communicator. */
typedef struct {
    void *ws; /* the CPU path's buffers, kept between calls */
    size_t ws_bytes;
    tutti_compress_stats_t stats; /* of the last call */
    /* A queued call running on the proxy: its collectives take the
     * sequence numbers (and the random stream) given when it was queued. */
    int reserved, nseqs, next;
    uint64_t seqs[TT_COMPRESS_INNER_MAX], rng;
} tt_compress_state_t;

/* On the caller's thread, as a compressed all-reduce of count elements is
 * queued: the sequence numbers of the collectives it is made of, taken now
 * in call order, and its random stream's key. */
tutti_status_t tt_compress_reserve(tt_comm_t *comm, const tutti_compress_t *how, size_t count,
                                   uint64_t seqs[TT_COMPRESS_INNER_MAX], int *nseqs, uint64_t *rng);
/* On the proxy, around the queued call: its collectives run at those. */
void tt_compress_use(tt_comm_t *comm, const uint64_t *seqs, int nseqs, uint64_t rng);
tutti_status_t tt_compress_done(tt_comm_t *comm, const char *name);
/* ef's count of device calls queued with it: one more is queued, one has
 * finished on the proxy; waiting until none is left (reading, resetting
 * and destroying ef wait, since those calls still write it). */
void tt_ef_call_queued(tutti_ef_state_t ef);
void tt_ef_call_finished(tutti_ef_state_t ef);
void tt_ef_wait_idle(tutti_ef_state_t ef);

/* The state, made on first use (NULL: no memory, said why). */
tt_compress_state_t *tt_compress_state(tt_comm_t *comm);
/* The last call's stats, to fill in. */
tutti_compress_stats_t *tt_compress_stats(tt_comm_t *comm);
/* The CPU path: c (an all-reduce call, validated) on buffers the CPU can
 * reach, blocking; ef NULL: no error feedback. */
tutti_status_t tt_compress_run(tt_comm_t *comm, const tt_call_t *c, const tutti_compress_t *how,
                               tutti_ef_state_t ef);
/* c with a device buffer, queued on stream: the GPU path when both buffers
 * are on the GPU, else the CPU path on staged copies. */
tutti_status_t tt_compress_enqueue(tt_comm_t *comm, const tt_call_t *c, const tutti_compress_t *how,
                                   tutti_ef_state_t ef, void *stream);

/* Elements a top-k call keeps: how->k, or its density of n; 1 to n. */
size_t tt_compress_topk_k(const tutti_compress_t *how, size_t n);
/* Whether p k pairs cost more than the dense ring all-reduce (k/n >= 1/p). */
int tt_compress_topk_costly(size_t k, size_t n, int p);
/* The same for this call, which then runs dense: noted in the call's stats
 * and the debug log. */
int tt_compress_topk_dense(tt_comm_t *comm, size_t k, size_t n);
/* The key of this rank's current call in the counter-based random
 * numbers of stochastic rounding and sampling: it differs per call and
 * rank and agrees with a rerun. */
uint64_t tt_compress_rng_key(tt_comm_t *comm);
/* One of the collectives a scheme is made of, on host buffers, run now
 * (on the device proxy thread too, which must not wait for its own queue). */
tutti_status_t tt_compress_host_coll(tt_comm_t *comm, tt_coll_t coll, const void *send, void *recv,
                                     size_t count, tutti_dtype_t dtype, tutti_op_t op);
/*
 * The two-phase server step on this rank's chunk (mine elements from
 * element off): decode the p copies in got (slot bytes apart) into y in
 * rank order, average if op says so, then encode y plus the server error
 * into enc, keeping the loss in the server error.
 */
void tt_compress_server(const tt_quant_t *q, const unsigned char *got, size_t slot, size_t off, size_t mine,
                        int p, tutti_op_t op, uint64_t stream, tutti_ef_state_t ef, float *y,
                        unsigned char *enc);
/* The last call's bytes: what this rank sent since before, and what the
 * dense ring all-reduce of count elements of dtype would have sent. */
void tt_compress_account(tt_comm_t *comm, uint64_t before, size_t count, tutti_dtype_t dtype);

/* ef_device.c. Queues the worker error's move to the GPU on stream, before
 * the state's first device call (device: the call's GPU). */
tutti_status_t tt_ef_to_gpu(tt_comm_t *comm, tutti_ef_state_t ef, int device, void *stream);
/* Makes the host copy of the worker error the current one, once the GPU's
 * work on it is done (blocking); a no-op when it already is. */
tutti_status_t tt_ef_worker_to_host(tutti_ef_state_t ef);
/* Frees the error's GPU copy, once the GPU is done with it. */
void tt_ef_free_device(tutti_ef_state_t ef);

#endif
