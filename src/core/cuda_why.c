/* SPDX-License-Identifier: MIT */
/* Why no GPU is usable, from the CUDA runtime's answer (core/cuda_why.h). */
#include <stdio.h>

#include "core/cuda_why.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>

/* Whether the driver's library can be loaded at all. */
static int driver_installed(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
}

void tt_cuda_why(int err, int ndevices, char *why, size_t len)
{
    cudaError_t e = (cudaError_t)err;
    int driver = 0, runtime = 0;
    if (e == cudaErrorInsufficientDriver && !driver_installed())
        snprintf(why, len, "no NVIDIA driver or GPU found (libcuda.so.1 is not installed)");
    else if (e == cudaErrorInsufficientDriver && !cudaDriverGetVersion(&driver) &&
             !cudaRuntimeGetVersion(&runtime))
        snprintf(why, len, "the NVIDIA driver supports CUDA %d.%d, older than this build's runtime %d.%d",
                 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    else if (e == cudaErrorNoDevice || (e == cudaSuccess && ndevices == 0))
        snprintf(why, len, "no NVIDIA GPU found (the driver sees none)");
    else
        snprintf(why, len, "no usable GPU: %s", cudaGetErrorString(e));
}

tutti_status_t tt_cuda_failed(int err, char *said, size_t len)
{
    cudaError_t e = (cudaError_t)err;
    cudaGetLastError();
    snprintf(said, len, "%s", cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? TUTTI_ERR_NO_MEMORY
           : e == cudaErrorNotSupported   ? TUTTI_ERR_UNSUPPORTED
                                          : TUTTI_ERR_SYSTEM;
}
#else
void tt_cuda_why(int err, int ndevices, char *why, size_t len)
{
    (void)err;
    (void)ndevices;
    snprintf(why, len, "this tutti was built without CUDA");
}

tutti_status_t tt_cuda_failed(int err, char *said, size_t len)
{
    snprintf(said, len, "CUDA error %d in a build without CUDA", err);
    return TUTTI_ERR_SYSTEM;
}
#endif
