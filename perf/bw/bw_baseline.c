/* SPDX-License-Identifier: MIT */
/*
 * Baselines for the verdicts, each a writer and a reader thread pinned
 * where the pair's ranks run. The reader times batches of messages while
 * the writer keeps ahead of it, as a link's receiver does, and the repeat
 * rule of the tables decides when the median is known.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bw_baseline.h"
#include "bw_pair.h"
#include "core/clock.h"
#include "core/sock.h"

#define SPINS_BEFORE_YIELD 1000
#define TCP_BATCH_BYTES ((size_t)4 << 20)

/* Spins until *v >= want, giving the CPU away now and then in case the
 * other thread shares it. */
static void wait_at_least(_Atomic uint64_t *v, uint64_t want)
{
    for (int spins = 0; atomic_load_explicit(v, memory_order_acquire) < want; spins++)
        if (spins % SPINS_BEFORE_YIELD == SPINS_BEFORE_YIELD - 1)
            sched_yield();
}

typedef struct {
    cpu_set_t cpus;
    char *slots, *src;
    size_t slot_bytes, bytes;
    int nslots;
    uint64_t chunks;                    /* per batch */
    _Atomic uint64_t written, read, go; /* chunks written, chunks read, batches asked for */
    _Atomic int stop;
} copy_pipe_t;

static size_t chunk_len(const copy_pipe_t *p, uint64_t c, size_t *off)
{
    size_t per_msg = (p->bytes + p->slot_bytes - 1) / p->slot_bytes, k = (size_t)(c % per_msg);
    *off = k * p->slot_bytes;
    return p->bytes - *off < p->slot_bytes ? p->bytes - *off : p->slot_bytes;
}

static void *copy_writer(void *arg)
{
    copy_pipe_t *p = arg;
    pthread_setaffinity_np(pthread_self(), sizeof p->cpus, &p->cpus);
    uint64_t w = 0;
    for (uint64_t batch = 1;; batch++) {
        wait_at_least(&p->go, batch);
        if (atomic_load(&p->stop))
            return NULL;
        for (uint64_t end = w + p->chunks; w < end; w++) {
            wait_at_least(&p->read, w + 1 > (uint64_t)p->nslots ? w + 1 - (uint64_t)p->nslots : 0);
            size_t off, len = chunk_len(p, w, &off);
            memcpy(p->slots + (w % (uint64_t)p->nslots) * p->slot_bytes, p->src + off, len);
            atomic_store_explicit(&p->written, w + 1, memory_order_release);
        }
    }
}

/* Runs batches until rule is met; the calling thread reads into dst. */
static void copy_batches(copy_pipe_t *p, char *dst, const tt_repeat_rule_t *rule, double *samples, int *n)
{
    uint64_t r = 0;
    double elapsed = 0;
    int stable = 0;
    *n = 0;
    for (int batch = 0;; batch++) {
        int64_t t0 = tt_now_ns();
        atomic_store(&p->go, (uint64_t)batch + 1);
        for (uint64_t end = r + p->chunks; r < end; r++) {
            wait_at_least(&p->written, r + 1);
            size_t off, len = chunk_len(p, r, &off);
            memcpy(dst + off, p->slots + (r % (uint64_t)p->nslots) * p->slot_bytes, len);
            atomic_store_explicit(&p->read, r + 1, memory_order_release);
        }
        double s = (double)(tt_now_ns() - t0) * 1e-9;
        elapsed += s;
        if (batch == 0) /* warms the caches and the pages up */
            continue;
        uint64_t msgs = p->chunks / ((p->bytes + p->slot_bytes - 1) / p->slot_bytes);
        samples[(*n)++] = (double)(msgs * p->bytes) / s / 1e9;
        if (tt_stats_enough(rule, samples, *n, elapsed, &stable))
            break;
    }
    atomic_store(&p->stop, 1);
    atomic_store(&p->go, UINT64_MAX);
}

int tt_bw_copy_baseline(const cpu_set_t *writer, const cpu_set_t *reader, size_t bytes, size_t slot_bytes,
                        int nslots, const tt_repeat_rule_t *rule, tt_stats_t *out)
{
    copy_pipe_t p = {.cpus = *writer, .slot_bytes = slot_bytes, .bytes = bytes ? bytes : 1, .nslots = nslots};
    p.chunks = (uint64_t)tt_bw_batch_count(TT_BW_UNI, p.bytes) * ((p.bytes + slot_bytes - 1) / slot_bytes);
    p.slots = malloc((size_t)nslots * slot_bytes);
    p.src = malloc(p.bytes);
    char *dst = malloc(p.bytes);
    double *samples = malloc((size_t)rule->max_n * sizeof *samples);
    cpu_set_t saved;
    int rc = -1, n = 0, restore = sched_getaffinity(0, sizeof saved, &saved) == 0;
    pthread_t t;
    if (p.slots && p.src && dst && samples && pthread_create(&t, NULL, copy_writer, &p) == 0) {
        memset(p.src, 1, p.bytes);
        memset(dst, 2, p.bytes);
        sched_setaffinity(0, sizeof *reader, reader);
        copy_batches(&p, dst, rule, samples, &n);
        pthread_join(t, NULL);
        if (restore)
            sched_setaffinity(0, sizeof saved, &saved);
        tt_stats_compute(samples, n, out);
        rc = n > 0 ? 0 : -1;
    }
    free(p.slots);
    free(p.src);
    free(dst);
    free(samples);
    return rc;
}

typedef struct {
    int fd;
    char *buf;
    size_t bytes;
    cpu_set_t cpus;
    _Atomic int stop;
} stream_end_t;

static void *stream_writer(void *arg)
{
    stream_end_t *w = arg;
    pthread_setaffinity_np(pthread_self(), sizeof w->cpus, &w->cpus);
    while (!atomic_load(&w->stop))
        if (send(w->fd, w->buf, w->bytes, 0) <= 0)
            break;
    shutdown(w->fd, SHUT_WR);
    return NULL;
}

/* The reader's batches of at least TCP_BATCH_BYTES; then drains to the end. */
static void stream_batches(stream_end_t *w, int fd, char *buf, const tt_repeat_rule_t *rule, double *samples,
                           int *n)
{
    size_t len = w->bytes > TCP_BATCH_BYTES ? w->bytes : TCP_BATCH_BYTES;
    double elapsed = 0;
    int stable = 0, done = 0;
    *n = 0;
    for (int batch = 0; !done; batch++) {
        size_t got = 0;
        int64_t t0 = tt_now_ns();
        for (ssize_t k; got < len && (k = recv(fd, buf, w->bytes, 0)) > 0;)
            got += (size_t)k;
        double s = (double)(tt_now_ns() - t0) * 1e-9;
        elapsed += s;
        if (got < len)
            break;
        if (batch > 0) { /* the first one starts the stream */
            samples[(*n)++] = (double)got / s / 1e9;
            done = tt_stats_enough(rule, samples, *n, elapsed, &stable);
        }
    }
    atomic_store(&w->stop, 1);
    while (recv(fd, buf, w->bytes, 0) > 0)
        ;
}

int tt_bw_tcp_baseline(const cpu_set_t *writer, const cpu_set_t *reader, size_t bytes, int bufbytes,
                       const tt_repeat_rule_t *rule, tt_stats_t *out)
{
    tt_sockaddr_t addr;
    int lfd = -1, a = -1, b = -1, rc = -1, n = 0;
    if (tt_sock_parse_addr("127.0.0.1:0", &addr) || tt_sock_listen(&addr, &lfd))
        return -1;
    int64_t deadline = tt_now_ms() + 5000;
    stream_end_t w = {.cpus = *writer, .bytes = bytes ? bytes : 1};
    char *rbuf = malloc(w.bytes);
    double *samples = malloc((size_t)rule->max_n * sizeof *samples);
    w.buf = calloc(1, w.bytes);
    cpu_set_t saved;
    int restore = sched_getaffinity(0, sizeof saved, &saved) == 0;
    pthread_t t;
    if (w.buf && rbuf && samples && !tt_sock_connect(&addr, deadline, &a) &&
        !tt_sock_accept(lfd, deadline, &b)) {
        tt_sock_tune(a, bufbytes);
        tt_sock_tune(b, bufbytes);
        w.fd = a;
        sched_setaffinity(0, sizeof *reader, reader);
        if (pthread_create(&t, NULL, stream_writer, &w) == 0) {
            stream_batches(&w, b, rbuf, rule, samples, &n);
            pthread_join(t, NULL);
            tt_stats_compute(samples, n, out);
            rc = n > 0 ? 0 : -1;
        }
        if (restore)
            sched_setaffinity(0, sizeof saved, &saved);
    }
    free(w.buf);
    free(rbuf);
    free(samples);
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    close(lfd);
    return rc;
}
