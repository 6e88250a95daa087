/* SPDX-License-Identifier: MIT */
/* The device queue and its proxy thread (see queue.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"
#include "device/layer.h"
#include "device/memkind.h"

int tt_device_supported(char *why, size_t whylen)
{
    return tt_cuda_usable(why, whylen);
}

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/kernels.h"

struct tt_device_item {
    struct tt_device_item *next;
    tt_device_work_t work;
    cudaEvent_t inputs_ready; /* recorded on the caller's stream */
    unsigned ticket;
};

tutti_status_t tt_device_error(tutti_comm_t comm, const char *name, const char *what, int cuda_error)
{
    cudaError_t e = (cudaError_t)cuda_error;
    cudaGetLastError(); /* clear it, or the runtime reports it again */
    return tt_comm_error(comm, e == cudaErrorMemoryAllocation ? TUTTI_ERR_NO_MEMORY : TUTTI_ERR_SYSTEM,
                         "%s: %s: %s", name, what, cudaGetErrorString(e));
}

tutti_status_t tt_device_of(tutti_comm_t comm, const void *ptr, const char *name, int *device)
{
    struct cudaPointerAttributes attr;
    cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
    if (e)
        return tt_device_error(comm, name, "asking where the buffer lives", e);
    *device = attr.device;
    return TUTTI_SUCCESS;
}

/* On the proxy thread, once the work's inputs are ready on the caller's
 * stream. Nobody waits for its status: a failure goes to the communicator. */
static void run_item(tt_device_layer_t *d, tt_device_item_t *item)
{
    tutti_comm_t comm = d->comm;
    cudaError_t e = cudaStreamWaitEvent(d->ctx.copies, item->inputs_ready, 0);
    if (!e)
        e = cudaStreamWaitEvent(d->ctx.results, item->inputs_ready, 0);
    tt_device_ctx_t ctx = d->ctx;
    ctx.inputs_ready = item->inputs_ready;
    tutti_status_t st = e ? tt_device_error(comm, item->work.name, "waiting for the inputs", e)
                          : item->work.run(comm, &ctx, item->work.arg);
    if (st)
        tt_comm_fail(comm, st);
}

static void *proxy_main(void *arg)
{
    tt_device_layer_t *d = arg;
    cudaSetDevice(d->ctx.device);
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
        run_item(d, item);
        /* Release the caller's stream even after a failure: a stream held
         * forever would hang the GPU; the error goes to the next call. */
        __atomic_store_n(d->done, item->ticket, __ATOMIC_RELEASE);
        cudaEventDestroy(item->inputs_ready);
        if (item->work.release)
            item->work.release(item->work.arg);
        free(item);
        pthread_mutex_lock(&d->lock);
        d->running = 0;
        pthread_cond_broadcast(&d->changed);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static tutti_status_t queue_start(tt_device_layer_t *d, int device, const char *name)
{
    d->ctx.device = device;
    cudaStream_t copies = NULL, results = NULL;
    cudaError_t e =
        cudaHostAlloc((void **)&d->done, sizeof *d->done, cudaHostAllocMapped | cudaHostAllocPortable);
    if (!e)
        e = cudaHostGetDevicePointer((void **)&d->done_dev, d->done, 0);
    if (!e)
        e = cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking);
    if (!e && (e = cudaStreamCreateWithFlags(&results, cudaStreamNonBlocking)) != cudaSuccess)
        cudaStreamDestroy(copies);
    if (e) {
        tutti_status_t st = tt_device_error(d->comm, name, "setting up the device queue", e);
        if (d->done)
            cudaFreeHost(d->done);
        d->done = NULL;
        return st;
    }
    d->ctx.copies = copies;
    d->ctx.results = results;
    *d->done = 0;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->changed, NULL);
    if (pthread_create(&d->thread, NULL, proxy_main, d)) {
        cudaStreamDestroy(copies);
        cudaStreamDestroy(results);
        cudaFreeHost(d->done);
        d->done = NULL;
        pthread_cond_destroy(&d->changed);
        pthread_mutex_destroy(&d->lock);
        return tt_comm_error(d->comm, TUTTI_ERR_SYSTEM, "%s: could not start the device proxy thread", name);
    }
    d->started = 1;
    return TUTTI_SUCCESS;
}

/* With d->lock held: waits until the proxy is idle, then regrows *buf
 * (pinned host memory, or GPU memory when on_gpu) to at least want bytes.
 * Only work larger than every earlier one waits here; the proxy itself
 * never allocates, since freeing could wait for the streams held for it. */
static tutti_status_t grow(tt_device_layer_t *d, void **buf, size_t *have, size_t want, int on_gpu,
                           const char *name)
{
    if (want <= *have)
        return TUTTI_SUCCESS;
    while (d->head || d->running)
        pthread_cond_wait(&d->changed, &d->lock);
    size_t bytes = want > 2 * *have ? want : 2 * *have;
    if (*buf && on_gpu)
        cudaFree(*buf);
    else if (*buf)
        cudaFreeHost(*buf);
    *buf = NULL;
    *have = 0;
    for (;;) {
        cudaError_t e = on_gpu ? cudaMalloc(buf, bytes) : cudaHostAlloc(buf, bytes, cudaHostAllocPortable);
        if (!e)
            break;
        *buf = NULL;
        if (e != cudaErrorMemoryAllocation || bytes == want)
            return tt_device_error(
                d->comm, name, on_gpu ? "allocating working memory on the GPU" : "allocating pinned staging",
                e);
        cudaGetLastError();
        bytes = want; /* no room to spare: exactly what this work needs */
    }
    *have = bytes;
    return TUTTI_SUCCESS;
}

/* With d->lock held: the event, then the kernel that holds the stream,
 * then the queue; the proxy can only start once both are on the stream. */
static tutti_status_t push(tt_device_layer_t *d, tt_device_item_t *item, void *stream)
{
    cudaError_t e = cudaEventCreateWithFlags(&item->inputs_ready, cudaEventDisableTiming);
    if (!e && (e = cudaEventRecord(item->inputs_ready, (cudaStream_t)stream)) != cudaSuccess)
        cudaEventDestroy(item->inputs_ready);
    item->ticket = d->issued + 1;
    if (!e && (e = (cudaError_t)tt_cuda_wait_ticket(d->done_dev, item->ticket, stream)) != cudaSuccess)
        cudaEventDestroy(item->inputs_ready);
    if (e)
        return tt_device_error(d->comm, item->work.name, "enqueueing on the stream", e);
    d->issued = item->ticket;
    if (d->tail)
        d->tail->next = item;
    else
        d->head = item;
    d->tail = item;
    pthread_cond_broadcast(&d->changed);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_device_enqueue(tutti_comm_t comm, int device, const tt_device_work_t *work, void *stream)
{
    tt_device_layer_t *d = tt_device_layer(comm, work->name);
    tutti_status_t st = d ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    if (!st && !d->started)
        st = queue_start(d, device, work->name);
    if (!st && device != d->ctx.device)
        st = tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                           "%s: the buffers are on GPU %d, but this communicator's device calls use GPU %d",
                           work->name, device, d->ctx.device);
    tt_device_item_t *item = st ? NULL : calloc(1, sizeof *item);
    if (!st && !item)
        st = tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue the call", work->name);
    if (st) {
        if (work->release)
            work->release(work->arg);
        return st;
    }
    item->work = *work;
    pthread_mutex_lock(&d->lock);
    st = grow(d, &d->ctx.pinned, &d->pinned_bytes, work->pinned_bytes, 0, work->name);
    if (!st)
        st = grow(d, &d->ctx.gpu, &d->gpu_bytes, work->gpu_bytes, 1, work->name);
    if (!st)
        st = push(d, item, stream);
    pthread_mutex_unlock(&d->lock);
    if (st) {
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
    if (!tt_cuda_usable(why, sizeof why))
        return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: stream: given, but %s; pass NULL", name, why);
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e)
        return tt_device_error(comm, name, "waiting for the stream's earlier work", e);
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
    cudaStreamDestroy((cudaStream_t)d->ctx.copies);
    cudaStreamDestroy((cudaStream_t)d->ctx.results);
    cudaEvent_t *fetched = d->fetched;
    for (int i = 0; i < d->nfetched; i++)
        cudaEventDestroy(fetched[i]);
    free(d->fetched);
    if (d->ctx.pinned)
        cudaFreeHost(d->ctx.pinned);
    if (d->ctx.gpu)
        cudaFree(d->ctx.gpu);
    cudaFreeHost(d->done);
    pthread_cond_destroy(&d->changed);
    pthread_mutex_destroy(&d->lock);
    d->started = 0;
}

#else /* no CUDA: every buffer is host memory, and streams cannot be given */

tutti_status_t tt_device_error(tutti_comm_t comm, const char *name, const char *what, int cuda_error)
{
    return tt_comm_error(comm, TUTTI_ERR_SYSTEM, "%s: %s: CUDA error %d", name, what, cuda_error);
}

tutti_status_t tt_device_of(tutti_comm_t comm, const void *ptr, const char *name, int *device)
{
    (void)ptr;
    *device = -1;
    return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: this tutti was built without CUDA", name);
}

tutti_status_t tt_device_enqueue(tutti_comm_t comm, int device, const tt_device_work_t *work, void *stream)
{
    (void)device;
    (void)stream;
    if (work->release)
        work->release(work->arg);
    return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: this tutti was built without CUDA", work->name);
}

tutti_status_t tt_device_drain(tutti_comm_t comm)
{
    (void)comm;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_device_stream_wait(tutti_comm_t comm, const char *name, void *stream)
{
    (void)stream;
    return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED,
                         "%s: stream: this tutti was built without CUDA; pass NULL (host buffers, blocking)",
                         name);
}

void tt_device_queue_stop(tt_device_layer_t *d)
{
    (void)d;
}
#endif
