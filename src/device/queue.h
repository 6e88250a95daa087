/* SPDX-License-Identifier: MIT */
/*
 * Work on CUDA device buffers, in stream order. A call is put on the
 * caller's stream, whole, by the calling thread before it returns: either
 * a direct run (GPU work only: no proxy), or a staged call, whose host part
 * (the collective over the host transports) the communicator's proxy
 * thread runs once the stream has copied the inputs out, while a gate
 * holds the stream until the proxy has put the results back. What the work
 * is (a staged or direct collective, a compressed all-reduce, a batch) is
 * the queuing layer's business: the queue runs closures. queue.c explains
 * the design: the proxy makes no GPU runtime call at all.
 */
#ifndef TT_DEVICE_QUEUE_H
#define TT_DEVICE_QUEUE_H

#include <stddef.h>

#include "comm/comm.h"
#include "device/rt.h"

/* What a closure gets. */
typedef struct {
    tt_comm_t *comm;
    const tt_device_rt_t *rt;
    int device; /* the GPU of the communicator's device calls */
    char *host; /* the call's host stand-in (host_bytes): for the proxy's run only */
    char *gpu;  /* the call's GPU working memory (gpu_bytes), in the caller's stream's order */
} tt_device_ctx_t;

/* Bytes between the GPU and the host stand-in: dev (NULL: ctx->gpu +
 * gpu_off) and the stand-in at host_off. */
typedef struct {
    const void *dev;
    size_t gpu_off, host_off, bytes;
} tt_device_span_t;

/* How much of a call runs directly (begin's answer). */
enum { TT_DIRECT_NONE = 0, TT_DIRECT_ALL = 1, TT_DIRECT_PART = 2 /* the rest staged, around it */ };

typedef struct tt_device_work tt_device_work_t;
struct tt_device_work {
    const char *name; /* the API call, for errors */
    /* On the caller's thread, the GPU current, before anything goes on the
     * stream: takes the call's sequence numbers (and agrees, with the other
     * ranks, whether it runs directly: *direct, TT_DIRECT_*). Optional. */
    tutti_status_t (*begin)(tt_comm_t *comm, void *arg, int *direct);
    /* After begin: sets the staged part's spans and host_bytes in w where
     * begin changed them (a batch whose messages went direct). Optional. */
    void (*replan)(void *arg, tt_device_work_t *w);
    /* A direct run: the whole call (or its direct part) on the stream. */
    tutti_status_t (*direct)(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *stream, void *arg);
    /* A staged call, on the stream: before (GPU work, optional), the in
     * spans to the host, the proxy's run on ctx->host, the out spans back,
     * after (GPU work, optional). Each says its own failure; one of run
     * goes to the communicator (the next call reports it). */
    tutti_status_t (*before)(const tt_device_ctx_t *ctx, void *stream, void *arg);
    tutti_status_t (*run)(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *arg);
    tutti_status_t (*after)(const tt_device_ctx_t *ctx, void *stream, void *arg);
    const tt_device_span_t *in, *out;
    int nin, nout;
    void (*release)(void *arg); /* once nothing will use arg: after run, or when queuing fails */
    void *arg;
    size_t host_bytes, gpu_bytes; /* the stand-in, the GPU working memory */
};

/* The GPU that ptr is memory of. */
tutti_status_t tt_device_of(tt_comm_t *comm, const void *ptr, const char *name, int *device);
/* TUTTI_ERR_UNSUPPORTED, said, when stream is being captured into a CUDA
 * graph (not supported yet): the first thing a device call asks, before
 * anything that would break the capture. */
tutti_status_t tt_device_refuse_capture(tt_comm_t *comm, const char *name, void *stream);
/* Puts work for buffers on GPU device on stream; returns once it is there.
 * work->release runs in every case. A failure after the call's sequence
 * numbers were taken fails the communicator, so no peer waits for this
 * rank's part of it. */
tutti_status_t tt_device_enqueue(tt_comm_t *comm, int device, const tt_device_work_t *work, void *stream);
/* Blocks until the proxy has finished every call queued on comm. */
tutti_status_t tt_device_drain(tt_comm_t *comm);
/* Blocks until the work queued on stream so far is done (host-buffer calls
 * given a stream); name is the collective, for the error. */
tutti_status_t tt_device_stream_wait(tt_comm_t *comm, const char *name, void *stream);
/* Records what the GPU runtime refused (st, in its words) for call name
 * and returns st. */
tutti_status_t tt_device_error(tt_comm_t *comm, const char *name, const char *what, tutti_status_t st);
/* On the caller's stream, with comm's GPU current and the caller's capture
 * mode left alone (the NCCL layer's own steps around a call): a copy; a
 * scaling (dst = src * k, k read on the GPU from k_dev, else *k_host now);
 * stream-ordered device memory. */
tutti_status_t tt_device_copy(tt_comm_t *comm, const char *name, void *dst, const void *src, size_t bytes,
                              void *stream);
tutti_status_t tt_device_scale(tt_comm_t *comm, const char *name, void *dst, const void *src, size_t n,
                               tutti_dtype_t dtype, const void *k_dev, const void *k_host, void *stream);
tutti_status_t tt_device_alloc(tt_comm_t *comm, const char *name, size_t bytes, void *stream, void **ptr);
void tt_device_free(void *ptr, void *stream);

#endif
