/* SPDX-License-Identifier: MIT */
/*
 * ncclMemAlloc/ncclMemFree (GPU memory; page-aligned host memory where no
 * GPU can be used, since tutti takes host buffers) and buffer registration,
 * which tutti does not need: ncclCommRegister hands out a handle and says,
 * once, that it changes nothing.
 */
#include <stdlib.h>

#include "core/log.h"
#include "device/memkind.h"
#include "nccl/nccl_int.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define PAGE 4096
#define REG_MAGIC 0x74726567u /* "treg" */

/* The host blocks ncclMemAlloc handed out, so ncclMemFree knows them. */
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static void **blocks;
static size_t nblocks, blocks_cap;

static int remember(void *p)
{
    pthread_mutex_lock(&blocks_lock);
    int ok = 1;
    if (nblocks == blocks_cap) {
        size_t cap = blocks_cap ? 2 * blocks_cap : 64;
        void **grown = realloc(blocks, cap * sizeof *grown);
        ok = grown != NULL;
        if (ok) {
            blocks = grown;
            blocks_cap = cap;
        }
    }
    if (ok)
        blocks[nblocks++] = p;
    pthread_mutex_unlock(&blocks_lock);
    return ok;
}

static int forget(void *p)
{
    pthread_mutex_lock(&blocks_lock);
    int found = 0;
    for (size_t i = 0; i < nblocks && !found; i++)
        if (blocks[i] == p) {
            blocks[i] = blocks[--nblocks];
            found = 1;
        }
    pthread_mutex_unlock(&blocks_lock);
    return found;
}

TT_NCCL_EXPORT ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
    tt_nccl_once();
    char why[160];
    if (!ptr)
        return tt_nccl_error(NULL, ncclInvalidArgument, "ncclMemAlloc: ptr: NULL pointer");
    *ptr = NULL;
    if (tt_device_usable(why, sizeof why) == TUTTI_SUCCESS) {
#ifdef TT_HAVE_CUDA
        cudaError_t e = cudaMalloc(ptr, size ? size : 1);
        if (e)
            return tt_nccl_error(NULL,
                                 e == cudaErrorMemoryAllocation ? ncclSystemError : ncclUnhandledCudaError,
                                 "ncclMemAlloc: %zu bytes on the GPU: %s", size, cudaGetErrorString(e));
        return ncclSuccess;
#endif
    }
    size_t bytes = (size + PAGE - 1) / PAGE * PAGE;
    void *p = aligned_alloc(PAGE, bytes ? bytes : PAGE);
    if (!p || !remember(p)) {
        free(p);
        return tt_nccl_error(NULL, ncclSystemError, "ncclMemAlloc: no memory for %zu bytes", size);
    }
    *ptr = p;
    return ncclSuccess;
}
TT_NCCL_ALIAS(ncclMemAlloc)

TT_NCCL_EXPORT ncclResult_t pncclMemFree(void *ptr)
{
    tt_nccl_once();
    if (!ptr)
        return ncclSuccess;
    if (forget(ptr)) {
        free(ptr);
        return ncclSuccess;
    }
#ifdef TT_HAVE_CUDA
    if (tt_mem_kind(ptr) == TT_MEM_DEVICE) {
        cudaError_t e = cudaFree(ptr);
        return e ? tt_nccl_error(NULL, ncclUnhandledCudaError, "ncclMemFree: %s", cudaGetErrorString(e))
                 : ncclSuccess;
    }
#endif
    return tt_nccl_error(NULL, ncclInvalidArgument, "ncclMemFree: %p was not allocated by ncclMemAlloc", ptr);
}
TT_NCCL_ALIAS(ncclMemFree)

typedef struct {
    unsigned magic;
    ncclComm_t comm;
} registration_t;

TT_NCCL_EXPORT ncclResult_t pncclCommRegister(const ncclComm_t ncomm, void *buff, size_t size, void **handle)
{
    (void)buff;
    (void)size;
    ncclComm_t comm = ncomm;
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommRegister");
    if (res)
        return res;
    registration_t *reg = handle ? malloc(sizeof *reg) : NULL;
    if (!handle)
        res = tt_nccl_error(comm, ncclInvalidArgument, "ncclCommRegister: handle: NULL pointer");
    else if (!reg)
        res = tt_nccl_error(comm, ncclSystemError, "ncclCommRegister: no memory for a handle");
    if (!res) {
        static atomic_int said;
        if (!atomic_exchange_explicit(&said, 1, memory_order_relaxed))
            TT_INFO(TT_SUB_INIT, "ncclCommRegister changes nothing in tutti: it needs no registered buffers");
        *reg = (registration_t){REG_MAGIC, comm};
        *handle = reg;
    }
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclCommRegister)

TT_NCCL_EXPORT ncclResult_t pncclCommDeregister(const ncclComm_t ncomm, void *handle)
{
    ncclComm_t comm = ncomm;
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommDeregister");
    if (res)
        return res;
    registration_t *reg = handle;
    if (!reg || reg->magic != REG_MAGIC || reg->comm != comm)
        res = tt_nccl_error(comm, ncclInvalidArgument,
                            "ncclCommDeregister: handle: not one ncclCommRegister gave on this communicator");
    else {
        reg->magic = 0;
        free(reg);
    }
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclCommDeregister)
