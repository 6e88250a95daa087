/* SPDX-License-Identifier: MIT */
/*
 * The cuda_ipc backend on real GPUs: windows allocated and exported as IPC
 * handles, opened or shared by address, segments registered with the GPU.
 * It puts no work on any stream: the device layer puts a direct run's work
 * on the caller's stream. The ops that bind run on the caller's thread with
 * the communicator's GPU current; the ones that release (at teardown, on
 * any thread) make it current themselves.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_why.h"
#include "core/hash.h"
#include "transports/cuda_ipc/cuda_ipc.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == TT_IPC_HANDLE_BYTES, "an IPC handle fills the segment's field");

typedef struct {
    int device;
} cuda_dev_t;

static _Thread_local char said_text[96];

static const char *cuda_said(void)
{
    return said_text;
}

/* A call of ours: a failure is taken off the thread's last-error state,
 * said() keeps its words (core/cuda_why.h). */
static tutti_status_t failed(cudaError_t e)
{
    return e ? tt_cuda_failed((int)e, said_text, sizeof said_text) : TUTTI_SUCCESS;
}

/* For the releasing ops: dev's GPU current for their duration. */
static tutti_status_t enter(const cuda_dev_t *d, int *old)
{
    cudaError_t e = cudaGetDevice(old);
    return failed(e ? e : *old == d->device ? cudaSuccess : cudaSetDevice(d->device));
}

static void leave(const cuda_dev_t *d, int old)
{
    if (old != d->device)
        cudaSetDevice(old);
}

static tutti_status_t cuda_attach(int device, void **devp)
{
    cuda_dev_t *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(said_text, sizeof said_text, "no memory");
        return TUTTI_ERR_NO_MEMORY;
    }
    d->device = device;
    *devp = d;
    return TUTTI_SUCCESS;
}

static void cuda_detach(void *devp)
{
    free(devp);
}

static cudaError_t bus_key(int device, uint64_t *key)
{
    char id[32] = "";
    cudaError_t e = cudaDeviceGetPCIBusId(id, sizeof id, device);
    if (!e) /* the same GPU gives the same id in every process */
        *key = tt_hash(id, strlen(id), TT_HASH_SEED);
    return e;
}

static tutti_status_t cuda_identity(void *devp, uint64_t *self, uint64_t *reach, int *nreach)
{
    cuda_dev_t *d = devp;
    int count = 0;
    cudaError_t e = bus_key(d->device, self);
    if (!e)
        e = cudaGetDeviceCount(&count);
    *nreach = 0;
    for (int g = 0; !e && g < count && *nreach < TT_IPC_REACH_MAX; g++) {
        int ok = g == d->device;
        if (!ok && cudaDeviceCanAccessPeer(&ok, d->device, g) != cudaSuccess) {
            cudaGetLastError();
            ok = 0;
        }
        if (ok && !(e = bus_key(g, &reach[*nreach])))
            ++*nreach;
    }
    return failed(e);
}

static tutti_status_t cuda_usable(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaGetLastError();
    if (!e && n > 0)
        return TUTTI_SUCCESS;
    tt_cuda_why((int)e, n, why, len); /* as device buffers and the tools say it */
    return TUTTI_ERR_UNSUPPORTED;
}

static tutti_status_t cuda_window_alloc(void *devp, size_t bytes, void **ptr,
                                        unsigned char handle[TT_IPC_HANDLE_BYTES])
{
    (void)devp;
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (!e && (e = cudaIpcGetMemHandle((cudaIpcMemHandle_t *)(void *)handle, *ptr)) != cudaSuccess)
        cudaFree(*ptr);
    return failed(e);
}

static void cuda_window_free(void *devp, void *ptr, size_t bytes)
{
    (void)bytes;
    int old;
    if (!enter(devp, &old)) {
        cudaFree(ptr);
        leave(devp, old);
    }
}

static tutti_status_t cuda_window_open(void *devp, const unsigned char handle[TT_IPC_HANDLE_BYTES],
                                       size_t bytes, void **ptr)
{
    (void)devp;
    (void)bytes;
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof h);
    return failed(cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess));
}

static void cuda_window_close(void *devp, void *ptr, size_t bytes)
{
    (void)bytes;
    int old;
    if (!enter(devp, &old)) {
        cudaIpcCloseMemHandle(ptr);
        leave(devp, old);
    }
}

/* A window of this process: its address works as it is once this GPU may
 * load from the owner's (peer access, enabled once per pair). */
static tutti_status_t cuda_window_share(void *devp, void *ptr, int owner_device, void **out)
{
    cuda_dev_t *d = devp;
    cudaError_t e = cudaSuccess;
    if (owner_device != d->device) {
        e = cudaDeviceEnablePeerAccess(owner_device, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
            cudaGetLastError(); /* enabled by an earlier communicator: fine */
            e = cudaSuccess;
        }
    }
    if (!e)
        *out = ptr;
    return failed(e);
}

/* Portable: the registration serves every GPU of the process; mapped: the
 * GPU's stream operations store into and wait on the words. */
static tutti_status_t cuda_host_register(void *devp, void *ptr, size_t bytes, void **devptr)
{
    (void)devp;
    cudaError_t e = cudaHostRegister(ptr, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (!e && (e = cudaHostGetDevicePointer(devptr, ptr, 0)) != cudaSuccess)
        cudaHostUnregister(ptr);
    return failed(e);
}

static void cuda_host_unregister(void *devp, void *ptr)
{
    int old;
    if (!enter(devp, &old)) {
        cudaHostUnregister(ptr);
        leave(devp, old);
    }
}

const tt_cuda_ipc_backend_t tt_cuda_ipc_runtime_backend = {
    .name = "cuda",
    .usable = cuda_usable,
    .attach = cuda_attach,
    .detach = cuda_detach,
    .identity = cuda_identity,
    .window_alloc = cuda_window_alloc,
    .window_free = cuda_window_free,
    .window_open = cuda_window_open,
    .window_close = cuda_window_close,
    .window_share = cuda_window_share,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .said = cuda_said,
};
