/* SPDX-License-Identifier: MIT */
/*
 * shm's memory: one segment per host, sized when the communicator starts,
 * and each rank's pool in it; what a pair's queues take is reserved when
 * the pair connects (posix_fallocate), so that a communicator costs the
 * memory of the pairs it uses, and a /dev/shm that another job filled
 * meanwhile makes that pair go over the next transport, never a SIGBUS. The host's first rank sizes it: room
 * for every same-host peer at full size, within TUTTI_SHM_HOST_BYTES for
 * the host and three quarters of what /dev/shm has free (a container's
 * 64 MiB is common); less than full size is said once, and less than the
 * least that works is an error naming the room needed and the fixes. A
 * rank gives a peer full-size queues while its pool could still give every
 * peer as much, and smaller ones after, so a pool never runs out before
 * every same-host peer has queues unless the pool is tiny; a pair whose
 * receiver has no room left goes over the next transport.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/grow.h"
#include "core/log.h"
#include "core/shm_names.h"
#include "core/try.h"
#include "transports/shm/shm.h"

#define PAGE 4096

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static size_t queue_bytes(int nslots, size_t slot_bytes)
{
    return sizeof(tt_local_queue_t) + (size_t)nslots * (sizeof(tt_local_slot_t) + slot_bytes);
}

size_t tt_shm_queue_offset(int nslots, size_t slot_bytes, int ch)
{
    return (size_t)ch * queue_bytes(nslots, slot_bytes);
}

size_t tt_shm_region_bytes(int nchannels, int nslots, size_t slot_bytes)
{
    return (size_t)nchannels * queue_bytes(nslots, slot_bytes);
}

/* "64 MiB", or "48 KiB" below a MiB, rounded up */
static void mib(uint64_t bytes, char *out, size_t len)
{
    if (bytes < (1 << 20))
        snprintf(out, len, "%llu KiB", (unsigned long long)((bytes + 1023) >> 10));
    else
        snprintf(out, len, "%llu MiB", (unsigned long long)((bytes + (1 << 20) - 1) >> 20));
}

/* A /dev/shm size that holds bytes in three quarters, as docker and mount
 * spell it ("192m"), in steps of 64 MiB. */
static void suggest(uint64_t bytes, char *out, size_t len)
{
    uint64_t m = round_up(bytes / 3 * 4, (uint64_t)64 << 20) >> 20;
    snprintf(out, len, "%llum", (unsigned long long)m);
}

/* A pool's bytes: what the host's first rank decides. */
static tutti_status_t pool_size(const tt_shm_ctx_t *ctx, uint64_t *pool)
{
    int n = ctx->nlocal;
    uint64_t full = tt_shm_region_bytes(ctx->nchannels, ctx->nslots, ctx->slot_bytes);
    uint64_t least = tt_shm_region_bytes(ctx->nchannels, ctx->nslots, TT_SHM_MIN_SLOT);
    /* Every peer at full size, and the smallest region per local rank that
     * a pool with room keeps at its end (keep_least): without the latter,
     * the kept regions came out of the full ones, and 2 ranks' pair got
     * slots of 32 KiB instead of 256. */
    uint64_t kept = (uint64_t)n * round_up(least, TT_LOCAL_LINE);
    uint64_t want = round_up(TT_SHM_POOL_HDR + (uint64_t)(n - 1) * full + kept, PAGE);
    uint64_t need = round_up(TT_SHM_POOL_HDR + (uint64_t)(n - 1 < 2 ? n - 1 : 2) * least, PAGE);
    uint64_t budget = ctx->host_budget / (uint64_t)n / PAGE * PAGE;
    uint64_t p = want < budget ? want : budget > need ? budget : need;
    struct statvfs fs;
    uint64_t room = statvfs("/dev/shm", &fs) == 0 ? (uint64_t)fs.f_bavail * fs.f_frsize / 4 * 3 : UINT64_MAX;
    char a[32], b[32], c[32];
    if (TT_SHM_HOST_HDR + (uint64_t)n * p > room) {
        uint64_t fit = room > TT_SHM_HOST_HDR ? (room - TT_SHM_HOST_HDR) / (uint64_t)n / PAGE * PAGE : 0;
        mib(room / 3 * 4, a, sizeof a); /* what it has free */
        if (fit < need) {
            mib(TT_SHM_HOST_HDR + (uint64_t)n * need, b, sizeof b);
            suggest(TT_SHM_HOST_HDR + (uint64_t)n * (want < budget ? want : budget), c, sizeof c);
            TT_ERROR(
                TT_SUB_NET,
                "shm: /dev/shm has %s free, but the %d ranks of this host need at least %s of it; give it "
                "more room (docker run --shm-size=%s, or mount -o remount,size=%s /dev/shm), lower "
                "TUTTI_SHM_SLOTS, or leave shm out (TUTTI_TRANSPORTS=tcp)",
                a, n, b, c, c);
            return TUTTI_ERR_NO_MEMORY;
        }
        mib(TT_SHM_HOST_HDR + (uint64_t)n * fit, b, sizeof b);
        suggest(TT_SHM_HOST_HDR + (uint64_t)n * (want < budget ? want : budget), c, sizeof c);
        TT_WARN(TT_SUB_NET,
                "shm: /dev/shm has %s free: the %d ranks of this host reserve %s of it, and some pairs get "
                "smaller slots (docker run --shm-size=%s or more gives them full ones)",
                a, n, b, c);
        p = fit;
    } else if (p < want) {
        mib((uint64_t)n * p, b, sizeof b);
        TT_INFO(TT_SUB_NET,
                "shm: the %d ranks of this host share %s (TUTTI_SHM_HOST_BYTES): some pairs get "
                "smaller slots",
                n, b);
    }
    *pool = p;
    return TUTTI_SUCCESS;
}

/* The host's first rank: the segment, its headers and every pool's
 * reserved. A page is reserved before it is touched: on a tmpfs that
 * filled up, the first touch of one that is not kills with SIGBUS. */
static tutti_status_t host_create(tt_shm_ctx_t *ctx)
{
    uint64_t pool;
    TT_TRY(pool_size(ctx, &pool));
    ctx->bytes = TT_SHM_HOST_HDR + (size_t)ctx->nlocal * pool;
    int fd = shm_open(ctx->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        TT_ERROR(TT_SUB_NET, "shm: shm_open(%s) failed: %s", ctx->name, strerror(errno));
        return TUTTI_ERR_SYSTEM;
    }
    int err = ftruncate(fd, (off_t)ctx->bytes) ? errno : posix_fallocate(fd, 0, TT_SHM_HOST_HDR);
    for (int i = 0; i < ctx->nlocal && !err; i++)
        err = posix_fallocate(fd, (off_t)(TT_SHM_HOST_HDR + (uint64_t)i * pool), (off_t)TT_SHM_POOL_HDR);
    void *p = err ? MAP_FAILED : mmap(NULL, ctx->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!err && p == MAP_FAILED)
        err = errno;
    if (err) {
        close(fd);
        char a[32];
        mib(ctx->bytes, a, sizeof a);
        TT_ERROR(TT_SUB_NET, "shm: making the %s segment in /dev/shm for the %d ranks of this host failed: %s%s", a,
                 ctx->nlocal, strerror(err),
                 err == ENOSPC ? " (another job took the room meanwhile? docker run --shm-size, or "
                                 "TUTTI_SHM_HOST_BYTES)"
                               : "");
        shm_unlink(ctx->name);
        return TUTTI_ERR_NO_MEMORY;
    }
    ctx->host = p;
    ctx->fd = fd;
    *(tt_shm_host_t *)p = (tt_shm_host_t){.magic = TT_SHM_MAGIC, .nlocal = ctx->nlocal, .pool_bytes = pool};
    memcpy(((tt_shm_host_t *)p)->key, ctx->env->key, TT_KEY_BYTES);
    return TUTTI_SUCCESS;
}

static tutti_status_t host_map(tt_shm_ctx_t *ctx)
{
    int fd = shm_open(ctx->name, O_RDWR, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < TT_SHM_HOST_HDR) {
        TT_ERROR(TT_SUB_NET, "shm: opening this host's segment %s failed: %s", ctx->name,
                 fd < 0 ? strerror(errno) : "it is too small");
        if (fd >= 0)
            close(fd);
        return TUTTI_ERR_SYSTEM;
    }
    ctx->bytes = (size_t)st.st_size;
    void *p = mmap(NULL, ctx->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        TT_ERROR(TT_SUB_NET, "shm: mapping this host's segment failed: %s", strerror(errno));
        close(fd);
        return TUTTI_ERR_SYSTEM;
    }
    ctx->host = p;
    ctx->fd = fd;
    const tt_shm_host_t *h = p;
    if (!tt_local_keyed(h->magic, TT_SHM_MAGIC, h->key, ctx->env->key) || h->nlocal != ctx->nlocal ||
        TT_SHM_HOST_HDR + (size_t)h->nlocal * h->pool_bytes != ctx->bytes) {
        TT_WARN(TT_SUB_NET, "shm: refused segment %s: it is not this job's", ctx->name);
        return TUTTI_ERR_AUTH;
    }
    return TUTTI_SUCCESS;
}

/* The host's first rank makes the segment, every rank maps it, then it is
 * unlinked: a crash after leaves nothing in /dev/shm. Every rank takes
 * part in both barriers, as every rank calls start. */
/* Regions given back leave holes, and a hole used for less than its size
 * leaves a piece too small for any queues: counting pieces, a pool can
 * seem to have room for the peers to come when no piece fits them. So a
 * pool with room to spare keeps at its end one smallest region per local
 * rank, each peer's own, and hands out the rest as before. */
static void keep_least(tt_shm_ctx_t *ctx)
{
    tt_shm_pool_t *p = &ctx->pool;
    uint64_t least =
        round_up(tt_shm_region_bytes(ctx->nchannels, ctx->nslots, TT_SHM_MIN_SLOT), TT_LOCAL_LINE);
    uint64_t kept = (uint64_t)ctx->nlocal * least;
    if (p->size < p->top + 2 * kept)
        return; /* a crowded pool (a small /dev/shm): pairs past it use the next transport */
    p->size = (p->size - kept) / TT_LOCAL_LINE * TT_LOCAL_LINE;
    p->least = least;
}

/* Peer's own smallest region, when the pool keeps one and it is free; 0 if not. */
static uint64_t kept_for(const tt_shm_ctx_t *ctx, int peer)
{
    const tt_shm_pool_t *p = &ctx->pool;
    if (!p->least)
        return 0;
    int i = ctx->local_index[peer];
    uint64_t off = p->base + p->size + (uint64_t)i * p->least;
    return ctx->mine[i].offset == off ? 0 : off;
}

tutti_status_t tt_shm_host_start(tt_shm_ctx_t *ctx)
{
    const tt_tp_env_t *env = ctx->env;
    int me = ctx->local_index[env->rank], first = -1;
    for (int r = 0; r < env->nranks && first < 0; r++)
        if (ctx->local_index[r] == 0)
            first = r;
    snprintf(ctx->name, sizeof ctx->name, TT_SHM_NAME_FORMAT, (unsigned long long)env->key_tag, first);
    tutti_status_t st = ctx->nlocal > 1 && me == 0 ? host_create(ctx) : TUTTI_SUCCESS;
    if (st)
        return st; /* set-up fails here, and the others learn why */
    TT_TRY(env->barrier(env->barrier_arg));
    if (ctx->nlocal > 1 && me > 0)
        st = host_map(ctx);
    tutti_status_t bst = env->barrier(env->barrier_arg);
    if (ctx->nlocal > 1 && me == 0)
        shm_unlink(ctx->name);
    if (st || bst || ctx->nlocal < 2)
        return st ? st : bst;
    uint64_t pool = ((tt_shm_host_t *)ctx->host)->pool_bytes;
    ctx->pool = (tt_shm_pool_t){.base = TT_SHM_HOST_HDR + (uint64_t)me * pool,
                                .size = pool,
                                .top = TT_SHM_POOL_HDR,
                                .todo = ctx->nlocal - 1};
    keep_least(ctx);
    ctx->seg = (tt_shm_seg_hdr_t *)(ctx->host + ctx->pool.base);
    ctx->seg->owner = env->rank;
    ctx->seg->pid = (int32_t)getpid();
    return TUTTI_SUCCESS;
}

void tt_shm_host_unmap(tt_shm_ctx_t *ctx)
{
    if (ctx->host) {
        munmap(ctx->host, ctx->bytes);
        close(ctx->fd);
    }
    ctx->host = NULL;
    free(ctx->pool.free);
    ctx->pool.free = NULL;
}

static size_t smaller_slot(size_t slot)
{
    size_t half = slot / 2 / TT_LOCAL_LINE * TT_LOCAL_LINE;
    return half < TT_SHM_MIN_SLOT ? TT_SHM_MIN_SLOT : half;
}

/* The slot size a new peer gets: full while the pool could still give
 * every peer left as much; else at most a quarter of what is left, and
 * never so much that the peers still to come could not each have the
 * smallest queues (the first peers a rank meets are not always the ones
 * it talks to most). */
static size_t slot_for(const tt_shm_ctx_t *ctx, uint64_t left)
{
    size_t slot = ctx->slot_bytes;
    uint64_t todo = (uint64_t)(ctx->pool.todo > 1 ? ctx->pool.todo : 1);
    uint64_t full = tt_shm_region_bytes(ctx->nchannels, ctx->nslots, slot);
    uint64_t least =
        round_up(tt_shm_region_bytes(ctx->nchannels, ctx->nslots, TT_SHM_MIN_SLOT), TT_LOCAL_LINE);
    if (left >= full * todo)
        return slot;
    uint64_t cap = left / 4;
    if (left > (todo - 1) * least && left - (todo - 1) * least < cap)
        cap = left - (todo - 1) * least;
    while (slot > TT_SHM_MIN_SLOT && tt_shm_region_bytes(ctx->nchannels, ctx->nslots, slot) > cap)
        slot = smaller_slot(slot);
    return slot;
}

/* Where need bytes fit: room given back first (*used set), then the
 * pool's top; 0 if nowhere. */
static uint64_t place(tt_shm_pool_t *p, uint64_t need, int *used)
{
    for (int i = 0; i < p->nfree; i++)
        if (p->free[i].len >= need) {
            uint64_t off = p->free[i].off;
            *used = 1;
            p->free[i].off += need;
            if ((p->free[i].len -= need) == 0)
                p->free[i] = p->free[--p->nfree];
            return off;
        }
    if (p->top + need > p->size)
        return 0;
    *used = p->top < p->high; /* a region given back lowered the top */
    p->top += need;
    if (p->top > p->high)
        p->high = p->top;
    return p->base + p->top - need;
}

tutti_status_t tt_shm_region_take(tt_shm_ctx_t *ctx, int peer, tt_shm_region_t *r)
{
    tt_shm_pool_t *p = &ctx->pool;
    if (!ctx->host)
        return TUTTI_ERR_UNSUPPORTED;
    uint64_t left = p->size - p->top, off = 0, need = 0;
    int used = 0;
    for (int i = 0; i < p->nfree; i++)
        left += p->free[i].len;
    /* What is left may lie in pieces (regions of pairs that both sides
     * asked for at once are given back): smaller slots until one fits. */
    size_t slot = slot_for(ctx, left);
    for (;; slot = smaller_slot(slot)) {
        need = round_up(tt_shm_region_bytes(ctx->nchannels, ctx->nslots, slot), TT_LOCAL_LINE);
        if ((off = place(p, need, &used)) != 0 || slot == TT_SHM_MIN_SLOT)
            break;
    }
    if (!off && (off = kept_for(ctx, peer)) != 0) {
        slot = TT_SHM_MIN_SLOT;
        need = p->least;
        used = 1;
    }
    if (!off) {
        TT_INFO(
            TT_SUB_NET,
            "shm: rank %d's pool (%llu bytes) has no room left for rank %d's queues (%llu bytes left in %d "
            "pieces, %d peers still to come)",
            ctx->env->rank, (unsigned long long)p->size, peer, (unsigned long long)left, p->nfree + 1,
            p->todo);
        return TUTTI_ERR_UNSUPPORTED;
    }
    p->todo--;
    *r = (tt_shm_region_t){
        .offset = off, .slot_bytes = slot, .nslots = ctx->nslots, .nchannels = ctx->nchannels};
    int err = posix_fallocate(ctx->fd, (off_t)off, (off_t)need);
    if (err) {
        TT_WARN(TT_SUB_NET, "shm: reserving %llu bytes in /dev/shm for rank %d's queues failed: %s%s; the pair goes "
                "over the next transport",
                (unsigned long long)need, peer, strerror(err), err == ENOSPC ? " (another job took the room?)" : "");
        tt_shm_region_give_back(ctx, r);
        return TUTTI_ERR_UNSUPPORTED;
    }
    /* Fresh pages read zero: clearing them would allocate the whole
     * region, most of which small messages never touch. */
    if (used)
        memset(ctx->host + off, 0, need);
    if (slot < ctx->slot_bytes)
        TT_DEBUG(TT_SUB_NET, "shm: rank %d gives rank %d slots of %zu bytes", ctx->env->rank, peer, slot);
    return TUTTI_SUCCESS;
}

void tt_shm_region_give_back(tt_shm_ctx_t *ctx, const tt_shm_region_t *r)
{
    tt_shm_pool_t *p = &ctx->pool;
    tt_shm_hole_t h = {r->offset,
                       round_up(tt_shm_region_bytes(r->nchannels, r->nslots, r->slot_bytes), TT_LOCAL_LINE)};
    p->todo++;
    if (p->least && r->offset >= p->base + p->size)
        return; /* a peer's own region: free again, no hole */
    /* Merged with the holes it touches, so that the pool does not crumble
     * into pieces too small for any peer's queues. */
    for (int i = 0; i < p->nfree;)
        if (p->free[i].off + p->free[i].len == h.off || h.off + h.len == p->free[i].off) {
            h = (tt_shm_hole_t){h.off < p->free[i].off ? h.off : p->free[i].off, h.len + p->free[i].len};
            p->free[i] = p->free[--p->nfree];
            i = 0;
        } else {
            i++;
        }
    if (h.off + h.len == p->base + p->top)
        p->top -= h.len;
    else if (!tt_grow((void **)&p->free, &p->free_cap, p->nfree + 1, sizeof *p->free))
        p->free[p->nfree++] = h;
}
