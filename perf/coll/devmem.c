/* SPDX-License-Identifier: MIT */
/* GPU buffers for the benchmarks (tutti-perf -m device): allocation and copies, or a clear "no GPU". */
#include <stdio.h>

#include "devmem.h"
#include "device/memkind.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>

int devmem_open(int rank, void **stream, char *why, size_t whylen)
{
    int n = 0;
    if (tt_device_usable(why, whylen) != TUTTI_SUCCESS)
        return -1;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (!e && n == 0)
        e = cudaErrorNoDevice;
    if (!e)
        e = cudaSetDevice(rank % n);
    if (!e)
        e = cudaStreamCreateWithFlags((cudaStream_t *)stream, cudaStreamNonBlocking);
    if (e) {
        snprintf(why, whylen, "no usable GPU: %s", cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

void *devmem_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMalloc(&p, bytes ? bytes : 1) == cudaSuccess ? p : NULL;
}

void devmem_free(void *p)
{
    cudaFree(p);
}

int devmem_to_device(void *dst, const void *src, size_t bytes, void *stream)
{
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream) ? -1 : 0;
}

int devmem_to_host(void *dst, const void *src, size_t bytes, void *stream)
{
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream) ? -1 : 0;
}

int devmem_sync(void *stream)
{
    return cudaStreamSynchronize((cudaStream_t)stream) ? -1 : 0;
}

void devmem_close(void *stream)
{
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
}

void devmem_describe(char *out, size_t len)
{
    int dev = 0;
    char bus[32] = "?";
    struct cudaDeviceProp prop;
    if (cudaGetDevice(&dev) || cudaGetDeviceProperties(&prop, dev)) {
        snprintf(out, len, "a GPU CUDA cannot describe");
        return;
    }
    cudaDeviceGetPCIBusId(bus, sizeof bus, dev);
    snprintf(out, len, "device %2d [%s] %s", dev, bus, prop.name);
}
#else
int devmem_open(int rank, void **stream, char *why, size_t whylen)
{
    (void)rank;
    *stream = NULL;
    snprintf(why, whylen, "this tutti was built without CUDA");
    return -1;
}

void *devmem_alloc(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void devmem_free(void *p)
{
    (void)p;
}

int devmem_to_device(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)dst, (void)src, (void)bytes, (void)stream;
    return -1;
}

int devmem_to_host(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)dst, (void)src, (void)bytes, (void)stream;
    return -1;
}

int devmem_sync(void *stream)
{
    (void)stream;
    return 0;
}

void devmem_close(void *stream)
{
    (void)stream;
}

void devmem_describe(char *out, size_t len)
{
    snprintf(out, len, "no GPU (built without CUDA)");
}
#endif
