/* SPDX-License-Identifier: MIT */
/*
 * GPUDirect RDMA: letting the NIC read and write CUDA device memory. The
 * preferred path is a dmabuf of the device allocation
 * (cuMemGetHandleForAddressRange) registered with ibv_reg_dmabuf_mr, which
 * needs a CUDA driver and GPU that export dmabufs, rdma-core 34 or newer and
 * a kernel and NIC driver that import them; the older path is ibv_reg_mr on
 * the device address with the nvidia_peermem module loaded. Where neither
 * works, device buffers go through pinned host memory. The CUDA driver is
 * opened at run time, and only when TUTTI_IB_GDR asks for it or a device
 * buffer appears.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "transports/verbs/verbs.h"

#ifdef TT_HAVE_CUDA
#include <cuda.h>

static struct {
    int tried, ok;
    CUresult (*init)(unsigned flags);
    CUresult (*device_get)(CUdevice *dev, int ordinal);
    CUresult (*attribute)(int *value, CUdevice_attribute attr, CUdevice dev);
    CUresult (*pointer_attribute)(void *data, CUpointer_attribute attr, CUdeviceptr ptr);
    CUresult (*address_range)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);
    CUresult (*range_handle)(void *handle, CUdeviceptr ptr, size_t size, CUmemRangeHandleType type,
                             unsigned long long flags);
} cu;

static int cuda_open(void)
{
    if (cu.tried)
        return cu.ok;
    cu.tried = 1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    *(void **)&cu.init = dlsym(h, "cuInit");
    *(void **)&cu.device_get = dlsym(h, "cuDeviceGet");
    *(void **)&cu.attribute = dlsym(h, "cuDeviceGetAttribute");
    *(void **)&cu.pointer_attribute = dlsym(h, "cuPointerGetAttribute");
    *(void **)&cu.address_range = dlsym(h, "cuMemGetAddressRange_v2");
    *(void **)&cu.range_handle = dlsym(h, "cuMemGetHandleForAddressRange"); /* CUDA 11.7+ */
    cu.ok = cu.init && cu.device_get && cu.attribute && cu.pointer_attribute && cu.address_range &&
            cu.init(0) == CUDA_SUCCESS;
    return cu.ok;
}
#endif

int tt_verbs_gdr_cuda_loaded(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

void tt_verbs_gdr_probe(const tt_ibv_t *ibv, tt_gdr_caps_t *caps)
{
    struct stat st;
    memset(caps, 0, sizeof *caps);
    caps->reg_dmabuf = ibv && ibv->reg_dmabuf_mr != NULL;
    caps->peermem = stat("/sys/module/nvidia_peermem", &st) == 0 || stat("/sys/module/nv_peer_mem", &st) == 0;
#ifdef TT_HAVE_CUDA
    CUdevice dev;
    if (cuda_open() && cu.device_get(&dev, 0) == CUDA_SUCCESS) {
        caps->cuda = 1;
        if (cu.range_handle)
            cu.attribute(&caps->dmabuf_attr, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
        cu.attribute(&caps->gdr_attr, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, dev);
    }
#endif
}

tutti_status_t tt_verbs_gdr_decide(const char *setting, const tt_gdr_caps_t *caps, tt_gdr_path_t *out,
                                   char *why, size_t len)
{
    int want = strcmp(setting, "1") == 0      ? 1
               : strcmp(setting, "0") == 0    ? 0
               : strcmp(setting, "auto") == 0 ? -1
                                              : 2;
    *out = TT_GDR_NONE;
    why[0] = '\0';
    if (want == 2) {
        snprintf(why, len, "TUTTI_IB_GDR='%s': use 1, 0 or auto", setting);
        return TUTTI_ERR_CONFIG;
    }
    if (want == 0) {
        snprintf(why, len, "TUTTI_IB_GDR=0");
        return TUTTI_SUCCESS;
    }
    if (caps->cuda && caps->dmabuf_attr && caps->reg_dmabuf)
        *out = TT_GDR_DMABUF;
    else if (caps->cuda && caps->gdr_attr && caps->peermem)
        *out = TT_GDR_PEERMEM;
    else
        snprintf(why, len, "%s",
                 !caps->cuda ? "no CUDA driver or GPU"
                 : !caps->reg_dmabuf
                     ? (caps->peermem ? "the GPU does not support GPUDirect RDMA"
                                      : "libibverbs lacks ibv_reg_dmabuf_mr and nvidia_peermem "
                                        "is not loaded")
                 : !caps->dmabuf_attr && !caps->peermem
                     ? "the GPU or driver exports no dmabuf and nvidia_peermem is not loaded"
                     : "the GPU does not support GPUDirect RDMA");
    if (want == 1 && *out == TT_GDR_NONE)
        return TUTTI_ERR_CONFIG;
    return TUTTI_SUCCESS;
}

int tt_verbs_gdr_is_device(const void *ptr)
{
#ifdef TT_HAVE_CUDA
    unsigned int type = 0;
    return cuda_open() &&
           cu.pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)ptr) ==
               CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_DEVICE;
#else
    (void)ptr;
    return 0;
#endif
}

struct ibv_mr *tt_verbs_gdr_reg(const tt_ibv_t *ibv, struct ibv_pd *pd, void *ptr, size_t len, int access,
                                tt_gdr_path_t path)
{
    if (path == TT_GDR_PEERMEM) /* nvidia_peermem resolves device addresses inside ibv_reg_mr */
        return ibv->reg_mr(pd, ptr, len, access);
#ifdef TT_HAVE_CUDA
    if (path == TT_GDR_DMABUF && cu.range_handle && ibv->reg_dmabuf_mr) {
        /* A dmabuf covers whole host pages of one allocation. */
        CUdeviceptr base, p = (CUdeviceptr)(uintptr_t)ptr;
        size_t size, page = (size_t)sysconf(_SC_PAGESIZE);
        if (cu.address_range(&base, &size, p) != CUDA_SUCCESS) {
            TT_ERROR(TT_SUB_NET, "verbs: %p is not a CUDA allocation tutti can register", ptr);
            return NULL;
        }
        CUdeviceptr lo = p / page * page, hi = (p + len + page - 1) / page * page;
        if (lo < base || hi > base + size) {
            TT_ERROR(TT_SUB_NET,
                     "verbs: device buffer %p (%zu bytes) is not page-aligned within its allocation", ptr,
                     len);
            return NULL;
        }
        int fd = -1;
        if (cu.range_handle(&fd, lo, hi - lo, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) != CUDA_SUCCESS) {
            TT_ERROR(TT_SUB_NET, "verbs: the CUDA driver gave no dmabuf for %p", ptr);
            return NULL;
        }
        struct ibv_mr *mr = ibv->reg_dmabuf_mr(pd, 0, hi - lo, lo, fd, access);
        if (!mr)
            TT_ERROR(TT_SUB_NET, "verbs: ibv_reg_dmabuf_mr of device buffer %p failed", ptr);
        close(fd); /* the registration holds its own reference */
        return mr;
    }
#endif
    (void)pd;
    (void)ptr;
    (void)len;
    (void)access;
    TT_ERROR(TT_SUB_NET, "verbs: device memory cannot be registered (no GPUDirect RDMA path)");
    return NULL;
}
