/* SPDX-License-Identifier: MIT */
/*
 * Protection domains and memory regions of the stand-in: keys, access
 * flags and bounds as a NIC checks them, registration refused for memory
 * that is not mapped (or not writable when write access is asked), dmabuf
 * regions mapped from their descriptor, and the test hooks that model what
 * the kernel does behind a NIC's back (ttfake_release_pages, ttfake_inject).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fv.h"

#undef ibv_reg_mr

/* Contexts of this process, for the hooks that act on all of them. */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static fv_ctx_t *all_ctx[16];

void fv_ctx_track(fv_ctx_t *c, int add)
{
    pthread_mutex_lock(&all_lock);
    for (int i = 0; i < 16; i++)
        if (add ? !all_ctx[i] : all_ctx[i] == c) {
            all_ctx[i] = add ? c : NULL;
            break;
        }
    pthread_mutex_unlock(&all_lock);
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    static uint32_t handles;
    fv_pd_t *p = calloc(1, sizeof *p);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    p->pd.context = context;
    p->pd.handle = __atomic_add_fetch(&handles, 1, __ATOMIC_RELAXED);
    return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
    fv_ctx_t *c = fv_ctx_of(pd->context);
    pthread_mutex_lock(&c->lock);
    int busy = 0;
    for (fv_mr_t *m = c->mrs; m; m = m->next)
        busy |= m->mr.pd == pd;
    for (int i = 0; i < FV_MAX_QPS; i++)
        busy |= c->qps[i] && c->qps[i]->qp.pd == pd;
    pthread_mutex_unlock(&c->lock);
    if (busy)
        return EBUSY; /* as the kernel refuses a PD still in use */
    free(pd);
    return 0;
}

/* Whether [addr, addr + len) is mapped, and writable if asked, per /proc/self/maps. */
static int range_mapped(uintptr_t addr, size_t len, int need_write)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 1; /* cannot tell: allow, as a kernel without the check would */
    uintptr_t at = addr, end = addr + len;
    char line[512];
    while (at < end && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
            continue;
        if (at >= lo && at < hi) {
            if (perms[0] != 'r' || (need_write && perms[1] != 'w'))
                break;
            at = hi;
        }
    }
    fclose(f);
    return at >= end;
}

static fv_mr_t *mr_new(struct ibv_pd *pd, size_t length, uint64_t iova, int access)
{
    fv_ctx_t *c = fv_ctx_of(pd->context);
    int valid = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING;
    /* Remote write or atomic access needs local write too (a NIC rule). */
    int needs_local = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
    if ((access & ~valid) || ((access & needs_local) && !(access & IBV_ACCESS_LOCAL_WRITE)) || length == 0) {
        errno = EINVAL;
        return NULL;
    }
    fv_mr_t *m = calloc(1, sizeof *m);
    if (!m) {
        errno = ENOMEM;
        return NULL;
    }
    m->access = access;
    m->iova = iova;
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.length = length;
    pthread_mutex_lock(&c->lock);
    /* Low byte a running tag, so a stale key of a freed region misses. */
    uint32_t n = c->next_key++;
    uint32_t key = n << 8 | ((n * 37u) & 0xff);
    m->mr.lkey = m->mr.rkey = m->mr.handle = key;
    m->next = c->mrs;
    c->mrs = m;
    pthread_mutex_unlock(&c->lock);
    return m;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    if (!range_mapped((uintptr_t)addr, length, access & IBV_ACCESS_LOCAL_WRITE)) {
        errno = EFAULT; /* what pinning unmapped or read-only pages gives */
        return NULL;
    }
    fv_mr_t *m = mr_new(pd, length, (uintptr_t)addr, access);
    if (!m)
        return NULL;
    m->base = addr;
    m->mr.addr = addr;
    return &m->mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access);
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
    struct ibv_mr *mr = ibv_reg_mr(pd, addr, length, (int)access);
    if (mr)
        ((fv_mr_t *)mr)->iova = iova;
    return mr;
}

/* A dmabuf is modelled by any mappable descriptor (a memfd in the tests). */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                                 int access)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t start = offset / (uint64_t)page * (uint64_t)page;
    size_t span = (size_t)(offset - start) + length;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
    if (p == MAP_FAILED) {
        errno = EINVAL;
        return NULL;
    }
    fv_mr_t *m = mr_new(pd, length, iova, access);
    if (!m) {
        munmap(p, span);
        return NULL;
    }
    m->base = p + (offset - start);
    m->dmabuf_mapped = 1;
    m->mr.addr = (void *)(uintptr_t)iova;
    return &m->mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    fv_ctx_t *c = fv_ctx_of(mr->context);
    fv_mr_t *m = (fv_mr_t *)mr;
    pthread_mutex_lock(&c->lock);
    for (fv_mr_t **pp = &c->mrs; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    /* A write still streaming into it now finds no key and fails. */
    for (int i = 0; i < FV_MAX_QPS; i++)
        if (c->qps[i] && c->qps[i]->rx_mr == m)
            c->qps[i]->rx_mr = NULL;
    pthread_mutex_unlock(&c->lock);
    if (m->dmabuf_mapped) {
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t b = (uintptr_t)m->base / (uintptr_t)page * (uintptr_t)page;
        munmap((void *)b, (uintptr_t)m->base - b + m->mr.length);
    }
    free(m->orphan);
    free(m);
    return 0;
}

fv_mr_t *fv_mr_find(fv_ctx_t *ctx, uint32_t key, int remote)
{
    for (fv_mr_t *m = ctx->mrs; m; m = m->next)
        if ((remote ? m->mr.rkey : m->mr.lkey) == key)
            return m;
    return NULL;
}

char *fv_mr_ptr(fv_mr_t *mr, uint64_t addr, uint64_t len)
{
    if (addr < mr->iova || len > mr->mr.length || addr - mr->iova > mr->mr.length - len)
        return NULL;
    return (mr->orphan ? mr->orphan : mr->base) + (addr - mr->iova);
}

/*
 * Test hook: the application gave [addr, addr + len) back to the kernel.
 * A registered region pins its pages, so a NIC keeps reading and writing
 * the old pages, which the application no longer sees; regions over that
 * range now do the same here. (The stand-in cannot see munmap itself.)
 */
void ttfake_release_pages(void *addr, size_t len);
void ttfake_release_pages(void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t)addr, hi = lo + len;
    pthread_mutex_lock(&all_lock);
    for (int i = 0; i < 16; i++) {
        fv_ctx_t *c = all_ctx[i];
        if (!c)
            continue;
        pthread_mutex_lock(&c->lock);
        for (fv_mr_t *m = c->mrs; m; m = m->next) {
            uintptr_t b = (uintptr_t)m->base;
            if (!m->orphan && !m->dmabuf_mapped && b < hi && b + m->mr.length > lo)
                m->orphan = calloc(1, m->mr.length);
        }
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&all_lock);
}

/* Faults the tests inject: "bad_rkey" corrupts the R_Key of this process's
 * next non-empty RDMA write; "qp_error" moves one of its connected queue
 * pairs to the error state, as a fatal NIC error would. */
_Atomic int fv_inject_bad_rkey, fv_inject_qp_error;

int ttfake_inject(const char *what);
int ttfake_inject(const char *what)
{
    if (strcmp(what, "bad_rkey") == 0)
        atomic_store(&fv_inject_bad_rkey, 1);
    else if (strcmp(what, "qp_error") == 0)
        atomic_store(&fv_inject_qp_error, 1);
    else
        return -1;
    pthread_mutex_lock(&all_lock);
    for (int i = 0; i < 16; i++)
        if (all_ctx[i])
            fv_ring_doorbell(all_ctx[i]->seg);
    pthread_mutex_unlock(&all_lock);
    return 0;
}
