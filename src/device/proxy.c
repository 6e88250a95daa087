/* SPDX-License-Identifier: MIT */
/*
 * The device proxy thread. It touches host memory only and makes no GPU
 * runtime call (queue.c says why). It runs the staged calls in the order
 * they were queued, each once its stream has put the inputs through the
 * pipe, and puts the results back. While direct rounds (of collectives, or
 * of sends and receives) are pending on this rank's streams it watches the
 * peers: one that dies or gives up would leave them waiting for ever, so
 * the proxy stores that peer's words itself (the stream goes on, the
 * call's results unfinished) and fails the communicator, which the next
 * call reports. With nothing to do it sleeps on a condition variable the
 * queuing thread signals.
 */
#include <stdlib.h>
#include <time.h>

#include "comm/error.h"
#include "core/clock.h"
#include "core/log.h"
#include "device/pipe.h"
#include "transports/device.h"

#define WATCH_NS 20000000 /* between looks at the peers while direct rounds are pending */

int tt_device_rounds_pending(const tt_device_layer_t *d)
{
    unsigned issued = atomic_load_explicit(&d->rounds, memory_order_acquire);
    unsigned puts = atomic_load_explicit(&d->p2p_puts, memory_order_acquire);
    return (int)(issued - atomic_load_explicit(&d->words[TT_WORD_ROUND], memory_order_acquire)) > 0 ||
           (int)(puts - atomic_load_explicit(&d->words[TT_WORD_P2P], memory_order_acquire)) > 0;
}

void tt_device_release_streams(tt_device_layer_t *d)
{
    tt_comm_t *comm = d->comm;
    if (comm->device_tp < 0)
        return;
    int p = comm->nranks;
    unsigned *to = calloc(2 * (size_t)p, sizeof *to); /* the counts as they are now */
    for (int q = 0; to && q < p; q++) {
        to[q] = atomic_load_explicit(&d->chunks_to[q], memory_order_acquire);
        to[p + q] = atomic_load_explicit(&d->chunks_from[q], memory_order_acquire);
    }
    tt_comm_device_ops(comm)->release(tt_comm_device_ctx(comm), -1,
                                      atomic_load_explicit(&d->rounds, memory_order_acquire), to,
                                      to ? to + p : NULL);
    free(to);
}

static void watch_peers(tt_device_layer_t *d)
{
    tt_comm_t *comm = d->comm;
    if (comm->failed) { /* said when it failed: nothing more will come from the peers */
        tt_device_release_streams(d);
        return;
    }
    for (int q = 0; q < comm->nranks; q++) {
        const tt_peer_t *peer = &comm->device_peers[q];
        tutti_status_t st = q == comm->rank || !peer->ops ? TUTTI_SUCCESS : peer->ops->alive(peer->conn);
        if (!st)
            continue;
        tt_comm_error(comm, st, "a direct run: rank %d %s while this rank's stream waited for it", q,
                      st == TUTTI_ERR_ABORTED ? "gave up" : "died");
        tt_comm_fail(comm, st);
        tt_device_release_streams(d);
        return;
    }
}

static void wait_a_while(tt_device_layer_t *d)
{
    struct timespec ts = tt_realtime_in_ns(WATCH_NS);
    pthread_cond_timedwait(&d->changed, &d->lock, &ts);
}

/* The proxy's stand-in for a call larger than the staging: its own,
 * pageable, grown here as calls need. */
static char *bounce(tt_device_layer_t *d, size_t bytes)
{
    if (bytes > d->bounce_bytes) {
        char *p = realloc(d->bounce, bytes);
        if (!p)
            return NULL;
        d->bounce = p;
        d->bounce_bytes = bytes;
    }
    return d->bounce;
}

static void run_item(tt_device_layer_t *d, tt_device_item_t *item)
{
    tt_device_ctx_t ctx = item->ctx;
    const tt_device_work_t *w = &item->work;
    ctx.host = item->pipe.whole ? d->staging : bounce(d, w->host_bytes);
    if (!ctx.host)
        tt_comm_fail(d->comm, tt_comm_error(d->comm, TUTTI_ERR_NO_MEMORY,
                                            "%s: no memory for a %zu-byte stand-in", w->name, w->host_bytes));
    else if (!tt_pipe_take_in(d, item, ctx.host)) {
        tutti_status_t st = w->run(d->comm, &ctx, w->arg);
        if (st) /* said; the stream is released all the same: the next call reports it */
            tt_comm_fail(d->comm, st);
        if (!tt_pipe_give_out(d, item, ctx.host))
            return;
    }
    tt_pipe_skip(d, item); /* no gate of the call stays closed */
}

static tt_device_item_t *take(tt_device_layer_t *d)
{
    tt_device_item_t *item = d->head;
    d->head = item->next;
    if (!d->head)
        d->tail = NULL;
    return item;
}

void *tt_device_proxy_main(void *arg)
{
    tt_device_layer_t *d = arg;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        int aborting = atomic_load_explicit(&d->comm->aborting, memory_order_relaxed);
        if (!d->head) {
            /* Stopping, it waits for the rounds this rank's stream has
             * pending (a peer may still die meanwhile); once the
             * communicator failed, nothing more will come from the peers:
             * the stream is released, and no longer watched. */
            int pending = tt_device_rounds_pending(d);
            if (pending && d->comm->failed) {
                pthread_mutex_unlock(&d->lock);
                watch_peers(d);
                pthread_mutex_lock(&d->lock);
                pending = 0;
            }
            if (aborting || (d->stopping && !pending))
                break;
            if (!pending) {
                pthread_cond_wait(&d->changed, &d->lock);
                continue;
            }
            wait_a_while(d);
            pthread_mutex_unlock(&d->lock);
            watch_peers(d);
            pthread_mutex_lock(&d->lock);
            continue;
        }
        tt_device_item_t *item = take(d);
        d->running = 1;
        pthread_mutex_unlock(&d->lock);
        if (aborting)
            tt_pipe_skip(d, item);
        else
            run_item(d, item);
        tt_device_item_let_go(item);
        pthread_mutex_lock(&d->lock);
        d->running = 0;
        pthread_cond_broadcast(&d->changed);
    }
    while (d->head) { /* aborting: nothing left waits for the proxy */
        tt_device_item_t *item = take(d);
        tt_pipe_skip(d, item);
        tt_device_item_let_go(item);
    }
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    return NULL;
}
