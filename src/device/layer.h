/* SPDX-License-Identifier: MIT */
/*
 * The device layer's state on a communicator (its opaque handle there),
 * shared by the files of this layer only: the queue and its proxy, the
 * staging's per-slice events, and the direct runs' counter and tuning.
 */
#ifndef TT_DEVICE_LAYER_H
#define TT_DEVICE_LAYER_H

#include <pthread.h>
#include <stdint.h>

#include "comm/comm.h"
#include "device/queue.h"

typedef struct tt_device_item tt_device_item_t;

#define TT_DEVICE_RETIRED_MAX 64 /* working buffers outgrown, freed at the end */

typedef struct {
    tutti_comm_t comm;
    const tt_device_rt_t *rt; /* fixed by the first device call */
    int started;              /* the proxy runs (from the first queued work on) */
    pthread_t thread;
    pthread_mutex_t enqueue_lock; /* one queuing at a time: the streams see tickets in order */
    pthread_mutex_t lock;
    pthread_cond_t changed; /* work queued or finished, or stopping */
    tt_device_item_t *head, *tail;
    int running; /* the proxy holds work taken off the queue */
    int stopping;
    unsigned issued;     /* tickets handed out */
    unsigned *words;     /* pinned, device-mapped: [0] the last finished ticket, [1] the last ticket */
    unsigned *words_dev; /*   whose stream reached its signal; as the device sees them */
    void *last_queued;   /* event after the last work put on a caller's stream */
    int any_queued;      /* it was recorded */
    tt_device_ctx_t ctx; /* streams, and the current working memory */
    size_t pinned_bytes, gpu_bytes;
    void *retired[2][TT_DEVICE_RETIRED_MAX]; /* [0] pinned, [1] GPU */
    int nretired[2];
    void *fetched; /* event per slice: its inputs are in the staging */
    int nfetched;
    /* Direct runs: how many ran, and the policy that prices GPU links. */
    uint64_t direct_runs;
    int direct_tuned;
    tt_algo_policy_t direct_policy;
    tt_link_t *direct_links;
} tt_device_layer_t;

/* The layer's state on comm, made on first use (NULL: no memory, said). */
tt_device_layer_t *tt_device_layer(tutti_comm_t comm, const char *name);
/* Stops the proxy and frees the queue's resources (queue.c). */
void tt_device_queue_stop(tt_device_layer_t *d);

#endif
