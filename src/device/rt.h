/* SPDX-License-Identifier: MIT */
/*
 * The GPU runtime calls the device layer makes (queue, staging, device
 * fronts), behind a table: CUDA's in builds with CUDA (rt_cuda.c); the
 * tests put a model of streams in host memory in its place, so the order
 * in which the real code puts work on streams, and what it asks of the
 * runtime while a gate may hold a stream, are checked without a GPU.
 *
 * Every call returns 0 or a runtime error code that error() names. Work
 * put on a stream runs after the stream's earlier work; stream NULL is the
 * default stream.
 */
#ifndef TT_DEVICE_RT_H
#define TT_DEVICE_RT_H

#include <stddef.h>

typedef struct {
    const char *name;
    /* The GPU whose memory ptr is. */
    int (*device_of)(const void *ptr, int *device);
    /* Makes device current on this thread; *prev gets the one that was. */
    int (*enter)(int device, int *prev);
    void (*leave)(int prev);
    /* Loads every kernel of the library on the current device now (what a
     * lazily loaded kernel could wait for is described in queue.c). */
    int (*preload)(void);
    /* Whether stream is being captured into a graph. */
    int (*capturing)(void *stream, int *yes);
    /* Pinned host memory that the device reaches at *dev. */
    int (*host_alloc)(size_t bytes, void **host, void **dev);
    void (*host_free)(void *host);
    /* Device memory, allocated and freed in stream order (no call that
     * waits for the whole device). */
    int (*dev_alloc)(size_t bytes, void *stream, void **ptr);
    void (*dev_free)(void *ptr, void *stream);
    int (*stream_create)(void **stream); /* non-blocking: it never waits for the default stream */
    void (*stream_destroy)(void *stream);
    int (*stream_sync)(void *stream);
    /* Copies bytes (any direction) once the stream's earlier work is done. */
    int (*copy)(void *dst, const void *src, size_t bytes, void *stream);
    /* Stores value into the word at dev (host memory the device reaches)
     * once the stream's earlier work is done and visible to the host. */
    int (*signal)(void *stream, unsigned *dev, unsigned value);
    /* Holds the stream's later work until the word at dev reaches ticket
     * (wrap-around order). */
    int (*gate)(void *stream, const unsigned *dev, unsigned ticket);
    int (*event_create)(void **event);
    void (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    /* *done: whether the work before the event's last record is done. */
    int (*event_query)(void *event, int *done);
    int (*event_sync)(void *event);
    /* The stream's later work waits for the event's last record. */
    int (*stream_wait)(void *stream, void *event);
    const char *(*error)(int code);
    int (*out_of_memory)(int code);
} tt_device_rt_t;

/* The table new device queues use: CUDA's where built, else NULL. */
const tt_device_rt_t *tt_device_rt(void);
/* Tests put their own in place before the first device call. */
void tt_device_set_rt(const tt_device_rt_t *rt);

#endif
