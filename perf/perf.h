/* SPDX-License-Identifier: MIT */
/* What tutti-perf's files share: the collectives it runs, its options and one run's context. */
#ifndef TT_PERF_H
#define TT_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "tutti.h"

typedef enum {
    C_ALLREDUCE,
    C_REDUCESCATTER,
    C_ALLGATHER,
    C_BROADCAST,
    C_REDUCE,
    C_ALLTOALL,
    C_SENDRECV,
    C_COUNT
} coll_t;
extern const char *const coll_names[C_COUNT];

typedef struct {
    uint64_t minb, maxb, step;
    double factor;
    int iters, warmup, check, root;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int coll; /* -1: all */
    int csv, json;
    int device;   /* -m device: the collectives get GPU buffers, on a stream */
    int compress; /* --compress: all-reduce through tutti_allreduce_compressed */
    tutti_compress_t how;
} opts_t;

typedef struct {
    tutti_comm_t comm;
    int rank, nranks;
    const opts_t *o;
    size_t elem;
    char *send, *recv;         /* what the collectives get: host, or GPU with -m device */
    char *img_send, *img_recv; /* host images the checks fill and read (send/recv for host) */
    size_t buf_bytes;
    void *stream; /* -m device; NULL for host memory */
    int json_first;
    double busbw_sum;
    int busbw_n;
    long long wrong_total;
    tutti_ef_state_t ef; /* --compress: error feedback for the current size */
    size_t ef_count;
} ctx_t;

/* Elements per rank block for a size: the count argument of the call. */
size_t call_count(coll_t coll, size_t total, int p);
/* One call of coll on the context's buffers (send/recv, or in place). */
tutti_status_t run_once(ctx_t *c, coll_t coll, size_t n, int in_place);
/* Fills the inputs, runs once, and counts the wrong elements on this rank. */
long long check_once(ctx_t *c, coll_t coll, size_t n, int in_place, tutti_status_t *st);

#endif
