/* SPDX-License-Identifier: MIT */
/*
 * The GPU runtime calls the device layer makes, behind a table: CUDA's in
 * builds with CUDA (rt_cuda.c); the tests put a model of streams in host
 * memory in its place (tests/fakes/fake_gpu.c), so the order in which the real
 * code puts work on streams, and which runtime calls it makes while a
 * stream may be held, are checked without a GPU.
 *
 * Every call returns a status: TUTTI_SUCCESS, TUTTI_ERR_NO_MEMORY when the
 * runtime ran out of memory, TUTTI_ERR_UNSUPPORTED when it has no such
 * thing, else TUTTI_ERR_SYSTEM; said() then gives the runtime's words for
 * this thread's last failure. The table logs nothing: its callers do, with
 * what they were doing (tt_device_error). Work put on a stream runs after
 * the stream's earlier work; stream NULL is the default stream.
 */
#ifndef TT_DEVICE_RT_H
#define TT_DEVICE_RT_H

#include <stddef.h>

#include "tutti.h"

typedef struct {
    const char *name;
    /* TUTTI_SUCCESS where a GPU can be used; else why not, in why. */
    tutti_status_t (*usable)(char *why, size_t len);
    /* The GPU whose device memory ptr is, -1 for memory the CPU reaches
     * (pageable, pinned or managed). */
    tutti_status_t (*device_of)(const void *ptr, int *device);
    /* Makes device current on this thread; *prev gets the one that was. */
    tutti_status_t (*enter)(int device, int *prev);
    void (*leave)(int prev);
    /* This thread may make any runtime call while other threads capture
     * graphs (relaxed capture mode); *prev gets the mode it had. */
    tutti_status_t (*relax)(int *prev);
    void (*unrelax)(int prev);
    /* Loads every kernel of the library on the current device now. */
    tutti_status_t (*preload)(void);
    /* Whether stream is being captured into a graph. */
    tutti_status_t (*capturing)(void *stream, int *yes);
    /* Pinned host memory that the device reaches at *dev. */
    tutti_status_t (*host_alloc)(size_t bytes, void **host, void **dev);
    void (*host_free)(void *host);
    /* Device memory, allocated and freed in stream order (no call that
     * waits for the whole device, where the GPU has memory pools). */
    tutti_status_t (*dev_alloc)(size_t bytes, void *stream, void **ptr);
    void (*dev_free)(void *ptr, void *stream);
    tutti_status_t (*stream_sync)(void *stream);
    /* Copies bytes (any direction) once the stream's earlier work is done. */
    tutti_status_t (*copy)(void *dst, const void *src, size_t bytes, void *stream);
    /* Stores value into the word at dev (host memory the device reaches)
     * once the stream's earlier work is done and visible to the host and
     * to other GPUs. */
    tutti_status_t (*signal)(void *stream, unsigned *dev, unsigned value);
    /* Holds the stream's later work until the word at dev reaches value
     * (wrap-around order). */
    tutti_status_t (*gate)(void *stream, const unsigned *dev, unsigned value);
    /* dst[i] = a[i] op b[i], i < n, by the GPU's kernels (the CPU's bits);
     * dst may alias a or b. */
    tutti_status_t (*reduce)(void *dst, const void *a, const void *b, size_t n, tutti_dtype_t dtype,
                             tutti_op_t op, void *stream);
    /* buf[i] /= nranks, as the host path's average. */
    tutti_status_t (*avg_finish)(void *buf, size_t n, tutti_dtype_t dtype, int nranks, void *stream);
    /* dst[i] = src[i] * k, k read from k_dev when the kernel runs, else
     * the value at k_host now. */
    tutti_status_t (*scale)(void *dst, const void *src, size_t n, tutti_dtype_t dtype, const void *k_dev,
                            const void *k_host, void *stream);
    tutti_status_t (*event_create)(void **event);
    void (*event_destroy)(void *event);
    tutti_status_t (*event_record)(void *event, void *stream);
    /* *done: whether the work before the event's last record is done. */
    tutti_status_t (*event_query)(void *event, int *done);
    tutti_status_t (*event_sync)(void *event);
    /* The stream's later work waits for the event's last record. */
    tutti_status_t (*stream_wait)(void *stream, void *event);
    /* The runtime's words for this thread's last failed call. */
    const char *(*said)(void);
} tt_device_rt_t;

#ifdef TT_HAVE_CUDA
extern const tt_device_rt_t tt_device_cuda_rt;
#endif

/* The table device calls use: CUDA's where built, else NULL (no GPU). */
const tt_device_rt_t *tt_device_runtime(void);
/* Tests put their own in place before the first device call. */
void tt_device_set_rt(const tt_device_rt_t *rt);

#endif
