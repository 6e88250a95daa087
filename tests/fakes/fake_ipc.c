/* SPDX-License-Identifier: MIT */
/* The host-memory cuda_ipc backend of fake_ipc.h. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "device/direct_run.h"
#include "tests/fakes/fake_gpu.h"
#include "tests/fakes/fake_ipc.h"
#include "transports/local.h"

struct tt_fake_ipc_used tt_fake_ipc_used;
unsigned tt_fake_ipc_reach[TT_FAKE_IPC_GPUS] = {0xf, 0xf, 0xf, 0xf};
int tt_fake_ipc_slow_close;

typedef struct {
    int gpu;
    char window[TT_IPC_HANDLE_BYTES]; /* its segment's name */
} fake_dev_t;

static _Thread_local const char *said_text = "";

static tutti_status_t refuse(const char *words)
{
    said_text = words;
    return TUTTI_ERR_SYSTEM;
}

/* A runtime call made with the communicator's GPU current (the backend's
 * contract: the binding ops run so; 92 otherwise). */
static void runtime_call(const fake_dev_t *d, const char *what)
{
    tt_fake_gpu_runtime_call(what);
    if (tt_fake_gpu_current() != d->gpu) {
        fprintf(stderr, "fake backend: %s with GPU %d current, not the communicator's GPU %d\n", what,
                tt_fake_gpu_current(), d->gpu);
        _exit(92);
    }
}

static tutti_status_t fake_attach(int device, void **dev)
{
    fake_dev_t *d = calloc(1, sizeof *d);
    if (!d)
        return refuse("no memory");
    d->gpu = device;
    *dev = d;
    return TUTTI_SUCCESS;
}

static void fake_detach(void *dev)
{
    free(dev);
}

static tutti_status_t fake_identity(void *dev, uint64_t *self, uint64_t *reach, int *nreach)
{
    int g = ((fake_dev_t *)dev)->gpu;
    runtime_call(dev, "asking which GPUs this one reaches");
    *self = 100 + (uint64_t)g;
    *nreach = 0;
    for (int h = 0; h < TT_FAKE_IPC_GPUS; h++)
        if (tt_fake_ipc_reach[g] >> h & 1)
            reach[(*nreach)++] = 100 + (uint64_t)h;
    return TUTTI_SUCCESS;
}

/*
 * A window is a shared segment; its handle is the segment's name. A header
 * before it counts the processes that have it open (the owner's mapping
 * aside), so freeing it while a peer still has it open (undefined on a GPU)
 * exits the rank with 91. Its memory is "device memory" of the model.
 */
#define WINDOW_HDR 64

typedef struct {
    _Atomic int mappers;
} window_hdr_t;

static tutti_status_t fake_window_alloc(void *devp, size_t bytes, void **ptr,
                                        unsigned char handle[TT_IPC_HANDLE_BYTES])
{
    fake_dev_t *d = devp;
    static _Atomic int made;
    runtime_call(d, "allocating the window");
    /* A rank that exits on a violation leaves its window behind; a later
     * process with the same pid must not collide with it. */
    snprintf(d->window, sizeof d->window, "/tutti-test-fifo-%d-%d-%lx", (int)getpid(), made++,
             (unsigned long)tt_now_ns());
    memcpy(handle, d->window, TT_IPC_HANDLE_BYTES);
    char *p = tt_local_create("test", d->window, bytes + WINDOW_HDR);
    *ptr = p ? p + WINDOW_HDR : NULL;
    return *ptr ? TUTTI_SUCCESS : refuse("window not created");
}

static void fake_window_free(void *devp, void *ptr, size_t bytes)
{
    fake_dev_t *d = devp;
    window_hdr_t *h = (window_hdr_t *)((char *)ptr - WINDOW_HDR);
    int still = atomic_load(&h->mappers);
    if (still) {
        fprintf(stderr, "fake backend: window freed while %d peer(s) still have it open\n", still);
        _exit(91);
    }
    munmap(h, bytes + WINDOW_HDR);
    shm_unlink(d->window);
}

static tutti_status_t fake_window_open(void *devp, const unsigned char handle[TT_IPC_HANDLE_BYTES],
                                       size_t bytes, void **ptr)
{
    runtime_call(devp, "opening a peer's window");
    tt_fake_ipc_used.opens++;
    char *p = tt_local_map("test", (const char *)handle, bytes + WINDOW_HDR, -1);
    if (!p)
        return refuse("window not found");
    atomic_fetch_add(&((window_hdr_t *)p)->mappers, 1);
    *ptr = p + WINDOW_HDR;
    return TUTTI_SUCCESS;
}

static void fake_window_close(void *dev, void *ptr, size_t bytes)
{
    (void)dev;
    tt_fake_ipc_used.closes++;
    if (tt_fake_ipc_slow_close)
        usleep((useconds_t)tt_fake_ipc_slow_close * 1000);
    window_hdr_t *h = (window_hdr_t *)((char *)ptr - WINDOW_HDR);
    atomic_fetch_sub(&h->mappers, 1);
    munmap(h, bytes + WINDOW_HDR);
}

/* Ranks that are threads of one process share the window as it is. */
static tutti_status_t fake_window_share(void *dev, void *ptr, int owner_device, void **out)
{
    (void)owner_device;
    runtime_call(dev, "sharing a window of this process");
    tt_fake_ipc_used.shares++;
    *out = ptr;
    return TUTTI_SUCCESS;
}

/* Host memory is as it is to the model's "GPU". */
static tutti_status_t fake_host_register(void *dev, void *ptr, size_t bytes, void **devptr)
{
    (void)bytes;
    runtime_call(dev, "registering a segment");
    *devptr = ptr;
    return TUTTI_SUCCESS;
}

static void fake_host_unregister(void *dev, void *ptr)
{
    (void)dev;
    (void)ptr;
}

static const char *fake_said(void)
{
    return said_text;
}

const tt_cuda_ipc_backend_t tt_fake_ipc = {
    .name = "host memory (test)",
    .attach = fake_attach,
    .detach = fake_detach,
    .identity = fake_identity,
    .window_alloc = fake_window_alloc,
    .window_free = fake_window_free,
    .window_open = fake_window_open,
    .window_close = fake_window_close,
    .window_share = fake_window_share,
    .host_register = fake_host_register,
    .host_unregister = fake_host_unregister,
    .said = fake_said,
};

void tt_fake_ipc_sweep(void)
{
    DIR *dir = opendir("/dev/shm");
    for (struct dirent *e; dir && (e = readdir(dir));) {
        int pid;
        char name[300], proc[64];
        if (sscanf(e->d_name, "tutti-test-fifo-%d-", &pid) != 1)
            continue;
        snprintf(proc, sizeof proc, "/proc/%d", pid);
        snprintf(name, sizeof name, "/%s", e->d_name);
        if (access(proc, F_OK) != 0)
            shm_unlink(name);
    }
    if (dir)
        closedir(dir);
}

int tt_fake_ipc_prepared(tt_comm_t *comm, int gpu)
{
    for (int tries = 0; tries < 20000; tries++) {
        int ready = 0;
        if (tt_direct_prepare(comm, gpu, &ready) == TUTTI_SUCCESS && ready)
            return 1;
        usleep(500);
    }
    return 0;
}
