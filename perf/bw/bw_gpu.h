/* SPDX-License-Identifier: MIT */
/* tutti-bw's GPU operations, timed under the job's repeat rule (CUDA builds only). */
#ifndef TT_BW_GPU_H
#define TT_BW_GPU_H

#include <cuda_runtime_api.h>

#include "bw.h"

typedef enum { OP_COPY, OP_COPY_SYNC, OP_PEER, OP_PEER_BI, OP_REDUCE } tt_gpu_op_kind_t;

typedef struct {
    tt_gpu_op_kind_t op;
    void *dst, *src, *dst2, *src2; /* dst2/src2: the reverse copy of OP_PEER_BI */
    size_t bytes;
    enum cudaMemcpyKind dir;
    int from, to; /* GPUs of peer copies */
    tutti_dtype_t dtype;
    cudaStream_t stream, stream2;
    int latency; /* wait for each operation; samples are microseconds per operation */
} tt_gpu_op_t;

/* Samples of GB/s (bytes_per_op x iters / s), or of us per operation with
 * latency set, repeated until stable; 0, or -1 on a CUDA error. */
int tt_bw_gpu_measure(const tt_bw_job_t *job, const tt_gpu_op_t *o, int iters, double bytes_per_op,
                      tt_stats_t *out);
/* One printed (and JSON/CSV) row. */
void tt_bw_gpu_row(tt_bw_job_t *job, const char *what, const tt_stats_t *s, double reference);
/* The peer-copy matrices between the ngpus GPUs; 0 or -1. */
int tt_bw_gpu_peers(tt_bw_job_t *job, int ngpus, size_t bytes, int iters);

#endif
