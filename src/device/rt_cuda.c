/* SPDX-License-Identifier: MIT */
/*
 * The device layer's runtime table on CUDA (rt.h). A gate or signal is a
 * stream memory operation (cuStreamWaitValue32, cuStreamWriteValue32) where
 * the driver has them, else a one-thread kernel (cuda/wait.cu);
 * TUTTI_CUDA_GATE picks, and queue.c says why memory operations come first.
 * The driver functions are reached through the runtime's driver entry
 * points, so libtutti loads, and runs on host buffers, without a driver.
 */
#include <cuda.h> /* types of the driver entry points only: libcuda is not linked */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

#include "core/env_config.h"
#include "core/log.h"
#include "cuda/kernels.h"
#include "device/rt.h"

typedef CUresult (*value32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);

/* A failed call's error, taken off the thread's last-error state: the
 * caller gets it here, and the application's own cudaGetLastError must
 * not report it later as its own. */
static int said(cudaError_t e)
{
    if (e)
        cudaGetLastError();
    return (int)e;
}

static pthread_once_t memops_once = PTHREAD_ONCE_INIT;
static value32_fn wait_value32, write_value32; /* NULL: gates and signals are kernels */
static int memops_forced, memops_dropped;
static int pools = 1; /* stream-ordered allocation works; cleared the first time it does not */

static void find_memops(void)
{
    const char *want = tt_config_str(TT_CFG_CUDA_GATE);
    if (strcmp(want, "kernel") == 0)
        return;
    memops_forced = strcmp(want, "memops") == 0;
    if (!memops_forced && strcmp(want, "auto") != 0)
        TT_WARN(TT_SUB_CONFIG, "TUTTI_CUDA_GATE=%s is not auto, memops or kernel; using auto", want);
    void *w = NULL, *s = NULL;
    enum cudaDriverEntryPointQueryResult qw = cudaDriverEntryPointSymbolNotFound, qs = qw;
    cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &w, 12000, cudaEnableDefault, &qw);
    if (!e)
        e = cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &s, 12000, cudaEnableDefault, &qs);
    if (e || !w || !s || qw != cudaDriverEntryPointSuccess || qs != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        TT_INFO(TT_SUB_COLL,
                "the driver has no stream memory operations: device calls hold streams with a kernel");
        return;
    }
    wait_value32 = (value32_fn)w;
    write_value32 = (value32_fn)s;
    TT_DEBUG(TT_SUB_COLL, "device calls hold streams with stream memory operations");
}

/* Whether this call may use a memory operation; after the driver refused
 * one (a GPU without them), every later call uses the kernel. */
static int use_memops(void)
{
    pthread_once(&memops_once, find_memops);
    return wait_value32 && !__atomic_load_n(&memops_dropped, __ATOMIC_RELAXED);
}

static int memop_result(CUresult r)
{
    if (r == CUDA_ERROR_NOT_SUPPORTED && !memops_forced &&
        !__atomic_exchange_n(&memops_dropped, 1, __ATOMIC_RELAXED))
        TT_INFO(TT_SUB_COLL,
                "this GPU refused a stream memory operation: device calls hold streams with a kernel");
    return (int)r; /* the driver's codes are the runtime's for these calls */
}

static int rt_signal(void *stream, unsigned *dev, unsigned value)
{
    if (use_memops()) {
        CUresult r = write_value32((CUstream)stream, (CUdeviceptr)dev, value, CU_STREAM_WRITE_VALUE_DEFAULT);
        if (r != CUDA_ERROR_NOT_SUPPORTED || memops_forced)
            return memop_result(r);
        memop_result(r);
    } else if (memops_forced) {
        return (int)cudaErrorNotSupported;
    }
    return said((cudaError_t)tt_cuda_signal_ticket(dev, value, stream));
}

static int rt_gate(void *stream, const unsigned *dev, unsigned ticket)
{
    if (use_memops()) {
        CUresult r = wait_value32((CUstream)stream, (CUdeviceptr)dev, ticket, CU_STREAM_WAIT_VALUE_GEQ);
        if (r != CUDA_ERROR_NOT_SUPPORTED || memops_forced)
            return memop_result(r);
        memop_result(r);
    } else if (memops_forced) {
        return (int)cudaErrorNotSupported;
    }
    return said((cudaError_t)tt_cuda_wait_ticket(dev, ticket, stream));
}

static int rt_device_of(const void *ptr, int *device)
{
    struct cudaPointerAttributes attr;
    cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
    if (!e)
        *device = attr.device;
    return said(e);
}

static int rt_enter(int device, int *prev)
{
    cudaError_t e = cudaGetDevice(prev);
    return e ? said(e) : *prev == device ? 0 : said(cudaSetDevice(device));
}

static void rt_leave(int prev)
{
    int now;
    if (cudaGetDevice(&now) == cudaSuccess && now != prev)
        cudaSetDevice(prev);
}

static int rt_preload(void)
{
    return said((cudaError_t)tt_cuda_preload());
}

static int rt_capturing(void *stream, int *yes)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing((cudaStream_t)stream, &st);
    *yes = st != cudaStreamCaptureStatusNone;
    return said(e);
}

static int rt_host_alloc(size_t bytes, void **host, void **dev)
{
    cudaError_t e = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (!e && (e = cudaHostGetDevicePointer(dev, *host, 0)) != cudaSuccess)
        cudaFreeHost(*host);
    return said(e);
}

static void rt_host_free(void *host)
{
    cudaFreeHost(host);
}

static int rt_dev_alloc(size_t bytes, void *stream, void **ptr)
{
    if (__atomic_load_n(&pools, __ATOMIC_RELAXED)) {
        cudaError_t e = cudaMallocAsync(ptr, bytes, (cudaStream_t)stream);
        if (e != cudaErrorNotSupported)
            return said(e);
        cudaGetLastError();
        __atomic_store_n(&pools, 0,
                         __ATOMIC_RELAXED); /* no memory pools: plain allocations, freed at the end */
    }
    return said(cudaMalloc(ptr, bytes));
}

static void rt_dev_free(void *ptr, void *stream)
{
    if (__atomic_load_n(&pools, __ATOMIC_RELAXED))
        cudaFreeAsync(ptr, (cudaStream_t)stream);
    else
        cudaFree(ptr);
}

static int rt_stream_create(void **stream)
{
    return said(cudaStreamCreateWithFlags((cudaStream_t *)stream, cudaStreamNonBlocking));
}

static void rt_stream_destroy(void *stream)
{
    cudaStreamDestroy((cudaStream_t)stream);
}

static int rt_stream_sync(void *stream)
{
    return said(cudaStreamSynchronize((cudaStream_t)stream));
}

static int rt_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    return said(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
}

static int rt_event_create(void **event)
{
    return said(cudaEventCreateWithFlags((cudaEvent_t *)event, cudaEventDisableTiming));
}

static void rt_event_destroy(void *event)
{
    cudaEventDestroy((cudaEvent_t)event);
}

static int rt_event_record(void *event, void *stream)
{
    return said(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
}

static int rt_event_query(void *event, int *done)
{
    cudaError_t e = cudaEventQuery((cudaEvent_t)event);
    *done = e == cudaSuccess;
    if (e == cudaErrorNotReady) {
        cudaGetLastError(); /* "not yet" is no error to report to anyone later */
        return 0;
    }
    return said(e);
}

static int rt_event_sync(void *event)
{
    return said(cudaEventSynchronize((cudaEvent_t)event));
}

static int rt_stream_wait(void *stream, void *event)
{
    return said(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
}

/* Named when it is reported (tt_device_error): callers that made the
 * failed runtime call themselves (the NCCL layer) rely on this to take it
 * off the thread's last-error state, as the calls above do. */
static const char *rt_error(int code)
{
    cudaGetLastError();
    return cudaGetErrorString((cudaError_t)code);
}

static int rt_out_of_memory(int code)
{
    return code == cudaErrorMemoryAllocation;
}

const tt_device_rt_t tt_device_cuda_rt = {
    .name = "cuda",
    .device_of = rt_device_of,
    .enter = rt_enter,
    .leave = rt_leave,
    .preload = rt_preload,
    .capturing = rt_capturing,
    .host_alloc = rt_host_alloc,
    .host_free = rt_host_free,
    .dev_alloc = rt_dev_alloc,
    .dev_free = rt_dev_free,
    .stream_create = rt_stream_create,
    .stream_destroy = rt_stream_destroy,
    .stream_sync = rt_stream_sync,
    .copy = rt_copy,
    .signal = rt_signal,
    .gate = rt_gate,
    .event_create = rt_event_create,
    .event_destroy = rt_event_destroy,
    .event_record = rt_event_record,
    .event_query = rt_event_query,
    .event_sync = rt_event_sync,
    .stream_wait = rt_stream_wait,
    .error = rt_error,
    .out_of_memory = rt_out_of_memory,
};
