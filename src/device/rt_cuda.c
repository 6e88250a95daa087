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
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/cuda_why.h"
#include "core/env_config.h"
#include "core/log.h"
#include "cuda/kernels.h"
#include "device/rt.h"

typedef CUresult (*value32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);

static _Thread_local char said_text[96]; /* the runtime's words for this thread's last failure */

static const char *rt_said(void)
{
    return said_text;
}

/* A call of ours: a failure is taken off the thread's last-error state,
 * said() keeps its words (core/cuda_why.h). */
static tutti_status_t failed(cudaError_t e)
{
    return e ? tt_cuda_failed((int)e, said_text, sizeof said_text) : TUTTI_SUCCESS;
}

/* ---- whether a GPU is there, asked once ---- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int devices; /* a device answered */
static char no_device[160];

static void probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    devices = e == cudaSuccess && n > 0;
    if (!devices)
        tt_cuda_why((int)e, n, no_device, sizeof no_device);
    cudaGetLastError(); /* the runtime keeps the failure otherwise */
}

static tutti_status_t rt_usable(char *why, size_t len)
{
    pthread_once(&probe_once, probe);
    if (devices)
        return TUTTI_SUCCESS;
    snprintf(why, len, "%s", no_device);
    return TUTTI_ERR_UNSUPPORTED;
}

static tutti_status_t rt_device_of(const void *ptr, int *device)
{
    *device = -1;
    pthread_once(&probe_once, probe);
    if (!ptr || !devices)
        return TUTTI_SUCCESS; /* no GPU: everything is host memory */
    struct cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        cudaGetLastError(); /* memory the runtime never saw: the host's */
        return TUTTI_SUCCESS;
    }
    if (attr.type == cudaMemoryTypeDevice)
        *device = attr.device;
    return TUTTI_SUCCESS;
}

/* ---- gates and signals ---- */

static pthread_once_t memops_once = PTHREAD_ONCE_INIT;
static value32_fn wait_value32, write_value32; /* NULL: gates and signals are kernels */
static int memops_forced;
static atomic_int memops_dropped;

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
    return wait_value32 && !atomic_load_explicit(&memops_dropped, memory_order_relaxed);
}

/* A memory operation's result; 1 when the kernel should do it instead. */
static int memop_refused(CUresult r, tutti_status_t *st)
{
    if (r == CUDA_ERROR_NOT_SUPPORTED && !memops_forced) {
        if (!atomic_exchange_explicit(&memops_dropped, 1, memory_order_relaxed))
            TT_INFO(TT_SUB_COLL,
                    "this GPU refused a stream memory operation: device calls hold streams with a kernel");
        return 1;
    }
    *st = TUTTI_SUCCESS;
    if (r != CUDA_SUCCESS) { /* the driver's result: nothing on the runtime's last-error state */
        snprintf(said_text, sizeof said_text, "the driver refused a stream memory operation (CUresult %d)",
                 (int)r);
        *st = TUTTI_ERR_SYSTEM;
    }
    return 0;
}

static tutti_status_t rt_signal(void *stream, unsigned *dev, unsigned value)
{
    tutti_status_t st;
    if (use_memops() &&
        !memop_refused(
            write_value32((CUstream)stream, (CUdeviceptr)dev, value, CU_STREAM_WRITE_VALUE_DEFAULT), &st))
        return st;
    if (memops_forced)
        return failed(cudaErrorNotSupported);
    return failed((cudaError_t)tt_cuda_signal_ticket(dev, value, stream));
}

static tutti_status_t rt_gate(void *stream, const unsigned *dev, unsigned value)
{
    tutti_status_t st;
    if (use_memops() &&
        !memop_refused(wait_value32((CUstream)stream, (CUdeviceptr)dev, value, CU_STREAM_WAIT_VALUE_GEQ),
                       &st))
        return st;
    if (memops_forced)
        return failed(cudaErrorNotSupported);
    return failed((cudaError_t)tt_cuda_wait_ticket(dev, value, stream));
}

/* ---- the rest of the table ---- */

static tutti_status_t rt_enter(int device, int *prev)
{
    cudaError_t e = cudaGetDevice(prev);
    return e ? failed(e) : *prev == device ? TUTTI_SUCCESS : failed(cudaSetDevice(device));
}

static void rt_leave(int prev)
{
    int now;
    if (cudaGetDevice(&now) == cudaSuccess && now != prev)
        cudaSetDevice(prev);
}

static tutti_status_t rt_relax(int *prev)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t e = cudaThreadExchangeStreamCaptureMode(&mode);
    *prev = (int)mode;
    return failed(e);
}

static void rt_unrelax(int prev)
{
    enum cudaStreamCaptureMode mode = (enum cudaStreamCaptureMode)prev;
    cudaThreadExchangeStreamCaptureMode(&mode);
}

static tutti_status_t rt_preload(void)
{
    return failed((cudaError_t)tt_cuda_preload());
}

static tutti_status_t rt_capturing(void *stream, int *yes)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing((cudaStream_t)stream, &st);
    *yes = st != cudaStreamCaptureStatusNone;
    return failed(e);
}

static tutti_status_t rt_host_alloc(size_t bytes, void **host, void **dev)
{
    cudaError_t e = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (!e && (e = cudaHostGetDevicePointer(dev, *host, 0)) != cudaSuccess)
        cudaFreeHost(*host);
    return failed(e);
}

static void rt_host_free(void *host)
{
    cudaFreeHost(host);
}

static atomic_int no_pools; /* set the first time stream-ordered allocation is refused */

static tutti_status_t rt_dev_alloc(size_t bytes, void *stream, void **ptr)
{
    if (!atomic_load_explicit(&no_pools, memory_order_relaxed)) {
        cudaError_t e = cudaMallocAsync(ptr, bytes, (cudaStream_t)stream);
        if (e != cudaErrorNotSupported)
            return failed(e);
        cudaGetLastError();
        atomic_store_explicit(&no_pools, 1, memory_order_relaxed); /* plain allocations from now on */
    }
    return failed(cudaMalloc(ptr, bytes));
}

static void rt_dev_free(void *ptr, void *stream)
{
    if (!atomic_load_explicit(&no_pools, memory_order_relaxed))
        cudaFreeAsync(ptr, (cudaStream_t)stream);
    else
        cudaFree(ptr);
}

static tutti_status_t rt_stream_sync(void *stream)
{
    return failed(cudaStreamSynchronize((cudaStream_t)stream));
}

static tutti_status_t rt_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    return failed(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
}

static tutti_status_t rt_reduce(void *dst, const void *a, const void *b, size_t n, tutti_dtype_t dtype,
                                tutti_op_t op, void *stream)
{
    return failed((cudaError_t)tt_cuda_reduce(dst, a, b, n, dtype, op, stream));
}

static tutti_status_t rt_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks, void *stream)
{
    return failed((cudaError_t)tt_cuda_avg_finish(buf, n, dtype, nranks, stream));
}

static tutti_status_t rt_scale(void *dst, const void *src, size_t n, tutti_dtype_t dtype, const void *k_dev,
                               const void *k_host, void *stream)
{
    return failed((cudaError_t)tt_cuda_scale(dst, src, n, dtype, k_dev, k_host, stream));
}

static tutti_status_t rt_event_create(void **event)
{
    return failed(cudaEventCreateWithFlags((cudaEvent_t *)event, cudaEventDisableTiming));
}

static void rt_event_destroy(void *event)
{
    cudaEventDestroy((cudaEvent_t)event);
}

static tutti_status_t rt_event_record(void *event, void *stream)
{
    return failed(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
}

static tutti_status_t rt_event_query(void *event, int *done)
{
    cudaError_t e = cudaEventQuery((cudaEvent_t)event);
    *done = e == cudaSuccess;
    if (e == cudaErrorNotReady) {
        cudaGetLastError(); /* "not yet" is no error to report to anyone later */
        return TUTTI_SUCCESS;
    }
    return failed(e);
}

static tutti_status_t rt_event_sync(void *event)
{
    return failed(cudaEventSynchronize((cudaEvent_t)event));
}

static tutti_status_t rt_stream_wait(void *stream, void *event)
{
    return failed(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
}

const tt_device_rt_t tt_device_cuda_rt = {
    .name = "cuda",
    .usable = rt_usable,
    .device_of = rt_device_of,
    .enter = rt_enter,
    .leave = rt_leave,
    .relax = rt_relax,
    .unrelax = rt_unrelax,
    .preload = rt_preload,
    .capturing = rt_capturing,
    .host_alloc = rt_host_alloc,
    .host_free = rt_host_free,
    .dev_alloc = rt_dev_alloc,
    .dev_free = rt_dev_free,
    .stream_sync = rt_stream_sync,
    .copy = rt_copy,
    .signal = rt_signal,
    .gate = rt_gate,
    .reduce = rt_reduce,
    .avg_finish = rt_avg_finish,
    .scale = rt_scale,
    .event_create = rt_event_create,
    .event_destroy = rt_event_destroy,
    .event_record = rt_event_record,
    .event_query = rt_event_query,
    .event_sync = rt_event_sync,
    .stream_wait = rt_stream_wait,
    .said = rt_said,
};
