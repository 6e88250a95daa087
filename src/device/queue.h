/* SPDX-License-Identifier: MIT */
/*
 * Work on CUDA device buffers, in stream order. Queuing hands the work to
 * the communicator's proxy thread, then puts on the caller's stream: the
 * work's own staging copies in, a signal that the stream got there, a gate
 * that holds the stream until the proxy reports the work done, and the
 * copies back; then it returns. The proxy runs queued work in the order it
 * was queued, each once its stream's signal came. What the work is (a
 * staged or direct collective, a compressed all-reduce) is the queuing
 * layer's business: the queue runs closures. queue.c explains the design.
 */
#ifndef TT_DEVICE_QUEUE_H
#define TT_DEVICE_QUEUE_H

#include <stddef.h>

#include "comm/comm.h"
#include "device/rt.h"

/* What a closure gets. */
typedef struct {
    const tt_device_rt_t *rt;
    int device;   /* the GPU of the communicator's device calls */
    void *copies; /* the proxy's own streams (non-blocking) */
    void *results;
    void *pinned, *gpu; /* the working memory the work asked for, as of its queuing */
} tt_device_ctx_t;

typedef struct {
    const char *name; /* the API call, for errors */
    /* On the proxy thread, once the work's inputs are ready (the caller's
     * stream did everything before the call, and stage_in); a failure goes
     * to the communicator (the next call reports it). */
    tutti_status_t (*run)(tutti_comm_t comm, const tt_device_ctx_t *ctx, void *arg);
    /* Optional, on the caller's thread: copies put on the caller's stream
     * before the gate (stage_in: inputs to ctx->pinned) and after it
     * (stage_out: results back), so that the proxy needs no GPU work of its
     * own. 0 or a runtime error code. */
    int (*stage_in)(const tt_device_ctx_t *ctx, void *stream, void *arg);
    int (*stage_out)(const tt_device_ctx_t *ctx, void *stream, void *arg);
    void (*release)(void *arg); /* after run, or when queuing fails */
    void *arg;
    size_t pinned_bytes, gpu_bytes; /* working memory, kept by the queue between calls */
} tt_device_work_t;

/* Whether device buffers can be used; why not in why otherwise. */
int tt_device_supported(char *why, size_t whylen);
/* The GPU that ptr is memory of. */
tutti_status_t tt_device_of(tutti_comm_t comm, const void *ptr, const char *name, int *device);
/* TUTTI_ERR_UNSUPPORTED, said, when stream is being captured into a CUDA
 * graph (not supported yet): the first thing a device call asks, before
 * anything that would break the capture. */
tutti_status_t tt_device_refuse_capture(tutti_comm_t comm, const char *name, void *stream);
/* Queues work for buffers on GPU device, on stream; returns once queued.
 * work->release runs in every case. */
tutti_status_t tt_device_enqueue(tutti_comm_t comm, int device, const tt_device_work_t *work, void *stream);
/* Blocks until all queued device work of comm has finished. */
tutti_status_t tt_device_drain(tutti_comm_t comm);
/* Blocks until the work queued on stream so far is done (host-buffer calls
 * given a stream); name is the collective, for the error. */
tutti_status_t tt_device_stream_wait(tutti_comm_t comm, const char *name, void *stream);
/* Records what failed in the GPU runtime (its error code) for call name
 * and returns its status. */
tutti_status_t tt_device_error(tutti_comm_t comm, const char *name, const char *what, int code);
/* Whether every stream of this process shares one hardware queue
 * (CUDA_DEVICE_MAX_CONNECTIONS=1): then no GPU work of the proxy's own may
 * be queued while a gate holds a stream, since it would sit behind it. */
int tt_device_one_hw_queue(void);

#endif
