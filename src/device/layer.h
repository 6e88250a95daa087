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

typedef struct {
    tutti_comm_t comm;
    int started; /* the proxy runs (from the first queued work on) */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* work queued or finished, or stopping */
    tt_device_item_t *head, *tail;
    int running; /* the proxy holds work taken off the queue */
    int stopping;
    unsigned issued;    /* tickets handed out */
    unsigned *done;     /* pinned, device-mapped: the last finished ticket */
    unsigned *done_dev; /* the same word, as the wait kernel sees it */
    tt_device_ctx_t ctx;
    size_t pinned_bytes, gpu_bytes;
    void *fetched; /* cudaEvent_t per slice: its inputs are in the staging */
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
