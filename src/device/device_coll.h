/* SPDX-License-Identifier: MIT */
/*
 * Collectives as the device layer sees them: where a call's buffers live,
 * queuing a call on device buffers (run directly on them when every rank
 * can, else staged through pinned host memory), and ordering host calls
 * after the device work queued before them.
 */
#ifndef TT_DEVICE_COLL_H
#define TT_DEVICE_COLL_H

#include "coll/coll.h"

/* Sets where c's buffers live (validated c); device buffers without a
 * usable GPU are an error. name is the API call, for errors. */
tutti_status_t tt_device_classify(tt_comm_t *comm, tt_call_t *c, const char *name);
/* Queues c (some buffer on the device) on stream; returns once queued. */
tutti_status_t tt_device_coll_enqueue(tt_comm_t *comm, const tt_call_t *c, void *stream);
/* Queues a batch of validated, classified sends and receives (some buffer
 * on the device) on stream, run as tt_coll_run_batch runs it with the
 * device buffers staged whole through pinned memory; returns once queued.
 * name is the API call, for errors. */
tutti_status_t tt_device_batch_enqueue(tt_comm_t *comm, const tt_call_t *calls, int n, void *stream,
                                       const char *name);
/* Before a call on host buffers: waits for stream's earlier work (if
 * given) and for the communicator's queued device work. */
tutti_status_t tt_device_wait_turn(tt_comm_t *comm, const char *name, void *stream);

/* The two ways a public call can go: queued on stream when a buffer is on
 * the device, else run on host buffers. arg is the caller's own. */
typedef struct {
    tutti_status_t (*enqueue)(tt_comm_t *comm, const tt_call_t *c, void *arg, void *stream);
    tutti_status_t (*run)(tt_comm_t *comm, const tt_call_t *c, void *arg);
    void *arg;
} tt_device_route_t;
/* Validates and classifies c, then queues it, or runs it after stream's
 * earlier work and the queued device calls. name is the API call. */
tutti_status_t tt_device_route(tt_comm_t *comm, tt_call_t *c, const char *name,
                               const tt_device_route_t *route, void *stream);

#endif
