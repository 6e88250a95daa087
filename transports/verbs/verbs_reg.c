/* SPDX-License-Identifier: MIT */
/*
 * Registration cache for user buffers. Registering pins pages, so a cached
 * registration goes stale when the application gives its memory back
 * (free, munmap, madvise(MADV_DONTNEED), mremap): the NIC would keep using
 * the old pages while the same addresses now name new ones. tutti watches
 * cached ranges with userfaultfd: each is registered in write-protect mode
 * (no page is ever protected, so no fault is ever delivered) only to be
 * told of unmap, remove and remap events; a thread of its own reads them and
 * retires the registrations they touch. Where userfaultfd is not allowed
 * (vm.unprivileged_userfaultfd, seccomp), or for memory it cannot watch,
 * a buffer is registered for one message and deregistered after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "transports/verbs/verbs.h"

#define MAX_CACHED 512 /* registrations kept per cache; the least recent go */

struct tt_verbs_reg {
    uintptr_t lo, hi; /* whole pages covered */
    int write;
    struct ibv_mr *mr;
    int refs;
    int stale;  /* its memory was released: never handed out again */
    int cached; /* kept between uses (else deregistered when put back) */
    struct tt_verbs_reg *next;
};

struct tt_verbs_cache {
    const tt_ibv_t *ibv;
    struct ibv_pd *pd;
    int enabled;
    tt_gdr_path_t gdr;
    pthread_mutex_t lock;
    tt_verbs_reg_t *list; /* most recently used first */
    int n;
    struct tt_verbs_cache *next; /* in the watcher's list */
};

/* lock guards the watcher's life; list_lock the caches it serves (the
 * thread takes only list_lock, so stopping it under lock cannot deadlock). */
static struct {
    pthread_mutex_t lock, list_lock;
    int fd, users, tried;
    int stop[2]; /* a pipe that wakes the thread to exit */
    pthread_t thread;
    tt_verbs_cache_t *caches;
} watch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, -1, 0, 0, {-1, -1}, 0, NULL};

static _Atomic uint64_t n_hits, n_misses, n_invalidated;
/* Set by the watcher from the moment it sees events waiting until it has
 * retired what they touch. An unmapping thread is released when its event
 * is read, before the retiring: a lookup waits for this to clear, so a
 * buffer freed, mapped again and handed to tutti never meets its old entry. */
static _Atomic int watch_busy;

static void release(const tt_ibv_t *ibv, tt_verbs_reg_t *r)
{
    if (r->mr)
        ibv->dereg_mr(r->mr);
    free(r);
}

/* Retires every registration over [lo, hi): its memory is gone. */
static void invalidate(uintptr_t lo, uintptr_t hi)
{
    pthread_mutex_lock(&watch.list_lock);
    for (tt_verbs_cache_t *c = watch.caches; c; c = c->next) {
        pthread_mutex_lock(&c->lock);
        for (tt_verbs_reg_t **pp = &c->list; *pp;) {
            tt_verbs_reg_t *r = *pp;
            if (r->lo >= hi || r->hi <= lo) {
                pp = &r->next;
                continue;
            }
            r->stale = 1;
            n_invalidated++;
            if (r->refs > 0) { /* in use by a message now: retired when put back */
                pp = &r->next;
                continue;
            }
            *pp = r->next;
            c->n--;
            release(c->ibv, r);
        }
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&watch.list_lock);
}

static void *watch_thread(void *arg)
{
    (void)arg;
    struct pollfd p[2] = {{.fd = watch.fd, .events = POLLIN}, {.fd = watch.stop[0], .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        watch_busy = 1;
        struct uffd_msg m[16];
        ssize_t got = read(watch.fd, m, sizeof m);
        /* Reading the event is what lets the unmapping thread go on; the
         * registration is retired right after, before any new use of it. */
        for (ssize_t i = 0; got > 0 && i < got / (ssize_t)sizeof m[0]; i++) {
            if (m[i].event == UFFD_EVENT_UNMAP || m[i].event == UFFD_EVENT_REMOVE)
                invalidate(m[i].arg.remove.start, m[i].arg.remove.end);
            else if (m[i].event == UFFD_EVENT_REMAP)
                invalidate(m[i].arg.remap.from, m[i].arg.remap.from + m[i].arg.remap.len);
        }
        watch_busy = 0;
    }
    return NULL;
}

/* Starts watching (once per process); 0 when userfaultfd cannot be used. */
static int watch_start(void)
{
    if (watch.fd >= 0)
        return 1;
    if (watch.tried)
        return 0;
    watch.tried = 1;
    /* User-mode-only handles no kernel faults, which an unprivileged
     * process may ask for; tutti wants events, not faults. */
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0 && errno == EINVAL)
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    uint64_t want = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP |
                    UFFD_FEATURE_PAGEFAULT_FLAG_WP;
    struct uffdio_api api = {.api = UFFD_API, .features = want};
    if (fd < 0 || ioctl(fd, UFFDIO_API, &api) || (api.features & want) != want ||
        pipe2(watch.stop, O_CLOEXEC)) {
        TT_INFO(TT_SUB_NET,
                "verbs: user buffers are registered per message: userfaultfd is not available (%s)",
                fd < 0 ? strerror(errno) : "no unmap events");
        if (fd >= 0)
            close(fd);
        return 0;
    }
    watch.fd = fd;
    if (pthread_create(&watch.thread, NULL, watch_thread, NULL)) {
        close(fd);
        close(watch.stop[0]);
        close(watch.stop[1]);
        watch.fd = -1;
        return 0;
    }
    return 1;
}

static void watch_stop(void)
{
    if (watch.fd < 0)
        return;
    char b = 0;
    if (write(watch.stop[1], &b, 1) != 1)
        TT_WARN(TT_SUB_NET, "verbs: cannot wake the memory watcher: %s", strerror(errno));
    pthread_join(watch.thread, NULL);
    /* Closing the descriptor unregisters every watched range. */
    close(watch.fd);
    close(watch.stop[0]);
    close(watch.stop[1]);
    watch.fd = -1;
    watch.tried = 0;
}

tt_verbs_cache_t *tt_verbs_cache_new(const tt_ibv_t *ibv, struct ibv_pd *pd, int enabled)
{
    tt_verbs_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ibv = ibv;
    c->pd = pd;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&watch.lock);
    c->enabled = enabled && watch_start();
    watch.users += c->enabled;
    pthread_mutex_unlock(&watch.lock);
    if (c->enabled) {
        pthread_mutex_lock(&watch.list_lock);
        c->next = watch.caches;
        watch.caches = c;
        pthread_mutex_unlock(&watch.list_lock);
    }
    return c;
}

void tt_verbs_cache_set_gdr(tt_verbs_cache_t *c, tt_gdr_path_t path)
{
    c->gdr = path;
}

void tt_verbs_cache_free(tt_verbs_cache_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&watch.list_lock);
    for (tt_verbs_cache_t **pp = &watch.caches; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    pthread_mutex_unlock(&watch.list_lock);
    pthread_mutex_lock(&watch.lock);
    if (c->enabled && --watch.users == 0)
        watch_stop();
    pthread_mutex_unlock(&watch.lock);
    while (c->list) {
        tt_verbs_reg_t *r = c->list;
        c->list = r->next;
        release(c->ibv, r);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Asks to hear of [lo, hi) being released; 0 if it cannot be watched. */
static int watch_range(uintptr_t lo, uintptr_t hi)
{
    struct uffdio_register reg = {.range = {.start = lo, .len = hi - lo}, .mode = UFFDIO_REGISTER_MODE_WP};
    return ioctl(watch.fd, UFFDIO_REGISTER, &reg) == 0;
}

static void evict_unused(tt_verbs_cache_t *c)
{
    tt_verbs_reg_t **last = NULL;
    for (tt_verbs_reg_t **pp = &c->list; *pp; pp = &(*pp)->next)
        if ((*pp)->refs == 0)
            last = pp;
    if (last) {
        tt_verbs_reg_t *r = *last;
        *last = r->next;
        c->n--;
        release(c->ibv, r);
    }
}

static tt_verbs_reg_t *lookup(tt_verbs_cache_t *c, uintptr_t lo, uintptr_t hi, int write)
{
    for (tt_verbs_reg_t **pp = &c->list; *pp; pp = &(*pp)->next) {
        tt_verbs_reg_t *r = *pp;
        if (r->stale || r->lo > lo || r->hi < hi || r->write < write)
            continue;
        *pp = r->next; /* to the front: most recently used */
        r->next = c->list;
        c->list = r;
        r->refs++;
        return r;
    }
    return NULL;
}

tt_verbs_reg_t *tt_verbs_cache_get(tt_verbs_cache_t *c, void *addr, size_t len, int write)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)addr & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)addr + len + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    int device = c->gdr != TT_GDR_NONE && tt_verbs_gdr_is_device(addr);
    while (c->enabled && watch_busy)
        sched_yield();
    pthread_mutex_lock(&c->lock);
    tt_verbs_reg_t *r = c->enabled && !device ? lookup(c, lo, hi, write) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (r) {
        n_hits++;
        return r;
    }
    n_misses++;
    r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    *r = (tt_verbs_reg_t){.lo = lo, .hi = hi, .write = write, .refs = 1};
    int access = write ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;
    /* Watch first: a release between the two steps is then not missed. */
    int watched = c->enabled && !device && watch_range(lo, hi);
    r->mr = device ? tt_verbs_gdr_reg(c->ibv, c->pd, addr, len, access, c->gdr)
                   : c->ibv->reg_mr(c->pd, (void *)lo, hi - lo, access);
    if (!r->mr) {
        TT_DEBUG(TT_SUB_NET, "verbs: registering %zu bytes at %p failed: %s", len, addr, strerror(errno));
        free(r);
        return NULL;
    }
    TT_DEBUG(TT_SUB_NET, "verbs: registered %zu bytes at %p (%s)", (size_t)(hi - lo), (void *)lo,
             watched ? "cached" : "for one message");
    if (watched) {
        r->cached = 1;
        pthread_mutex_lock(&c->lock);
        if (c->n >= MAX_CACHED)
            evict_unused(c);
        r->next = c->list;
        c->list = r;
        c->n++;
        pthread_mutex_unlock(&c->lock);
    }
    return r;
}

void tt_verbs_cache_put(tt_verbs_cache_t *c, tt_verbs_reg_t *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&c->lock);
    int drop = --r->refs == 0 && (r->stale || !r->cached);
    if (drop && r->cached)
        for (tt_verbs_reg_t **pp = &c->list; *pp; pp = &(*pp)->next)
            if (*pp == r) {
                *pp = r->next;
                c->n--;
                break;
            }
    pthread_mutex_unlock(&c->lock);
    if (drop)
        release(c->ibv, r);
}

struct ibv_mr *tt_verbs_reg_mr(const tt_verbs_reg_t *r)
{
    return r->mr;
}

void tt_verbs_cache_stats(tt_verbs_cache_stats_t *out)
{
    while (watch.fd >= 0 && watch_busy) /* events already delivered count */
        sched_yield();
    out->hits = n_hits;
    out->misses = n_misses;
    out->invalidated = n_invalidated;
    out->watching = watch.fd >= 0;
}
