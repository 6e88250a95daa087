/* SPDX-License-Identifier: MIT */
/*
 * The cuda_ipc backend on real GPUs. Every copy and kernel goes on the
 * communicator's own non-blocking stream and is waited for there, so none
 * waits for the caller's streams (which wait for the proxy). The ops the
 * caller's thread runs (set-up, teardown) make the communicator's GPU
 * current only for their duration.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/kernels.h"
#include "core/cuda_why.h"
#include "core/hash.h"
#include "transports/cuda_ipc/cuda_ipc.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == TT_IPC_HANDLE_BYTES, "an IPC handle fills the segment's field");

typedef struct {
    int device;
    cudaStream_t stream;
    void *scratch;
    size_t scratch_bytes;
} cuda_dev_t;

static int enter(int device, int *old)
{
    cudaError_t e = cudaGetDevice(old);
    return e ? (int)e : *old == device ? 0 : (int)cudaSetDevice(device);
}

static void leave(int device, int old)
{
    if (old != device)
        cudaSetDevice(old);
}

/* Waits for what the op enqueued; a launch error comes first. */
static int finish(const cuda_dev_t *d, int launched)
{
    return launched ? launched : (int)cudaStreamSynchronize(d->stream);
}

static int cuda_attach(int device, void **devp)
{
    cuda_dev_t *d = calloc(1, sizeof *d);
    if (!d)
        return (int)cudaErrorMemoryAllocation;
    d->device = device;
    int old, e = enter(device, &old);
    if (!e) {
        e = (int)cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
        leave(device, old);
    }
    if (e) {
        free(d);
        return e;
    }
    *devp = d;
    return 0;
}

static void cuda_detach(void *devp)
{
    cuda_dev_t *d = devp;
    int old;
    if (!enter(d->device, &old)) {
        if (d->scratch)
            cudaFreeAsync(d->scratch, d->stream);
        cudaStreamSynchronize(d->stream);
        cudaStreamDestroy(d->stream);
        leave(d->device, old);
    }
    free(d);
}

static int bus_key(int device, uint64_t *key)
{
    char id[32] = "";
    cudaError_t e = cudaDeviceGetPCIBusId(id, sizeof id, device);
    if (!e) /* the same GPU gives the same id in every process */
        *key = tt_hash(id, strlen(id), TT_HASH_SEED);
    return (int)e;
}

static int cuda_identity(void *devp, uint64_t *self, uint64_t *reach, int *nreach)
{
    cuda_dev_t *d = devp;
    int count = 0, e = bus_key(d->device, self);
    if (!e)
        e = (int)cudaGetDeviceCount(&count);
    *nreach = 0;
    for (int g = 0; !e && g < count && *nreach < TT_IPC_REACH_MAX; g++) {
        int ok = g == d->device;
        if (!ok && cudaDeviceCanAccessPeer(&ok, d->device, g))
            ok = 0;
        if (ok && !(e = bus_key(g, &reach[*nreach])))
            ++*nreach;
    }
    cudaGetLastError();
    return e;
}

static int cuda_usable(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaGetLastError();
    if (e || n == 0)
        tt_cuda_why((int)e, n, why, len); /* as device buffers and the tools say it */
    return !e && n > 0;
}

static int cuda_bus_id(void *devp, char *out, size_t len)
{
    cuda_dev_t *d = devp;
    return (int)cudaDeviceGetPCIBusId(out, (int)len, d->device);
}

static int cuda_fifo_alloc(void *devp, size_t bytes, void **ptr, unsigned char handle[TT_IPC_HANDLE_BYTES])
{
    cuda_dev_t *d = devp;
    int old, e = enter(d->device, &old);
    if (e)
        return e;
    e = (int)cudaMalloc(ptr, bytes);
    if (!e && (e = (int)cudaIpcGetMemHandle((cudaIpcMemHandle_t *)(void *)handle, *ptr)) != 0)
        cudaFree(*ptr);
    leave(d->device, old);
    return e;
}

static void cuda_fifo_free(void *devp, void *ptr, size_t bytes)
{
    (void)bytes;
    cuda_dev_t *d = devp;
    int old;
    if (!enter(d->device, &old)) {
        cudaFree(ptr);
        leave(d->device, old);
    }
}

static int cuda_fifo_open(void *devp, const unsigned char handle[TT_IPC_HANDLE_BYTES], size_t bytes,
                          void **ptr)
{
    (void)devp;
    (void)bytes;
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof h);
    return (int)cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess);
}

static void cuda_fifo_close(void *devp, void *ptr, size_t bytes)
{
    (void)bytes;
    cuda_dev_t *d = devp;
    int old;
    if (!enter(d->device, &old)) {
        cudaIpcCloseMemHandle(ptr);
        leave(d->device, old);
    }
}

/* A FIFO of this process: its address works as it is once this GPU may
 * load from the owner's (peer access, enabled once per pair). */
static int cuda_fifo_share(void *devp, void *ptr, int owner_device, void **out)
{
    cuda_dev_t *d = devp;
    int old, e = 0;
    if (owner_device != d->device && !(e = enter(d->device, &old))) {
        cudaError_t pe = cudaDeviceEnablePeerAccess(owner_device, 0);
        if (pe == cudaErrorPeerAccessAlreadyEnabled) {
            cudaGetLastError(); /* enabled by an earlier communicator: fine */
            pe = cudaSuccess;
        }
        e = (int)pe;
        leave(d->device, old);
    }
    if (!e)
        *out = ptr;
    return e;
}

static int cuda_copy(void *devp, void *dst, const void *src, size_t bytes)
{
    cuda_dev_t *d = devp;
    return finish(d, (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, d->stream));
}

static int cuda_reduce(void *devp, void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                       tutti_op_t op)
{
    cuda_dev_t *d = devp;
    return finish(d, tt_cuda_reduce(dst, a, b, count, dtype, op, d->stream));
}

static int cuda_avg_finish(void *devp, void *buf, size_t count, tutti_dtype_t dtype, int nranks)
{
    cuda_dev_t *d = devp;
    return finish(d, tt_cuda_avg_finish(buf, count, dtype, nranks, d->stream));
}

/* Stream-ordered allocation: it never waits for other streams. */
static int cuda_scratch(void *devp, size_t bytes, void **out)
{
    cuda_dev_t *d = devp;
    if (bytes > d->scratch_bytes) {
        if (d->scratch)
            cudaFreeAsync(d->scratch, d->stream);
        d->scratch = NULL;
        d->scratch_bytes = 0;
        int e = (int)cudaMallocAsync(&d->scratch, bytes, d->stream);
        if (e)
            return e;
        d->scratch_bytes = bytes;
    }
    *out = d->scratch;
    return 0;
}

static const char *cuda_error(int code)
{
    return cudaGetErrorString((cudaError_t)code);
}

const tt_ipc_backend_t tt_ipc_cuda_backend = {
    .name = "cuda",
    .usable = cuda_usable,
    .attach = cuda_attach,
    .detach = cuda_detach,
    .identity = cuda_identity,
    .bus_id = cuda_bus_id,
    .fifo_alloc = cuda_fifo_alloc,
    .fifo_free = cuda_fifo_free,
    .fifo_open = cuda_fifo_open,
    .fifo_close = cuda_fifo_close,
    .fifo_share = cuda_fifo_share,
    .copy = cuda_copy,
    .reduce = cuda_reduce,
    .avg_finish = cuda_avg_finish,
    .scratch = cuda_scratch,
    .error = cuda_error,
};
