/* SPDX-License-Identifier: MIT */
/*
 * Work on CUDA device buffers, in stream order. Queuing records an event on
 * the caller's stream, hands the work to the communicator's proxy thread
 * and enqueues a kernel that holds the stream until the proxy reports the
 * work done; then it returns. The proxy runs queued work in the order it
 * was queued, each once its inputs are ready on the caller's stream. What
 * the work is (a staged or direct collective, a compressed all-reduce) is
 * the queuing layer's business: the queue runs closures.
 */
#ifndef TT_DEVICE_QUEUE_H
#define TT_DEVICE_QUEUE_H

#include <stddef.h>

#include "comm/comm.h"

/* What a closure gets on the proxy thread. */
typedef struct {
    int device;         /* the GPU of the communicator's device calls */
    void *copies;       /* cudaStream_t: the proxy's own streams, both waiting for the inputs */
    void *results;      /* (independent of the legacy default stream) */
    void *inputs_ready; /* cudaEvent_t recorded on the caller's stream */
    void *pinned, *gpu; /* the working memory the work asked for */
} tt_device_ctx_t;

typedef struct {
    const char *name; /* the API call, for errors */
    /* Runs on the proxy thread; a failure goes to the communicator (the
     * next call reports it). */
    tutti_status_t (*run)(tutti_comm_t comm, const tt_device_ctx_t *ctx, void *arg);
    void (*release)(void *arg); /* after run, or when queuing fails */
    void *arg;
    size_t pinned_bytes, gpu_bytes; /* working memory, kept by the queue between calls */
} tt_device_work_t;

/* Whether device buffers can be used; why not in why otherwise. */
int tt_device_supported(char *why, size_t whylen);
/* The GPU that ptr is memory of. */
tutti_status_t tt_device_of(tutti_comm_t comm, const void *ptr, const char *name, int *device);
/* Queues work for buffers on GPU device, on stream; returns once queued.
 * work->release runs in every case. */
tutti_status_t tt_device_enqueue(tutti_comm_t comm, int device, const tt_device_work_t *work, void *stream);
/* Blocks until all queued device work of comm has finished. */
tutti_status_t tt_device_drain(tutti_comm_t comm);
/* Blocks until the work queued on stream so far is done (host-buffer calls
 * given a stream); name is the collective, for the error. */
tutti_status_t tt_device_stream_wait(tutti_comm_t comm, const char *name, void *stream);
/* Records what failed in the CUDA runtime (a cudaError_t) for call name
 * and returns its status; built with CUDA only. */
tutti_status_t tt_device_error(tutti_comm_t comm, const char *name, const char *what, int cuda_error);

#endif
