/* SPDX-License-Identifier: MIT */
/*
 * The pipe between a caller's stream and the proxy: how a staged call's
 * inputs reach the host and its results the GPU, through the pinned
 * staging, with two words the stream and the proxy store for each other
 * (pipe.c explains the counting). A call whose stand-in fits the staging
 * uses it as its stand-in (whole); a larger one passes through it in
 * slot-sized pieces to a stand-in of the proxy's in pageable memory
 * (bounce), so the pinned memory never grows.
 */
#ifndef TT_DEVICE_PIPE_H
#define TT_DEVICE_PIPE_H

#include "device/layer.h"

typedef struct {
    int span;         /* the work's span this piece belongs to (in, or out) */
    size_t at, bytes; /* within the span */
} tt_pipe_piece_t;

typedef struct {
    int whole;               /* the stand-in is the staging itself */
    unsigned base;           /* the call's first piece */
    int nin, nout;           /* bounce: pieces each way (out piece 0 is empty: the call is done) */
    tt_pipe_piece_t *pieces; /* bounce: nin, then nout */
    unsigned end;            /* the next call's first piece */
} tt_pipe_t;

/* A staged call queued for the proxy. */
struct tt_device_item {
    struct tt_device_item *next;
    tt_device_work_t work;
    tt_device_ctx_t ctx;
    tt_pipe_t pipe;
    _Atomic int cancelled; /* its stream side could not all be put: the proxy skips it */
    _Atomic int refs;      /* the proxy's and the queuing thread's: the last to let go frees it */
};

/* Lets go of item (the queuing thread's or the proxy's hold); the last
 * releases its work and frees it. */
void tt_device_item_let_go(tt_device_item_t *item);
/* Caller's thread: plans w's pieces from d->pieces on, and advances it. */
tutti_status_t tt_pipe_plan(tt_device_layer_t *d, const tt_device_work_t *w, tt_pipe_t *p);
void tt_pipe_free(tt_pipe_t *p);
/* Caller's thread, on stream: the inputs to the host, then the signal that
 * they are there; the gate until the proxy is done, then the results back.
 * *what says what failed. */
tutti_status_t tt_pipe_put_in(tt_device_layer_t *d, const tt_device_item_t *it, void *stream,
                              const char **what);
tutti_status_t tt_pipe_put_out(tt_device_layer_t *d, const tt_device_item_t *it, void *stream,
                               const char **what);
/* Proxy: the inputs into host, once the stream has put them; the results
 * from host back to the stream; or (skip) everything done without moving
 * anything, so that no gate of the call stays closed. TUTTI_ERR_ABORTED
 * when they gave up waiting (the communicator is aborting, or the item
 * was cancelled). */
tutti_status_t tt_pipe_take_in(tt_device_layer_t *d, tt_device_item_t *it, char *host);
tutti_status_t tt_pipe_give_out(tt_device_layer_t *d, tt_device_item_t *it, const char *host);
void tt_pipe_skip(tt_device_layer_t *d, const tt_device_item_t *it);
/* Proxy: until words[word] reaches value (wrap-around); TUTTI_ERR_ABORTED
 * when the communicator is aborting or cancelled is set first. Spins a
 * moment, then sleeps in growing steps up to a millisecond. */
tutti_status_t tt_pipe_wait(tt_device_layer_t *d, int word, unsigned value, _Atomic int *cancelled);

#endif
