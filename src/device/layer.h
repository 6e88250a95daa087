/* SPDX-License-Identifier: MIT */
/*
 * The device layer's state on a communicator (its opaque handle there),
 * shared by the files of this layer only: the queue and its proxy, the
 * pinned staging and its words, the GPU working memory, and the direct
 * runs' rounds.
 */
#ifndef TT_DEVICE_LAYER_H
#define TT_DEVICE_LAYER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "comm/comm.h"
#include "device/queue.h"

typedef struct tt_device_item tt_device_item_t;

/* The pinned words: what the caller's streams and the proxy tell each other. */
enum {
    TT_WORD_GPU = 0, /* pieces the stream has finished (stream to proxy) */
    TT_WORD_HOST,    /* pieces the proxy has finished (proxy to stream) */
    TT_WORD_ROUND,   /* the last direct round the stream has finished */
    TT_WORD_P2P,     /* the last direct sends and receives the stream has finished */
    TT_WORDS
};

#define TT_STAGING_SLOTS 4 /* slots of the staging that large calls pass through */

typedef struct {
    tt_comm_t *comm;
    const tt_device_rt_t *rt; /* fixed by the first device call */
    int started;              /* the proxy runs (from the first queued work on) */
    int device;
    pthread_t thread;
    pthread_mutex_t enqueue_lock; /* one queuing at a time: the streams see the calls in order */
    pthread_mutex_t lock;
    pthread_cond_t changed; /* work queued or finished, rounds issued, or stopping */
    tt_device_item_t *head, *tail;
    int running; /* the proxy holds work taken off the queue */
    int stopping;
    _Atomic unsigned *words; /* pinned, device-mapped (TT_WORD_*) */
    unsigned *words_dev;     /*   as the device sees them */
    unsigned pieces;         /* pieces handed out (the queuing thread's count) */
    char *staging;           /* pinned, TUTTI_DEVICE_STAGING_BYTES, never grown */
    size_t staging_bytes;
    char *bounce; /* the proxy's stand-in for calls larger than the staging */
    size_t bounce_bytes;
    void *gpu; /* working memory on the GPU: grown in stream order on a caller's stream */
    size_t gpu_bytes;
    void *last_queued; /* event after the last work put on a caller's stream */
    int any_queued;    /* it was recorded */
    /* Direct runs: rounds issued (by the queuing thread, read by the proxy's
     * watch), and how many calls ran directly. */
    _Atomic unsigned rounds;
    uint64_t direct_runs;
    /* Direct sends and receives: the calls' parts put on streams (their
     * end stores TT_WORD_P2P), the chunks sent to and received from each
     * rank (what this rank's stream waits for), how many messages ran
     * directly. */
    _Atomic unsigned p2p_puts;
    _Atomic unsigned *chunks_to, *chunks_from;
    uint64_t direct_messages;
} tt_device_layer_t;

/* Stops the proxy and frees the queue's resources (queue.c). */
void tt_device_queue_stop(tt_device_layer_t *d);
/* The proxy thread (proxy.c). */
void *tt_device_proxy_main(void *arg);
/* Whether direct rounds, or direct sends and receives, are issued that the
 * stream has not finished. */
int tt_device_rounds_pending(const tt_device_layer_t *d);
/* Releases this rank's streams from whatever they wait for of its peers
 * (the transport's release): host stores only. */
void tt_device_release_streams(tt_device_layer_t *d);

#endif
