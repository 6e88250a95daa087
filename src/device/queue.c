/* SPDX-License-Identifier: MIT */
/*
 * The device queue and its proxy thread (see queue.h).
 *
 * What holds the caller's stream. A gate must keep the stream's later work
 * from starting until the proxy has stored the call's ticket. Two ways:
 * - a one-thread kernel spinning on the ticket word (cuda/wait.cu). It
 *   occupies a slot on an SM for as long as it waits, keeps its context
 *   runnable (ranks sharing a GPU without MPS are time-sliced against it),
 *   makes compute-sanitizer time out, and it is a kernel that cannot end
 *   until the host acts: with lazy module loading (the default since CUDA
 *   12.2) loading any module while it runs may wait for the device to drain
 *   while holding the context's lock, so a lazily loaded kernel launched
 *   then (ours, or the application's) deadlocks against it (torchcomms
 *   PR 2334 reproduces the pattern);
 * - a stream memory operation (cuStreamWaitValue32 on the word, and
 *   cuStreamWriteValue32 for the signal): no SM, no module, nothing to
 *   load; the front end waits. It needs the driver API, reached through
 *   cudaGetDriverEntryPointByVersion so that libtutti never links libcuda
 *   and loads without a driver, and the driver's support (the entry points
 *   of CUDA 12 drivers; where the driver lacks them or a GPU refuses one,
 *   we fall back to the kernel).
 * We use memory operations where the driver has them and the kernel
 * otherwise (TUTTI_CUDA_GATE picks, for comparison on a GPU), and in both
 * cases load every tutti kernel when the queue starts (tt_cuda_preload, as
 * NCCL does with cudaFuncGetAttributes), before any gate exists: eager
 * loading costs well under a megabyte of device memory and a few
 * milliseconds once, and is wanted either way, because whether a module
 * load that waits for a drain also waits for a stream held by a memory
 * operation is not documented (gpu-check.sh measures it). It cannot protect
 * the application's own lazily loaded kernels from a kernel gate, which is
 * the reason to prefer memory operations.
 *
 * Order on the caller's stream, and what the proxy touches. Queuing puts
 * the work on the queue first and only then anything on the stream: with
 * CUDA_LAUNCH_BLOCKING=1 launching the gate waits for the proxy to finish
 * the work, which it must therefore already have (NCCL issue 750). Then,
 * on the caller's stream: a wait for the previous call's last operation
 * (calls on different streams reuse one pinned staging area and one ready
 * word, in ticket order), the work's stage_in copies, the ready signal, the
 * gate, the stage_out copies, and a record of last_queued. The proxy polls
 * the ready word (host memory) instead of querying an event, so it needs
 * no runtime call to learn that a call may start. Staged calls that cannot
 * go direct copy through the caller's stream this way, so the proxy never
 * queues GPU work of its own while a gate holds a stream: with
 * CUDA_DEVICE_MAX_CONNECTIONS=1 every stream shares one hardware queue, and
 * the proxy's copies would sit behind the gate for ever (MSCCL++ issue
 * 516); with that setting direct runs and GPU compression are off too.
 *
 * No call that waits for the whole device while a gate may be live: the
 * working memory only grows, by fresh allocations (pinned memory, and GPU
 * memory in stream order); what it outgrew is freed when the queue stops,
 * after last_queued has completed, as are the ticket words, which a gate
 * still queued behind other work on its stream may yet read.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "device/layer.h"
#include "device/memkind.h"

enum { DONE = 0, READY = 1 };

struct tt_device_item {
    struct tt_device_item *next;
    tt_device_work_t work;
    tt_device_ctx_t ctx; /* the working memory as of queuing */
    unsigned ticket;
    int cancelled; /* its stream operations could not all be queued */
    int refs;      /* the proxy's and the queuing thread's: the last to let go frees it */
};

#ifdef TT_HAVE_CUDA
extern const tt_device_rt_t tt_device_cuda_rt;
static const tt_device_rt_t *current_rt = &tt_device_cuda_rt;
#else
static const tt_device_rt_t *current_rt;
#endif

const tt_device_rt_t *tt_device_rt(void)
{
    return current_rt;
}

void tt_device_set_rt(const tt_device_rt_t *rt)
{
    current_rt = rt;
}

int tt_device_supported(char *why, size_t whylen)
{
    return tt_cuda_usable(why, whylen);
}

int tt_device_one_hw_queue(void)
{
    const char *v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    return v && strtol(v, NULL, 10) == 1;
}

tutti_status_t tt_device_error(tutti_comm_t comm, const char *name, const char *what, int code)
{
    const tt_device_rt_t *rt = current_rt;
    if (!rt)
        return tt_comm_error(comm, TUTTI_ERR_SYSTEM, "%s: %s: GPU runtime error %d", name, what, code);
    return tt_comm_error(comm, rt->out_of_memory(code) ? TUTTI_ERR_NO_MEMORY : TUTTI_ERR_SYSTEM, "%s: %s: %s",
                         name, what, rt->error(code));
}

static tutti_status_t no_cuda(tutti_comm_t comm, const char *name)
{
    return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: this tutti was built without CUDA", name);
}

tutti_status_t tt_device_of(tutti_comm_t comm, const void *ptr, const char *name, int *device)
{
    *device = -1;
    if (!current_rt)
        return no_cuda(comm, name);
    int e = current_rt->device_of(ptr, device);
    return e ? tt_device_error(comm, name, "asking where the buffer lives", e) : TUTTI_SUCCESS;
}

/* ---- the proxy ---- */

static int reached(const tt_device_layer_t *d, int word, unsigned ticket)
{
    unsigned v = __atomic_load_n(&d->words[word], __ATOMIC_ACQUIRE);
    return (int)(v - ticket) >= 0; /* tickets wrap around */
}

/* Until the caller's stream signalled the item (its inputs are ready). The
 * stream may be busy with the application's work for long: spin briefly,
 * then back off to sleeps of up to 100 us. */
static void wait_ready(tt_device_layer_t *d, tt_device_item_t *item)
{
    long pause_ns = 1000;
    for (int spins = 0; !reached(d, READY, item->ticket); spins++) {
        if (__atomic_load_n(&item->cancelled, __ATOMIC_ACQUIRE))
            return;
        if (spins < 200) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        pause_ns = pause_ns < 100000 ? pause_ns * 2 : 100000;
    }
}

static void let_go(tt_device_item_t *item)
{
    if (__atomic_sub_fetch(&item->refs, 1, __ATOMIC_ACQ_REL))
        return;
    if (item->work.release)
        item->work.release(item->work.arg);
    free(item);
}

static void *proxy_main(void *arg)
{
    tt_device_layer_t *d = arg;
    int prev;
    int entered = d->rt->enter(d->ctx.device, &prev) == 0; /* the thread's device, for good */
    pthread_mutex_lock(&d->lock);
    for (;;) {
        while (!d->head && !d->stopping)
            pthread_cond_wait(&d->changed, &d->lock);
        tt_device_item_t *item = d->head;
        if (!item)
            break; /* stopping, and nothing left */
        d->head = item->next;
        if (!d->head)
            d->tail = NULL;
        d->running = 1;
        pthread_mutex_unlock(&d->lock);
        wait_ready(d, item);
        if (!__atomic_load_n(&item->cancelled, __ATOMIC_ACQUIRE)) {
            tutti_status_t st = entered ? item->work.run(d->comm, &item->ctx, item->work.arg)
                                        : tt_comm_error(d->comm, TUTTI_ERR_SYSTEM,
                                                        "%s: the device proxy could not use GPU %d",
                                                        item->work.name, d->ctx.device);
            if (st)
                tt_comm_fail(d->comm, st);
        }
        /* Release the caller's stream even after a failure: a stream held
         * forever would hang the GPU; the error goes to the next call. */
        __atomic_store_n(&d->words[DONE], item->ticket, __ATOMIC_RELEASE);
        let_go(item);
        pthread_mutex_lock(&d->lock);
        d->running = 0;
        pthread_cond_broadcast(&d->changed);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* ---- starting and stopping ---- */

/* With the device current: eager loading, the ticket words, the proxy's
 * streams and the last_queued event. */
static int queue_resources(tt_device_layer_t *d)
{
    const tt_device_rt_t *rt = d->rt;
    int e = rt->preload();
    if (!e)
        e = rt->host_alloc(2 * sizeof *d->words, (void **)&d->words, (void **)&d->words_dev);
    if (e)
        return e;
    d->words[DONE] = d->words[READY] = 0;
    e = rt->stream_create(&d->ctx.copies);
    if (!e && (e = rt->stream_create(&d->ctx.results)) != 0)
        rt->stream_destroy(d->ctx.copies);
    if (!e && (e = rt->event_create(&d->last_queued)) != 0) {
        rt->stream_destroy(d->ctx.copies);
        rt->stream_destroy(d->ctx.results);
    }
    if (e)
        rt->host_free(d->words);
    return e;
}

static void queue_free(tt_device_layer_t *d)
{
    const tt_device_rt_t *rt = d->rt;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < d->nretired[k]; i++)
            k ? rt->dev_free(d->retired[k][i], d->ctx.copies) : rt->host_free(d->retired[k][i]);
    if (d->ctx.pinned)
        rt->host_free(d->ctx.pinned);
    if (d->ctx.gpu)
        rt->dev_free(d->ctx.gpu, d->ctx.copies);
    rt->stream_sync(d->ctx.copies); /* stream-ordered frees done */
    for (int i = 0; i < d->nfetched; i++)
        rt->event_destroy(((void **)d->fetched)[i]);
    free(d->fetched);
    rt->stream_destroy(d->ctx.copies);
    rt->stream_destroy(d->ctx.results);
    rt->event_destroy(d->last_queued);
    rt->host_free(d->words);
}

static tutti_status_t queue_start(tt_device_layer_t *d, int device, const char *name)
{
    d->rt = current_rt;
    d->ctx = (tt_device_ctx_t){.rt = d->rt, .device = device};
    int prev, e = d->rt->enter(device, &prev);
    if (!e) {
        e = queue_resources(d);
        d->rt->leave(prev);
    }
    if (e)
        return tt_device_error(d->comm, name, "setting up the device queue", e);
    pthread_mutex_init(&d->enqueue_lock, NULL);
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->changed, NULL);
    if (pthread_create(&d->thread, NULL, proxy_main, d)) {
        queue_free(d);
        pthread_cond_destroy(&d->changed);
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->enqueue_lock);
        return tt_comm_error(d->comm, TUTTI_ERR_SYSTEM, "%s: could not start the device proxy thread", name);
    }
    d->started = 1;
    return TUTTI_SUCCESS;
}

void tt_device_queue_stop(tt_device_layer_t *d)
{
    if (!d->started)
        return;
    pthread_mutex_lock(&d->lock);
    d->stopping = 1;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL); /* the proxy finishes what is queued first */
    int prev;
    if (d->rt->enter(d->ctx.device, &prev) == 0) {
        /* Every ticket is stored, so the last gate opens; once the work
         * queued after it is done, nothing reads the words or the staging. */
        if (d->any_queued)
            d->rt->event_sync(d->last_queued);
        queue_free(d);
        d->rt->leave(prev);
    }
    pthread_cond_destroy(&d->changed);
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->enqueue_lock);
    d->started = 0;
}

/* ---- queuing ---- */

/* With enqueue_lock held: the working memory grows by a fresh allocation;
 * the outgrown one may still be in use by queued work and is freed at the
 * end (no call that waits for the device here). */
static tutti_status_t grow(tt_device_layer_t *d, int on_gpu, size_t want, const char *name)
{
    void **buf = on_gpu ? &d->ctx.gpu : &d->ctx.pinned;
    size_t *have = on_gpu ? &d->gpu_bytes : &d->pinned_bytes;
    if (want <= *have)
        return TUTTI_SUCCESS;
    size_t bytes = want > 2 * *have ? want : 2 * *have;
    void *fresh = NULL, *mapped;
    for (;;) {
        int e = on_gpu ? d->rt->dev_alloc(bytes, d->ctx.copies, &fresh)
                       : d->rt->host_alloc(bytes, &fresh, &mapped);
        if (!e)
            break;
        if (!d->rt->out_of_memory(e) || bytes == want)
            return tt_device_error(
                d->comm, name, on_gpu ? "allocating working memory on the GPU" : "allocating pinned staging",
                e);
        bytes = want; /* no room to spare: exactly what this work needs */
    }
    if (*buf && d->nretired[on_gpu] < TT_DEVICE_RETIRED_MAX)
        d->retired[on_gpu][d->nretired[on_gpu]++] = *buf;
    else if (*buf)
        TT_WARN(TT_SUB_COLL, "%s: %zu bytes of outgrown working memory kept until the communicator ends",
                name, *have);
    *buf = fresh;
    *have = bytes;
    return TUTTI_SUCCESS;
}

/* The stream's side of an item, in order (see the top of the file). */
static tutti_status_t put_on_stream(tt_device_layer_t *d, tt_device_item_t *item, void *stream)
{
    const tt_device_rt_t *rt = d->rt;
    const char *what = "ordering the call after the previous one";
    int e = d->any_queued ? rt->stream_wait(stream, d->last_queued) : 0;
    if (!e && item->work.stage_in && (e = item->work.stage_in(&item->ctx, stream, item->work.arg)) != 0)
        what = "copying the inputs to the staging";
    if (!e && (e = rt->signal(stream, &d->words_dev[READY], item->ticket)) != 0)
        what = "signalling the proxy from the stream";
    if (!e && (e = rt->gate(stream, &d->words_dev[DONE], item->ticket)) != 0)
        what = "holding the stream for the call";
    if (!e && item->work.stage_out && (e = item->work.stage_out(&item->ctx, stream, item->work.arg)) != 0)
        what = "copying the results from the staging";
    if (!e && (e = rt->event_record(d->last_queued, stream)) != 0)
        what = "recording the call's end on the stream";
    if (e)
        return tt_device_error(d->comm, item->work.name, what, e);
    d->any_queued = 1;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_device_refuse_capture(tutti_comm_t comm, const char *name, void *stream)
{
    if (!current_rt)
        return no_cuda(comm, name);
    int capturing = 0, e = current_rt->capturing(stream, &capturing);
    if (e)
        return tt_device_error(comm, name, "asking whether the stream is being captured", e);
    if (capturing)
        return tt_comm_error(
            comm, TUTTI_ERR_UNSUPPORTED,
            "%s: the stream is being captured into a CUDA graph, which tutti does not support "
            "yet; make the call outside the capture",
            name);
    return TUTTI_SUCCESS;
}

/* With enqueue_lock held and the device current; *queued once the proxy
 * has the item (it then runs, or skips, and lets go of it). */
static tutti_status_t enqueue_locked(tt_device_layer_t *d, tt_device_item_t *item, void *stream, int *queued)
{
    const char *name = item->work.name;
    TT_TRY(grow(d, 0, item->work.pinned_bytes, name));
    TT_TRY(grow(d, 1, item->work.gpu_bytes, name));
    item->ctx = d->ctx;
    item->ticket = ++d->issued;
    item->refs = 2; /* the stream operations below still read the work's argument */
    *queued = 1;
    /* Queued before anything goes on the stream (CUDA_LAUNCH_BLOCKING). */
    pthread_mutex_lock(&d->lock);
    if (d->tail)
        d->tail->next = item;
    else
        d->head = item;
    d->tail = item;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    tutti_status_t st = put_on_stream(d, item, stream);
    if (st) /* the proxy skips it; its ticket is stored all the same */
        __atomic_store_n(&item->cancelled, 1, __ATOMIC_RELEASE);
    let_go(item);
    return st;
}

tutti_status_t tt_device_enqueue(tutti_comm_t comm, int device, const tt_device_work_t *work, void *stream)
{
    /* Before anything that may synchronise, which would break a capture. */
    tutti_status_t st = tt_device_refuse_capture(comm, work->name, stream);
    tt_device_layer_t *d = st ? NULL : tt_device_layer(comm, work->name);
    if (!st && !d)
        st = TUTTI_ERR_NO_MEMORY;
    if (!st && !d->started)
        st = queue_start(d, device, work->name);
    if (!st && device != d->ctx.device)
        st = tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                           "%s: the buffers are on GPU %d, but this communicator's device calls use GPU %d",
                           work->name, device, d->ctx.device);
    tt_device_item_t *item = st ? NULL : calloc(1, sizeof *item);
    if (!st && !item)
        st = tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue the call", work->name);
    int prev, e = st ? 0 : d->rt->enter(device, &prev);
    if (e)
        st = tt_device_error(comm, work->name, "making the communicator's GPU current", e);
    if (st) {
        if (work->release)
            work->release(work->arg);
        free(item);
        return st;
    }
    item->work = *work;
    pthread_mutex_lock(&d->enqueue_lock);
    int queued = 0;
    st = enqueue_locked(d, item, stream, &queued);
    pthread_mutex_unlock(&d->enqueue_lock);
    d->rt->leave(prev);
    if (st && !queued) { /* never reached the proxy: release here */
        if (work->release)
            work->release(work->arg);
        free(item);
    }
    return st;
}

tutti_status_t tt_device_drain(tutti_comm_t comm)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    if (!d || !d->started)
        return TUTTI_SUCCESS;
    pthread_mutex_lock(&d->lock);
    while (d->head || d->running)
        pthread_cond_wait(&d->changed, &d->lock);
    pthread_mutex_unlock(&d->lock);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_device_stream_wait(tutti_comm_t comm, const char *name, void *stream)
{
    char why[160];
    if (!current_rt)
        return tt_comm_error(
            comm, TUTTI_ERR_UNSUPPORTED,
            "%s: stream: this tutti was built without CUDA; pass NULL (host buffers, blocking)", name);
    if (!tt_cuda_usable(why, sizeof why))
        return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: stream: given, but %s; pass NULL", name, why);
    TT_TRY(tt_device_refuse_capture(comm, name, stream));
    int e = current_rt->stream_sync(stream);
    return e ? tt_device_error(comm, name, "waiting for the stream's earlier work", e) : TUTTI_SUCCESS;
}
