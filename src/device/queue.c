/* SPDX-License-Identifier: MIT */
/*
 * The device queue (see queue.h): putting calls on the caller's stream,
 * starting and stopping the proxy. proxy.c runs the proxy, pipe.c moves a
 * staged call's bytes between the stream and the proxy.
 *
 * The rule: the proxy makes no GPU runtime call, ever. Every runtime call
 * of a device collective is made by the calling thread, at call time,
 * before the call returns; the proxy touches host memory only (the pinned
 * staging, the words the streams and it exchange, the host transports).
 * Why: a caller's stream may be held, by a staged call's gate until the
 * proxy has finished, or by a direct run waiting for a peer's stream, and
 * while it is held
 * - the application may launch a kernel whose module is not loaded yet:
 *   with lazy loading (CUDA's default since 12.2) the load takes the
 *   context's lock and waits for the device's queued work, the held stream
 *   included; a proxy that then makes any runtime call (a copy, a kernel,
 *   a synchronize, a query) blocks on that lock and never releases the
 *   stream (torchcomms PR 2334 shows the pattern). Preloading tutti's own
 *   kernels does not help: the load is the application's;
 * - a pinned or device allocation, on any thread, is an implicit
 *   synchronisation point that waits for the held stream in the same way;
 * - work the proxy queued on a stream of its own may land in a hardware
 *   queue behind the held stream: CUDA maps a process's streams onto
 *   CUDA_DEVICE_MAX_CONNECTIONS queues (8 by default, 1 under Megatron-LM)
 *   round-robin, so past eight streams some share one, and work behind a
 *   closed gate in a shared queue waits for it (MSCCL++ issue 516);
 * - another thread may be capturing a graph in global mode (PyTorch's
 *   default), which the proxy's queries and synchronisations would break.
 * A proxy that makes no runtime call cannot meet any of these. Doing
 * without a proxy for direct runs follows the intra-node all-reduces of
 * inference engines and PyTorch's symmetric memory, which enqueue every
 * step, cross-process ordering included (stream memory operations on
 * shared flags), on the caller's stream at call time. A staged call needs
 * the host for its collective, so it keeps the proxy, confined to host
 * memory. The calling thread, for its part, makes its runtime calls in
 * relaxed capture mode (another thread's global capture stays intact),
 * with the communicator's GPU current, and never allocates pinned memory
 * after the communicator's first device call: the staging has a fixed size
 * and larger calls pass through it in slot-sized pieces (pipe.c); GPU
 * working memory grows in stream order (cudaMallocAsync), which waits for
 * nothing.
 *
 * What holds a stream. A gate must keep the stream's later work from
 * starting until the proxy has stored a word; a direct run's waits until a
 * peer's stream has stored one. Both are stream memory operations
 * (cuStreamWaitValue32 on the word, cuStreamWriteValue32 to store) where
 * the driver has them: no SM, no module, nothing to load. Where it lacks
 * them they are one-thread kernels (cuda/wait.cu; TUTTI_CUDA_GATE picks),
 * which is why every tutti kernel is loaded when the queue starts
 * (tt_cuda_preload), before any gate exists.
 *
 * Order on the caller's stream. A call first waits for the communicator's
 * previous call's last operation (calls on different streams share the
 * staging, the words and the windows, in call order), then puts its work,
 * then records last_queued. A staged call is queued for the proxy before
 * anything goes on the stream: with CUDA_LAUNCH_BLOCKING=1 putting a gate
 * waits for the proxy (NCCL issue 750). The sequence numbers are taken
 * here too, in call order, so a direct run (which never reaches the proxy)
 * and the staged calls around it keep the order the peers see.
 *
 * What the GPU may still use when the queue stops: the staging and the
 * words, until last_queued has completed. Destroy waits for it; an abort
 * does not wait, and leaves them allocated when the GPU is not there yet.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "core/env_config.h"
#include "core/log.h"
#include "device/layer.h"
#include "device/memkind.h"
#include "device/pipe.h"
#include "transports/device.h"

tutti_status_t tt_device_error(tt_comm_t *comm, const char *name, const char *what, tutti_status_t st)
{
    const tt_device_rt_t *rt = tt_device_runtime();
    return tt_comm_error(comm, st, "%s: %s: %s", name, what, rt ? rt->said() : tutti_strerror(st));
}

static tutti_status_t no_cuda(tt_comm_t *comm, const char *name)
{
    return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: this tutti was built without CUDA", name);
}

tutti_status_t tt_device_of(tt_comm_t *comm, const void *ptr, const char *name, int *device)
{
    *device = -1;
    const tt_device_rt_t *rt = tt_device_runtime();
    if (!rt)
        return no_cuda(comm, name);
    tutti_status_t st = rt->device_of(ptr, device);
    if (st)
        return tt_device_error(comm, name, "asking where the buffer lives", st);
    if (*device < 0)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: the buffer is not device memory", name);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_device_refuse_capture(tt_comm_t *comm, const char *name, void *stream)
{
    const tt_device_rt_t *rt = tt_device_runtime();
    if (!rt)
        return no_cuda(comm, name);
    int capturing = 0;
    tutti_status_t st = rt->capturing(stream, &capturing);
    if (st)
        return tt_device_error(comm, name, "asking whether the stream is being captured", st);
    if (capturing)
        return tt_comm_error(
            comm, TUTTI_ERR_UNSUPPORTED,
            "%s: the stream is being captured into a CUDA graph, which tutti does not support "
            "yet; make the call outside the capture",
            name);
    return TUTTI_SUCCESS;
}

/* ---- starting and stopping ---- */

/* With the device current: eager loading, the words, the staging and the
 * last_queued event; the only pinned allocations of the communicator. */
static tutti_status_t queue_resources(tt_device_layer_t *d, const char **what)
{
    const tt_device_rt_t *rt = d->rt;
    void *words, *words_dev;
    *what = "loading the kernels";
    tutti_status_t st = rt->preload();
    if (!st && (*what = "allocating the words the streams and the proxy share",
                st = rt->host_alloc(TT_WORDS * sizeof(unsigned), &words, &words_dev)) == TUTTI_SUCCESS) {
        d->words = words;
        d->words_dev = words_dev;
        for (int i = 0; i < TT_WORDS; i++)
            atomic_init(&d->words[i], 0);
    }
    void *unused;
    d->staging_bytes = (size_t)tt_config_int(TT_CFG_DEVICE_STAGING_BYTES);
    if (!st && (*what = "allocating the pinned staging",
                st = rt->host_alloc(d->staging_bytes, (void **)&d->staging, &unused)) != TUTTI_SUCCESS)
        rt->host_free(d->words);
    if (!st && (*what = "creating an event", st = rt->event_create(&d->last_queued)) != TUTTI_SUCCESS) {
        rt->host_free(d->staging);
        rt->host_free(d->words);
    }
    return st;
}

static tutti_status_t queue_start(tt_device_layer_t *d, int device, const char *name)
{
    d->rt = tt_device_runtime();
    d->device = device;
    const char *what;
    tutti_status_t st = queue_resources(d, &what);
    if (st)
        return tt_device_error(d->comm, name, what, st);
    pthread_mutex_init(&d->enqueue_lock, NULL);
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->changed, NULL);
    if (pthread_create(&d->thread, NULL, tt_device_proxy_main, d)) {
        d->rt->event_destroy(d->last_queued);
        d->rt->host_free(d->staging);
        d->rt->host_free(d->words);
        pthread_cond_destroy(&d->changed);
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->enqueue_lock);
        return tt_comm_error(d->comm, TUTTI_ERR_SYSTEM, "%s: could not start the device proxy thread", name);
    }
    d->started = 1;
    return TUTTI_SUCCESS;
}

/* With the device current. After an abort the GPU may not have reached the
 * last call yet: what it may still read or write stays allocated. */
static void queue_free(tt_device_layer_t *d, int aborting)
{
    const tt_device_rt_t *rt = d->rt;
    int done = 1;
    if (d->any_queued && (aborting ? rt->event_query(d->last_queued, &done) : rt->event_sync(d->last_queued)))
        done = 0;
    if (!done) {
        if (d->comm->device_tp >= 0)
            tt_comm_device_ops(d->comm)->keep(tt_comm_device_ctx(d->comm));
        TT_INFO(TT_SUB_COLL,
                "device queue: the GPU has not reached the last call; its staging stays allocated");
        return;
    }
    if (d->gpu)
        rt->dev_free(d->gpu, NULL);
    rt->event_destroy(d->last_queued);
    rt->host_free(d->staging);
    rt->host_free(d->words);
}

void tt_device_queue_stop(tt_device_layer_t *d)
{
    if (!d->started)
        return;
    pthread_mutex_lock(&d->lock);
    d->stopping = 1;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL); /* the proxy finishes what is queued first, unless aborting */
    int aborting = atomic_load_explicit(&d->comm->aborting, memory_order_relaxed);
    if (aborting) /* this rank's stream stops waiting for its peers' rounds */
        tt_device_release_streams(d);
    int prev, mode;
    if (d->rt->enter(d->device, &prev) == TUTTI_SUCCESS) {
        int relaxed = d->rt->relax(&mode) == TUTTI_SUCCESS;
        queue_free(d, aborting);
        if (relaxed)
            d->rt->unrelax(mode);
        d->rt->leave(prev);
    }
    free(d->bounce);
    pthread_cond_destroy(&d->changed);
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->enqueue_lock);
    d->started = 0;
}

/* ---- the layer on a communicator: made on first use, torn down with it ---- */

static void layer_quiesce(tt_comm_t *comm, void *state)
{
    (void)state;
    tt_device_drain(comm);
}

static void layer_destroy(tt_comm_t *comm, void *state)
{
    tt_device_layer_t *d = state;
    (void)comm;
    tt_device_queue_stop(d); /* the proxy finishes what is queued first, unless aborting */
    free(d->chunks_to);      /* chunks_from with it */
    free(d);
}

static const tt_layer_ops_t device_layer_ops = {.quiesce = layer_quiesce, .destroy = layer_destroy};

/* The layer's state on comm, made on first use (NULL: no memory, said), and
 * torn down with it: what is queued drains first. */
static tt_device_layer_t *layer_of(tt_comm_t *comm, const char *name)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    if (d)
        return d;
    d = calloc(1, sizeof *d);
    if (d && (d->chunks_to = calloc(2 * (size_t)comm->nranks, sizeof *d->chunks_to)) != NULL)
        d->chunks_from = d->chunks_to + comm->nranks;
    if (!d || !d->chunks_to) {
        free(d);
        tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory for the device layer", name);
        return NULL;
    }
    d->comm = comm;
    tt_comm_layer_set(comm, TT_LAYER_DEVICE, d, &device_layer_ops);
    return d;
}

/* ---- putting a call on the stream ---- */

/* The GPU working memory grows in stream order on the caller's stream,
 * after the wait for the previous call: the outgrown block is freed there
 * too, once every earlier call is done with it. Nothing waits. */
static tutti_status_t grow_gpu(tt_device_layer_t *d, size_t want, void *stream)
{
    if (want <= d->gpu_bytes)
        return TUTTI_SUCCESS;
    size_t bytes = want > 2 * d->gpu_bytes ? want : 2 * d->gpu_bytes;
    void *fresh;
    tutti_status_t st = d->rt->dev_alloc(bytes, stream, &fresh);
    if (st == TUTTI_ERR_NO_MEMORY && bytes > want)
        st = d->rt->dev_alloc(bytes = want, stream, &fresh);
    if (st)
        return st;
    if (d->gpu)
        d->rt->dev_free(d->gpu, stream);
    d->gpu = fresh;
    d->gpu_bytes = bytes;
    return TUTTI_SUCCESS;
}

/* A call whose sequence numbers were taken but whose stream side could not
 * all be put (st, said): this rank gives up the communicator, so its
 * peers' parts of the call fail with its reason (never wait for it, never
 * pair with its next call), and nothing of it stays waiting on its own
 * stream. */
static tutti_status_t give_up(tt_device_layer_t *d, tutti_status_t st)
{
    tt_comm_fail(d->comm, st);
    tt_device_release_streams(d);
    return st;
}

/* The direct part of a call on the stream, and the stream's note that its
 * rounds are done, for the proxy's watch (woken: it watches the peers
 * while rounds are pending). */
static tutti_status_t put_direct_part(tt_device_layer_t *d, const tt_device_work_t *work,
                                      const tt_device_ctx_t *ctx, void *stream, const char **what)
{
    *what = "putting the direct run on the stream";
    tutti_status_t st = work->direct(d->comm, ctx, stream, work->arg);
    if (!st)
        st = d->rt->signal(stream, &d->words_dev[TT_WORD_ROUND],
                           atomic_load_explicit(&d->rounds, memory_order_relaxed));
    if (st)
        return st;
    pthread_mutex_lock(&d->lock);
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t put_direct(tt_device_layer_t *d, const tt_device_work_t *work,
                                 const tt_device_ctx_t *ctx, void *stream)
{
    const char *what;
    tutti_status_t st = put_direct_part(d, work, ctx, stream, &what);
    if (!st && (st = d->rt->event_record(d->last_queued, stream)) != TUTTI_SUCCESS)
        what = "recording the call's end on the stream";
    if (st)
        return give_up(d, tt_device_error(d->comm, work->name, what, st));
    d->any_queued = 1;
    return TUTTI_SUCCESS;
}

/* Queued for the proxy first (CUDA_LAUNCH_BLOCKING), then on the stream.
 * A call that runs partly direct (a batch) puts its direct part after its
 * staged inputs are on their way and before its gate: the proxy's part
 * then never waits behind this rank's direct receives, which may wait for
 * a peer whose own progress needs the staged messages (NCCL's group runs
 * all of its messages at once). */
static tutti_status_t put_staged(tt_device_layer_t *d, tt_device_item_t *item, int part, void *stream)
{
    const tt_device_work_t *w = &item->work;
    pthread_mutex_lock(&d->lock);
    if (d->tail)
        d->tail->next = item;
    else
        d->head = item;
    d->tail = item;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    const char *what = NULL; /* a failure of the runtime's, to say; the hooks say their own */
    tutti_status_t st = w->before ? w->before(&item->ctx, stream, w->arg) : TUTTI_SUCCESS;
    if (!st)
        st = tt_pipe_put_in(d, item, stream, &what);
    if (!st && part)
        st = put_direct_part(d, w, &item->ctx, stream, &what);
    if (!st)
        st = tt_pipe_put_out(d, item, stream, &what);
    if (!st && w->after && (st = w->after(&item->ctx, stream, w->arg)) != TUTTI_SUCCESS)
        what = NULL;
    if (!st && (st = d->rt->event_record(d->last_queued, stream)) != TUTTI_SUCCESS)
        what = "recording the call's end on the stream";
    if (!st) {
        d->any_queued = 1;
        return TUTTI_SUCCESS;
    }
    atomic_store_explicit(&item->cancelled, 1, memory_order_release); /* the proxy skips it */
    return give_up(d, what ? tt_device_error(d->comm, w->name, what, st) : st);
}

/* With enqueue_lock held and the device current; releases work in every case. */
static tutti_status_t enqueue_locked(tt_device_layer_t *d, const tt_device_work_t *queued, void *stream)
{
    int direct = 0;
    tt_device_work_t w = *queued, *work = &w;
    tutti_status_t st = work->begin ? work->begin(d->comm, work->arg, &direct) : TUTTI_SUCCESS;
    tt_device_item_t *item = NULL;
    if (st) /* said: nothing was taken, or the communicator failed there */
        goto release;
    if (work->replan)
        work->replan(work->arg, work);
    TT_DEBUG(TT_SUB_COLL, "%s: %s", work->name,
             direct == TT_DIRECT_ALL    ? "direct run"
             : direct == TT_DIRECT_PART ? "partly direct, the rest staged"
                                        : "staged through the proxy");
    /* From here the call's sequence numbers are taken: a failure is partial. */
    tt_device_ctx_t ctx = {.comm = d->comm, .rt = d->rt, .device = d->device};
    const char *what = "ordering the call after the previous one";
    if (d->any_queued)
        st = d->rt->stream_wait(stream, d->last_queued);
    if (!st && (st = grow_gpu(d, work->gpu_bytes, stream)) != TUTTI_SUCCESS)
        what = "allocating working memory on the GPU";
    if (st) {
        st = give_up(d, tt_device_error(d->comm, work->name, what, st));
        goto release;
    }
    ctx.gpu = d->gpu;
    if (direct == TT_DIRECT_ALL) {
        st = put_direct(d, work, &ctx, stream);
        goto release;
    }
    if (!(item = calloc(1, sizeof *item))) {
        st = give_up(
            d, tt_comm_error(d->comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue the call", work->name));
        goto release;
    }
    *item = (tt_device_item_t){.work = *work, .ctx = ctx};
    atomic_init(&item->refs, 2);
    atomic_init(&item->cancelled, 0);
    if ((st = tt_pipe_plan(d, work, &item->pipe)) != TUTTI_SUCCESS) {
        st = give_up(d, tt_comm_error(d->comm, st, "%s: no memory to plan the staging", work->name));
        free(item);
        goto release;
    }
    st = put_staged(d, item, direct == TT_DIRECT_PART, stream);
    tt_device_item_let_go(item); /* the last to let go releases work */
    return st;
release:
    if (work->release)
        work->release(work->arg);
    return st;
}

tutti_status_t tt_device_enqueue(tt_comm_t *comm, int device, const tt_device_work_t *work, void *stream)
{
    tt_device_layer_t *d = NULL;
    const tt_device_rt_t *rt = tt_device_runtime();
    int prev, mode, entered = 0, relaxed = 0;
    tutti_status_t st = tt_device_refuse_capture(comm, work->name, stream);
    if (!st && !(d = layer_of(comm, work->name)))
        st = TUTTI_ERR_NO_MEMORY;
    if (!st && !(entered = rt->enter(device, &prev) == TUTTI_SUCCESS))
        st = tt_device_error(comm, work->name, "making the communicator's GPU current", TUTTI_ERR_SYSTEM);
    if (!st) /* no call of ours may break another thread's capture */
        relaxed = rt->relax(&mode) == TUTTI_SUCCESS;
    if (!st && !d->started)
        st = queue_start(d, device, work->name);
    if (!st && device != d->device)
        st = tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                           "%s: the buffers are on GPU %d, but this communicator's device calls use GPU %d",
                           work->name, device, d->device);
    if (!st) {
        pthread_mutex_lock(&d->enqueue_lock);
        st = enqueue_locked(d, work, stream);
        pthread_mutex_unlock(&d->enqueue_lock);
    } else if (work->release) {
        work->release(work->arg);
    }
    if (relaxed)
        rt->unrelax(mode);
    if (entered)
        rt->leave(prev);
    return st;
}

tutti_status_t tt_device_drain(tt_comm_t *comm)
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

tutti_status_t tt_device_stream_wait(tt_comm_t *comm, const char *name, void *stream)
{
    char why[160];
    const tt_device_rt_t *rt = tt_device_runtime();
    if (!rt)
        return tt_comm_error(
            comm, TUTTI_ERR_UNSUPPORTED,
            "%s: stream: this tutti was built without CUDA; pass NULL (host buffers, blocking)", name);
    if (tt_device_usable(why, sizeof why))
        return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: stream: given, but %s; pass NULL", name, why);
    TT_TRY(tt_device_refuse_capture(comm, name, stream));
    int mode, relaxed = rt->relax(&mode) == TUTTI_SUCCESS;
    tutti_status_t st = rt->stream_sync(stream);
    if (relaxed)
        rt->unrelax(mode);
    return st ? tt_device_error(comm, name, "waiting for the stream's earlier work", st) : TUTTI_SUCCESS;
}

/* ---- the NCCL layer's steps on the caller's stream ---- */

/* f on the communicator's GPU, relaxed; said under name, what. */
#define ON_GPU(comm, name, what, call)                                                                       \
    do {                                                                                                     \
        const tt_device_rt_t *rt_ = tt_device_runtime();                                                     \
        tt_device_layer_t *d_ = tt_comm_layer(comm, TT_LAYER_DEVICE);                                        \
        int prev_, mode_, entered_ = 0, relaxed_;                                                            \
        if (!rt_)                                                                                            \
            return no_cuda(comm, name);                                                                      \
        if (d_ && d_->started)                                                                               \
            entered_ = rt_->enter(d_->device, &prev_) == TUTTI_SUCCESS;                                      \
        relaxed_ = rt_->relax(&mode_) == TUTTI_SUCCESS;                                                      \
        tutti_status_t st_ = (call);                                                                         \
        if (relaxed_)                                                                                        \
            rt_->unrelax(mode_);                                                                             \
        if (entered_)                                                                                        \
            rt_->leave(prev_);                                                                               \
        return st_ ? tt_device_error(comm, name, what, st_) : TUTTI_SUCCESS;                                 \
    } while (0)

tutti_status_t tt_device_copy(tt_comm_t *comm, const char *name, void *dst, const void *src, size_t bytes,
                              void *stream)
{
    ON_GPU(comm, name, "copying within this rank", rt_->copy(dst, src, bytes, stream));
}

tutti_status_t tt_device_scale(tt_comm_t *comm, const char *name, void *dst, const void *src, size_t n,
                               tutti_dtype_t dtype, const void *k_dev, const void *k_host, void *stream)
{
    ON_GPU(comm, name, "scaling the input of a pre-multiplied sum",
           rt_->scale(dst, src, n, dtype, k_dev, k_host, stream));
}

tutti_status_t tt_device_alloc(tt_comm_t *comm, const char *name, size_t bytes, void *stream, void **ptr)
{
    ON_GPU(comm, name, "allocating on the GPU", rt_->dev_alloc(bytes, stream, ptr));
}

void tt_device_free(void *ptr, void *stream)
{
    const tt_device_rt_t *rt = tt_device_runtime();
    if (rt && ptr)
        rt->dev_free(ptr, stream);
}
