/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm.h"
#include "compress/allreduce.h"
#include "device/queue.h"
#include "device/direct_run.h"
#include "core/log.h"
#include "device/memkind.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/kernels.h"

#define STAGE_ALIGN 256

/* Where a call's device buffers sit in the staging. */
typedef struct {
    size_t bytes, send_off, recv_off;
} layout_t;

typedef struct op {
    struct op *next;
    tt_call_t call; /* with the caller's buffers */
    int compressed; /* a compressed all-reduce, as how and ef say */
    int on_gpu;     /* ... run by the GPU kernels on the buffers themselves */
    int direct_ok;  /* this rank could run it directly (see direct.h) */
    tutti_compress_t how;
    tutti_ef_state_t ef;
    layout_t layout;
    cudaEvent_t inputs_ready; /* recorded on the caller's stream */
    unsigned ticket;
} op_t;

struct tt_device_queue {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a call queued or finished, or stopping */
    op_t *head, *tail;
    int running; /* the proxy holds a call taken off the queue */
    int stopping;
    unsigned issued;      /* tickets handed out */
    unsigned *done;       /* pinned, device-mapped: the last finished ticket */
    unsigned *done_dev;   /* the same word, as the wait kernel sees it */
    int device;           /* the GPU of this communicator's device buffers */
    cudaStream_t copies;  /* the proxy's own streams, independent of the legacy default stream: */
    cudaStream_t results; /* inputs to the host on copies, results back on results */
    cudaEvent_t *fetched; /* per slice: its inputs are in the staging */
    int nfetched;
    void *stage; /* pinned host stand-ins for one call's device buffers */
    size_t stage_bytes;
    void *work_dev, *work_host; /* a compressed call's working memory on the GPU and pinned */
    size_t work_dev_bytes, work_host_bytes;
};

static layout_t stage_layout(const tt_call_t *c)
{
    layout_t l = {0};
    if (c->in_place && c->send_on_device && c->recv_on_device) {
        /* In-place forms keep their layout: one span covers both buffers. */
        const char *s = c->send, *r = c->recv;
        const char *lo = s < r ? s : r,
                   *hi = s + c->in_bytes > r + c->out_bytes ? s + c->in_bytes : r + c->out_bytes;
        return (layout_t){(size_t)(hi - lo), (size_t)(s - lo), (size_t)(r - lo)};
    }
    if (c->send_on_device)
        l.bytes = (c->in_bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    if (c->recv_on_device) {
        l.recv_off = l.bytes;
        l.bytes += c->out_bytes;
    }
    return l;
}

tutti_status_t tt_device_error(tutti_comm_t comm, const char *name, const char *what, int cuda_error)
{
    cudaError_t e = (cudaError_t)cuda_error;
    cudaGetLastError(); /* clear it, or the runtime reports it again */
    return tt_comm_error(comm, e == cudaErrorMemoryAllocation ? TUTTI_ERR_NO_MEMORY : TUTTI_ERR_SYSTEM,
                         "%s: %s: %s", name, what, cudaGetErrorString(e));
}

/* A staged call in flight: slice by slice, inputs in on q->copies and
 * results out on q->results while the engine runs the other slices. */
typedef struct {
    tutti_comm_t comm;
    tt_device_queue_t *q;
    const char *name;
    const tt_call_t *dev, *host; /* the caller's buffers, their stand-ins */
    cudaError_t failed;          /* the first copy that failed */
} staging_t;

static char *piece_at(const tt_call_t *c, tt_piece_t p)
{
    return (char *)(p.buf == TT_BUF_INPUT ? c->send : c->recv) + p.off;
}

static void fetch_slice(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    staging_t *sg = arg;
    tt_device_queue_t *q = sg->q;
    cudaError_t e = sg->failed;
    if (!e && slice >= q->nfetched) { /* the events outlive the call, for the next */
        cudaEvent_t *grown = realloc(q->fetched, (size_t)(slice + 1) * sizeof *grown);
        if (!grown)
            e = cudaErrorMemoryAllocation;
        else
            q->fetched = grown;
        for (; !e && q->nfetched <= slice; q->nfetched++)
            e = cudaEventCreateWithFlags(&q->fetched[q->nfetched], cudaEventDisableTiming);
    }
    for (int i = 0; i < n && !e; i++)
        e = cudaMemcpyAsync(piece_at(sg->host, pieces[i]), piece_at(sg->dev, pieces[i]), pieces[i].bytes,
                            cudaMemcpyDeviceToHost, q->copies);
    if (!e)
        e = cudaEventRecord(q->fetched[slice], q->copies);
    sg->failed = e;
}

static int slice_fetched(void *arg, int slice)
{
    staging_t *sg = arg;
    cudaError_t e = sg->failed ? sg->failed : cudaEventQuery(sg->q->fetched[slice]);
    if (e == cudaSuccess || e == cudaErrorNotReady)
        return e == cudaSuccess;
    sg->failed = e;
    tt_device_error(sg->comm, sg->name, "copying between the device buffers and the staging", e);
    return -1;
}

static void deliver_slice(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    (void)slice;
    staging_t *sg = arg;
    for (int i = 0; i < n && !sg->failed; i++)
        sg->failed = cudaMemcpyAsync(piece_at(sg->dev, pieces[i]), piece_at(sg->host, pieces[i]),
                                     pieces[i].bytes, cudaMemcpyHostToDevice, sg->q->results);
}

/* On the proxy thread: the host collective on pinned stand-ins for the
 * device buffers, each slice's inputs copied in just before the engine
 * needs them and its results copied out as soon as it is done. An average
 * is divided after the engine, so its results go back whole. */
static tutti_status_t run_staged(tutti_comm_t comm, tt_device_queue_t *q, const tt_call_t *c, tt_call_t *host,
                                 uint64_t seq, const char *name)
{
    int divides = c->op == TUTTI_AVG && c->out_bytes && c->coll != TT_COLL_BROADCAST;
    staging_t sg = {.comm = comm, .q = q, .name = name, .dev = c, .host = host};
    tt_stage_hooks_t hooks = {.fetch_bufs = (c->send_on_device ? 1u << TT_BUF_INPUT : 0) |
                                            (c->in_place && c->recv_on_device ? 1u << TT_BUF_OUTPUT : 0),
                              .deliver_bufs = c->recv_on_device && !divides ? 1u << TT_BUF_OUTPUT : 0,
                              .fetch = fetch_slice,
                              .fetched = slice_fetched,
                              .deliver = deliver_slice,
                              .arg = &sg};
    host->stage = &hooks;
    tutti_status_t st = tt_coll_run_at(comm, host, seq, NULL, NULL);
    /* Fetches the engine did not wait for still write the staging. */
    cudaError_t e = cudaStreamSynchronize(q->copies);
    if (!e)
        e = cudaStreamSynchronize(q->results);
    if (st)
        return st;
    if (!e)
        e = sg.failed;
    if (!e && c->recv_on_device && !hooks.deliver_bufs) {
        e = cudaMemcpyAsync(c->recv, host->recv, c->out_bytes, cudaMemcpyHostToDevice, q->results);
        if (!e)
            e = cudaStreamSynchronize(q->results);
    }
    return e ? tt_device_error(comm, name, "copying between the device buffers and the staging", e)
             : TUTTI_SUCCESS;
}

/* The compressed all-reduce on staged copies: its CPU code reads the whole
 * input at once, so the copies are whole too. */
static tutti_status_t run_compressed_staged(tutti_comm_t comm, tt_device_queue_t *q, const op_t *op,
                                            tt_call_t *host, const char *name)
{
    const tt_call_t *c = &op->call;
    cudaError_t e = cudaSuccess;
    if (c->send_on_device)
        e = cudaMemcpyAsync((void *)host->send, c->send, c->in_bytes, cudaMemcpyDeviceToHost, q->copies);
    if (!e)
        e = cudaStreamSynchronize(q->copies);
    if (e)
        return tt_device_error(comm, name, "copying sendbuf to the host", e);
    TT_TRY(tt_coll_run_compressed(comm, host, &op->how, op->ef));
    if (c->recv_on_device) {
        e = cudaMemcpyAsync(c->recv, host->recv, c->out_bytes, cudaMemcpyHostToDevice, q->copies);
        if (!e)
            e = cudaStreamSynchronize(q->copies);
        if (e)
            return tt_device_error(comm, name, "copying the results to recvbuf", e);
    }
    return TUTTI_SUCCESS;
}

/* A plain collective: directly on the device buffers when every rank
 * can, else staged. */
static tutti_status_t run_plain(tutti_comm_t comm, tt_device_queue_t *q, const op_t *op, tt_call_t *host,
                                const char *name)
{
    const tt_call_t *c = &op->call;
    uint64_t seq;
    int direct;
    TT_TRY(tt_coll_begin(comm, c, op->direct_ok, &seq, &direct));
    if (!direct)
        return run_staged(comm, q, c, host, seq, name);
    /* The direct run's kernels go on the layer's own stream: wait here
     * for the caller's stream to have made the inputs. */
    cudaError_t e = cudaEventSynchronize(op->inputs_ready);
    if (e)
        return tt_device_error(comm, name, "waiting for the inputs", e);
    return tt_direct_run(comm, c, seq);
}

/* On the proxy thread, once the call's inputs are ready on the caller's
 * stream. A failure goes to the communicator: nobody waits for this call's
 * status, so the next call reports it. */
static void run_op(tutti_comm_t comm, tt_device_queue_t *q, const op_t *op)
{
    const tt_call_t *c = &op->call;
    const char *name = op->compressed ? "tutti_allreduce_compressed" : tt_coll_name(c->coll);
    cudaError_t e = cudaStreamWaitEvent(q->copies, op->inputs_ready, 0);
    if (!e)
        e = cudaStreamWaitEvent(q->results, op->inputs_ready, 0);
    if (e) {
        tt_comm_fail(comm, tt_device_error(comm, name, "waiting for the inputs", e));
        return;
    }
    tutti_status_t st;
    if (op->on_gpu) {
        st = tt_device_run_compressed(comm, c, &op->how, op->ef, q->work_dev, q->work_host, q->copies);
    } else {
        tt_call_t host = *c;
        if (c->send_on_device)
            host.send = (char *)q->stage + op->layout.send_off;
        if (c->recv_on_device)
            host.recv = (char *)q->stage + op->layout.recv_off;
        st = op->compressed ? run_compressed_staged(comm, q, op, &host, name)
                            : run_plain(comm, q, op, &host, name);
    }
    if (st)
        tt_comm_fail(comm, st);
}

static void *proxy_main(void *arg)
{
    tutti_comm_t comm = arg;
    tt_device_queue_t *q = comm->device;
    cudaSetDevice(q->device);
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->head && !q->stopping)
            pthread_cond_wait(&q->changed, &q->lock);
        op_t *op = q->head;
        if (!op)
            break; /* stopping, and nothing left */
        q->head = op->next;
        if (!q->head)
            q->tail = NULL;
        q->running = 1;
        pthread_mutex_unlock(&q->lock);
        run_op(comm, q, op);
        /* Release the caller's stream even after a failure: a stream held
         * forever would hang the GPU; the error goes to the next call. */
        __atomic_store_n(q->done, op->ticket, __ATOMIC_RELEASE);
        cudaEventDestroy(op->inputs_ready);
        free(op);
        pthread_mutex_lock(&q->lock);
        q->running = 0;
        pthread_cond_broadcast(&q->changed);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static tutti_status_t queue_start(tutti_comm_t comm, int device, const char *name)
{
    tt_device_queue_t *q = calloc(1, sizeof *q);
    if (!q)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory for the device queue", name);
    q->device = device;
    cudaError_t e =
        cudaHostAlloc((void **)&q->done, sizeof *q->done, cudaHostAllocMapped | cudaHostAllocPortable);
    if (!e)
        e = cudaHostGetDevicePointer((void **)&q->done_dev, q->done, 0);
    if (!e)
        e = cudaStreamCreateWithFlags(&q->copies, cudaStreamNonBlocking);
    if (!e && (e = cudaStreamCreateWithFlags(&q->results, cudaStreamNonBlocking)) != cudaSuccess)
        cudaStreamDestroy(q->copies);
    if (e) {
        tutti_status_t st = tt_device_error(comm, name, "setting up the device queue", e);
        if (q->done)
            cudaFreeHost(q->done);
        free(q);
        return st;
    }
    *q->done = 0;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->changed, NULL);
    comm->device = q;
    if (pthread_create(&q->thread, NULL, proxy_main, comm)) {
        comm->device = NULL;
        cudaStreamDestroy(q->copies);
        cudaStreamDestroy(q->results);
        cudaFreeHost(q->done);
        free(q);
        return tt_comm_error(comm, TUTTI_ERR_SYSTEM, "%s: could not start the device proxy thread", name);
    }
    return TUTTI_SUCCESS;
}

/* With q->lock held: waits until the proxy is idle, then regrows *buf
 * (pinned host memory, or GPU memory when on_gpu) to at least want bytes.
 * Only a call larger than every earlier one waits here; the proxy itself
 * never allocates, since freeing could wait for the streams held for it. */
static tutti_status_t grow(tutti_comm_t comm, tt_device_queue_t *q, void **buf, size_t *have, size_t want,
                           int on_gpu, const char *name)
{
    if (want <= *have)
        return TUTTI_SUCCESS;
    while (q->head || q->running)
        pthread_cond_wait(&q->changed, &q->lock);
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
                comm, name, on_gpu ? "allocating working memory on the GPU" : "allocating pinned staging", e);
        cudaGetLastError();
        bytes = want; /* no room to spare: exactly what this call needs */
    }
    *have = bytes;
    return TUTTI_SUCCESS;
}

int tt_device_supported(char *why, size_t whylen)
{
    return tt_cuda_usable(why, whylen);
}

tutti_status_t tt_device_enqueue(tutti_comm_t comm, const tt_call_t *c, const tutti_compress_t *how,
                                 tutti_ef_state_t ef, void *stream)
{
    const char *name = how ? "tutti_allreduce_compressed" : tt_coll_name(c->coll);
    struct cudaPointerAttributes attr;
    cudaError_t e = cudaPointerGetAttributes(&attr, c->send_on_device ? c->send : c->recv);
    if (e)
        return tt_device_error(comm, name, "asking where the buffer lives", e);
    if (!comm->device)
        TT_TRY(queue_start(comm, attr.device, name));
    tt_device_queue_t *q = comm->device;
    if (attr.device != q->device)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                             "%s: the buffers are on GPU %d, but this communicator's device calls use GPU %d",
                             name, attr.device, q->device);
    op_t *op = calloc(1, sizeof *op);
    if (!op)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue the call", name);
    op->call = *c;
    if (how) {
        op->compressed = 1;
        op->how = *how;
        op->ef = ef;
    }
    op->on_gpu = how && tt_device_compressed_on_gpu(c, how);
    /* Direct runs need every buffer the call uses on the GPU; the first
     * such call publishes this rank's cuda_ipc FIFO. */
    op->direct_ok = !how && (!c->in_bytes || c->send_on_device) && (!c->out_bytes || c->recv_on_device) &&
                    tt_direct_prepare(comm, q->device);
    size_t work_dev = 0, work_host = 0;
    if (op->on_gpu)
        tt_device_compressed_needs(comm, c, how, &work_dev, &work_host);
    else
        op->layout = stage_layout(c);
    tutti_status_t st = op->on_gpu && ef ? tt_ef_prepare_device(comm, ef, q->device) : TUTTI_SUCCESS;
    pthread_mutex_lock(&q->lock);
    if (!st)
        st = grow(comm, q, &q->stage, &q->stage_bytes, op->layout.bytes, 0, name);
    if (!st)
        st = grow(comm, q, &q->work_dev, &q->work_dev_bytes, work_dev, 1, name);
    if (!st)
        st = grow(comm, q, &q->work_host, &q->work_host_bytes, work_host, 0, name);
    if (!st) {
        /* Event, then the kernel that holds the stream, then the queue:
         * the proxy can only start once both are on the stream. */
        e = cudaEventCreateWithFlags(&op->inputs_ready, cudaEventDisableTiming);
        if (!e && (e = cudaEventRecord(op->inputs_ready, (cudaStream_t)stream)) != cudaSuccess)
            cudaEventDestroy(op->inputs_ready);
        op->ticket = q->issued + 1;
        if (!e && (e = (cudaError_t)tt_cuda_wait_ticket(q->done_dev, op->ticket, stream)) != cudaSuccess)
            cudaEventDestroy(op->inputs_ready);
        if (e)
            st = tt_device_error(comm, name, "enqueueing on the stream", e);
    }
    if (!st) {
        q->issued = op->ticket;
        if (q->tail)
            q->tail->next = op;
        else
            q->head = op;
        q->tail = op;
        pthread_cond_broadcast(&q->changed);
    }
    pthread_mutex_unlock(&q->lock);
    if (st)
        free(op);
    return st;
}

tutti_status_t tt_device_drain(tutti_comm_t comm)
{
    tt_device_queue_t *q = comm->device;
    if (!q)
        return TUTTI_SUCCESS;
    pthread_mutex_lock(&q->lock);
    while (q->head || q->running)
        pthread_cond_wait(&q->changed, &q->lock);
    pthread_mutex_unlock(&q->lock);
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

void tt_device_free(tutti_comm_t comm)
{
    tt_device_queue_t *q = comm->device;
    if (!q)
        return;
    pthread_mutex_lock(&q->lock);
    q->stopping = 1;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL); /* the proxy finishes what is queued first */
    cudaStreamDestroy(q->copies);
    cudaStreamDestroy(q->results);
    for (int i = 0; i < q->nfetched; i++)
        cudaEventDestroy(q->fetched[i]);
    free(q->fetched);
    if (q->stage)
        cudaFreeHost(q->stage);
    if (q->work_host)
        cudaFreeHost(q->work_host);
    if (q->work_dev)
        cudaFree(q->work_dev);
    cudaFreeHost(q->done);
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->lock);
    free(q);
    comm->device = NULL;
}

#else /* no CUDA: every buffer is host memory, and streams cannot be given */

int tt_device_supported(char *why, size_t whylen)
{
    return tt_cuda_usable(why, whylen);
}

tutti_status_t tt_device_enqueue(tutti_comm_t comm, const tt_call_t *c, const tutti_compress_t *how,
                                 tutti_ef_state_t ef, void *stream)
{
    (void)ef;
    (void)stream;
    return tt_comm_error(comm, TUTTI_ERR_UNSUPPORTED, "%s: this tutti was built without CUDA",
                         how ? "tutti_allreduce_compressed" : tt_coll_name(c->coll));
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

void tt_device_free(tutti_comm_t comm)
{
    (void)comm;
}
#endif
