/* SPDX-License-Identifier: MIT */
/*
 * Collectives on CUDA device buffers, in stream order. A call records an
 * event on the caller's stream, queues the collective for the
 * communicator's proxy thread and enqueues a kernel that holds the stream
 * until the proxy reports the results in place; then it returns. The proxy
 * runs the queued calls in the order they were made: it copies the device
 * inputs into pinned host staging once the event fires, runs the host
 * collective, copies the results back and releases the stream.
 */
#ifndef TT_DEVICE_H
#define TT_DEVICE_H

#include "coll/coll.h"

/* Whether device buffers can be used; why not in why otherwise. */
int tt_device_supported(char *why, size_t whylen);
/* Queues a prepared call with device buffers on stream; returns once
 * queued. how non-NULL: c is the compressed all-reduce that how (copied)
 * and ef describe, ef NULL without error feedback. */
tutti_status_t tt_device_enqueue(tutti_comm_t comm, const tt_call_t *c, const tutti_compress_t *how,
                                 tutti_ef_state_t ef, void *stream);
/* Blocks until every queued device call of comm has finished. */
tutti_status_t tt_device_drain(tutti_comm_t comm);
/* Blocks until the work queued on stream so far is done (host-buffer calls
 * given a stream); name is the collective, for the error. */
tutti_status_t tt_device_stream_wait(tutti_comm_t comm, const char *name, void *stream);
/* Logs what failed in the CUDA runtime (a cudaError_t) for call name and
 * returns its status; built with CUDA only. */
tutti_status_t tt_device_error(tutti_comm_t comm, const char *name, const char *what, int cuda_error);
/* Drains, stops the proxy thread and frees the staging (comm teardown). */
void tt_device_free(tutti_comm_t comm);

#endif
