/* SPDX-License-Identifier: MIT */
/* The stream model of fake_gpu.h: a "GPU" thread runs the streams' operations. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_gpu.h"

#define MAX_RANGES 4096
/* A wait this long is taken for one that can never end. A wait for a
 * collective also waits for its peers, which a loaded 2-core CI machine can
 * keep off the CPU for seconds (5 s was too short there); a real hang still
 * ends the rank well inside every test's limit. */
#define WAIT_LIMIT_S 30
#define WAIT_LIMIT_NS (WAIT_LIMIT_S * 1000000000LL)
#define TT_STR_(x) #x
#define TT_STR(x) TT_STR_(x)

typedef enum { OP_COPY, OP_SIGNAL, OP_GATE, OP_RECORD, OP_WAIT, OP_HOLD } op_kind_t;

typedef struct fevent {
    int device;
    unsigned recorded, completed; /* generations */
} fevent_t;

typedef struct fstream fstream_t;

typedef struct op {
    struct op *next_in_queue;
    fstream_t *stream;
    op_kind_t kind;
    void *dst;
    const void *src;
    size_t bytes;
    unsigned *word, value;
    fevent_t *ev;
    unsigned gen;
    int done;
} op_t;

struct fstream {
    int device, library, capturing, hwq, pending;
    char log[512];
    size_t nlog;
};

static struct {
    pid_t pid;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t gpu;
    tt_fake_mode_t mode;
    op_t *queue_head[64], *queue_tail[64]; /* hardware queues */
    int nqueues;
    fstream_t *defaults[8];
    fstream_t *streams[256];
    int nstreams;
    int held, library_ops, order, first_gate, preloaded_at, fail_copy;
    struct {
        char *p;
        size_t bytes;
        int device, pinned, freed;
    } ranges[MAX_RANGES];
    int nranges;
} g;

static __thread int current_device;

static void violation(const char *fmt, const char *detail)
{
    fprintf(stderr, "fake GPU: ");
    fprintf(stderr, fmt, detail);
    fprintf(stderr, "\n");
    _exit(90);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int range_of(const void *p)
{
    for (int i = g.nranges - 1; i >= 0; i--)
        if ((const char *)p >= g.ranges[i].p && (const char *)p < g.ranges[i].p + g.ranges[i].bytes)
            return i;
    return -1;
}

static void check_live(const void *p, const char *what)
{
    int r = range_of(p);
    if (r >= 0 && g.ranges[r].freed)
        violation("%s touches pinned memory that was freed", what);
}

static int runnable(const op_t *o)
{
    switch (o->kind) {
    case OP_GATE: return (int)(__atomic_load_n(o->word, __ATOMIC_ACQUIRE) - o->value) >= 0;
    case OP_WAIT: return (int)(o->ev->completed - o->gen) >= 0;
    case OP_HOLD: return !g.held;
    default: return 1;
    }
}

static void run(op_t *o)
{
    switch (o->kind) {
    case OP_COPY:
        check_live(o->dst, "a copy");
        check_live(o->src, "a copy");
        memcpy(o->dst, o->src, o->bytes);
        break;
    case OP_SIGNAL:
        check_live(o->word, "a signal");
        __atomic_store_n(o->word, o->value, __ATOMIC_RELEASE);
        break;
    case OP_GATE: check_live(o->word, "a gate"); break;
    case OP_RECORD: o->ev->completed = o->gen; break;
    default: break;
    }
}

/* Runs the head of every hardware queue while it can. */
static void *gpu_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.lock);
    for (;;) {
        int progressed = 0;
        for (int q = 0; q < g.nqueues; q++) {
            op_t *o = g.queue_head[q];
            if (!o || !runnable(o))
                continue;
            if (g.mode.op_delay_us) {
                pthread_mutex_unlock(&g.lock);
                usleep((useconds_t)g.mode.op_delay_us);
                pthread_mutex_lock(&g.lock);
            }
            run(o);
            g.queue_head[q] = o->next_in_queue;
            if (!g.queue_head[q])
                g.queue_tail[q] = NULL;
            o->stream->pending--;
            o->done = 1; /* freed by whoever waits for it, or leaked: the model is small */
            progressed = 1;
            pthread_cond_broadcast(&g.changed);
        }
        if (!progressed) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&g.changed, &g.lock, &ts); /* gate words change without a signal */
        }
    }
    return NULL;
}

static void start(void)
{
    if (g.pid == getpid())
        return;
    tt_fake_mode_t mode = g.mode;
    memset(&g, 0, sizeof g);
    g.mode = mode;
    g.pid = getpid();
    g.first_gate = g.preloaded_at = -1;
    pthread_mutex_init(&g.lock, NULL);
    pthread_cond_init(&g.changed, NULL);
    pthread_create(&g.gpu, NULL, gpu_main, NULL);
    pthread_detach(g.gpu);
}

static fstream_t *new_stream(int library)
{
    fstream_t *s = calloc(1, sizeof *s);
    s->device = current_device;
    s->library = library;
    s->hwq = g.mode.connections == 1 ? 0 : g.nqueues < 64 ? g.nqueues : 63;
    if (g.nqueues <= s->hwq)
        g.nqueues = s->hwq + 1;
    if (g.nstreams < 256)
        g.streams[g.nstreams++] = s;
    return s;
}

/* With the lock held: the stream for handle (NULL: the current device's default). */
static fstream_t *stream_of(void *handle, const char *what)
{
    fstream_t *s = handle;
    if (!s) {
        if (!g.defaults[current_device])
            g.defaults[current_device] = new_stream(0);
        s = g.defaults[current_device];
    }
    if (s->device != current_device)
        violation("%s on a stream of another device than the current one", what);
    return s;
}

static op_t *push(void *handle, op_kind_t kind, const char *what, char letter)
{
    fstream_t *s = stream_of(handle, what);
    op_t *o = calloc(1, sizeof *o);
    o->stream = s;
    o->kind = kind;
    if (s->nlog + 1 < sizeof s->log)
        s->log[s->nlog++] = letter;
    s->pending++;
    if (s->library)
        g.library_ops++;
    if (g.queue_tail[s->hwq])
        g.queue_tail[s->hwq]->next_in_queue = o;
    else
        g.queue_head[s->hwq] = o;
    g.queue_tail[s->hwq] = o;
    pthread_cond_broadcast(&g.changed);
    return o;
}

/* With the lock held: until o ran, at most WAIT_LIMIT_S. */
static void wait_op(op_t *o, const char *what)
{
    int64_t deadline = now_ns() + WAIT_LIMIT_NS;
    while (!o->done) {
        if (now_ns() > deadline)
            violation("%s waited more than " TT_STR(WAIT_LIMIT_S) " s: the stream can never get there", what);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&g.changed, &g.lock, &ts);
    }
}

/* ---- the runtime table ---- */

static int f_device_of(const void *ptr, int *device)
{
    start();
    pthread_mutex_lock(&g.lock);
    int r = range_of(ptr);
    *device = r >= 0 && !g.ranges[r].pinned ? g.ranges[r].device : -1;
    pthread_mutex_unlock(&g.lock);
    return *device < 0 ? 1 : 0;
}

static int f_enter(int device, int *prev)
{
    *prev = current_device;
    current_device = device;
    return 0;
}

static void f_leave(int prev)
{
    current_device = prev;
}

static int f_preload(void)
{
    start();
    pthread_mutex_lock(&g.lock);
    if (g.preloaded_at < 0)
        g.preloaded_at = g.order++;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int f_capturing(void *stream, int *yes)
{
    start();
    pthread_mutex_lock(&g.lock);
    int dev = current_device; /* a query of any device's stream is fine */
    fstream_t *s = stream;
    if (s)
        current_device = s->device;
    *yes = stream_of(stream, "a capture query")->capturing;
    current_device = dev;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static void add_range(void *p, size_t bytes, int device, int pinned)
{
    if (g.nranges == MAX_RANGES)
        violation("%s", "too many allocations for the model");
    g.ranges[g.nranges].p = p;
    g.ranges[g.nranges].bytes = bytes;
    g.ranges[g.nranges].device = device;
    g.ranges[g.nranges].pinned = pinned;
    g.ranges[g.nranges++].freed = 0;
}

/* While a stream is being captured, calls that may synchronise (memory
 * allocation, stream and event creation) would invalidate the capture. */
static void no_capture(const char *what)
{
    for (int i = 0; i < g.nstreams; i++)
        if (g.streams[i]->capturing)
            violation("%s while a stream is being captured (that invalidates the capture)", what);
}

static int f_host_alloc(size_t bytes, void **host, void **dev)
{
    start();
    pthread_mutex_lock(&g.lock);
    no_capture("a pinned allocation");
    pthread_mutex_unlock(&g.lock);
    *host = *dev = calloc(1, bytes ? bytes : 1);
    if (!*host)
        return 2;
    pthread_mutex_lock(&g.lock);
    add_range(*host, bytes, current_device, 1);
    pthread_mutex_unlock(&g.lock);
    return 0;
}

/* cudaFreeHost waits for the whole device: never while a gate is closed. */
static void f_host_free(void *host)
{
    pthread_mutex_lock(&g.lock);
    for (int q = 0; q < g.nqueues; q++)
        for (op_t *o = g.queue_head[q]; o; o = o->next_in_queue)
            if (o->kind == OP_GATE && !runnable(o))
                violation("%s",
                          "pinned memory freed while a gate holds a stream (that free waits for the device)");
    int r = range_of(host);
    if (r >= 0)
        g.ranges[r].freed = 1; /* the memory itself stays, so later touches are caught, not crashes */
    pthread_mutex_unlock(&g.lock);
}

static int f_dev_alloc(size_t bytes, void *stream, void **ptr)
{
    start();
    pthread_mutex_lock(&g.lock);
    stream_of(stream, "a stream-ordered allocation");
    no_capture("a device allocation");
    pthread_mutex_unlock(&g.lock);
    *ptr = tt_fake_gpu_malloc(bytes, current_device);
    return *ptr ? 0 : 2;
}

static void f_dev_free(void *ptr, void *stream)
{
    (void)ptr;
    (void)stream; /* stream-ordered: kept, as the model keeps all memory */
}

static int f_stream_create(void **stream)
{
    start();
    pthread_mutex_lock(&g.lock);
    no_capture("a stream creation");
    *stream = new_stream(1);
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static void f_stream_destroy(void *stream)
{
    (void)stream;
}

static int f_stream_sync(void *handle)
{
    pthread_mutex_lock(&g.lock);
    fstream_t *s = stream_of(handle, "a stream sync");
    int64_t deadline = now_ns() + WAIT_LIMIT_NS;
    while (s->pending) {
        if (now_ns() > deadline)
            violation("%s", "a stream sync waited more than " TT_STR(WAIT_LIMIT_S) " s: its stream is stuck");
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&g.changed, &g.lock, &ts);
    }
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int f_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    pthread_mutex_lock(&g.lock);
    if (g.fail_copy && --g.fail_copy == 0) {
        pthread_mutex_unlock(&g.lock);
        return 3; /* as a runtime refusing the copy */
    }
    op_t *o = push(stream, OP_COPY, "a copy", 'C');
    o->dst = dst;
    o->src = src;
    o->bytes = bytes;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int word_op(void *stream, unsigned *word, unsigned value, op_kind_t kind)
{
    pthread_mutex_lock(&g.lock);
    op_t *o = push(stream, kind, kind == OP_GATE ? "a gate" : "a signal", kind == OP_GATE ? 'G' : 'S');
    o->word = word;
    o->value = value;
    if (kind == OP_GATE && g.first_gate < 0)
        g.first_gate = g.order++;
    if (g.mode.launch_blocking)
        wait_op(o,
                kind == OP_GATE ? "a gate launched with launch blocking" : "a signal with launch blocking");
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int f_signal(void *stream, unsigned *dev, unsigned value)
{
    return word_op(stream, dev, value, OP_SIGNAL);
}

static int f_gate(void *stream, const unsigned *dev, unsigned ticket)
{
    return word_op(stream, (unsigned *)dev, ticket, OP_GATE);
}

static int f_event_create(void **event)
{
    fevent_t *e = calloc(1, sizeof *e);
    e->device = current_device;
    *event = e;
    return e ? 0 : 2;
}

static void f_event_destroy(void *event)
{
    (void)event; /* kept: a queued wait may still point at it in the model */
}

static int f_event_record(void *event, void *stream)
{
    fevent_t *e = event;
    pthread_mutex_lock(&g.lock);
    if (e->device != current_device)
        violation("%s", "an event of another device recorded");
    op_t *o = push(stream, OP_RECORD, "an event record", 'R');
    o->ev = e;
    o->gen = ++e->recorded;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int f_event_query(void *event, int *done)
{
    fevent_t *e = event;
    pthread_mutex_lock(&g.lock);
    *done = (int)(e->completed - e->recorded) >= 0;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int f_event_sync(void *event)
{
    fevent_t *e = event;
    pthread_mutex_lock(&g.lock);
    int64_t deadline = now_ns() + WAIT_LIMIT_NS;
    while ((int)(e->completed - e->recorded) < 0) {
        if (now_ns() > deadline)
            violation("%s", "an event sync waited more than " TT_STR(WAIT_LIMIT_S) " s");
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&g.changed, &g.lock, &ts);
    }
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int f_stream_wait(void *stream, void *event)
{
    fevent_t *e = event;
    pthread_mutex_lock(&g.lock);
    op_t *o = push(stream, OP_WAIT, "an event wait", 'W');
    o->ev = e;
    o->gen = e->recorded;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static const char *f_error(int code)
{
    return code == 1 ? "not device memory" : code == 2 ? "out of memory" : "fake GPU error";
}

static int f_out_of_memory(int code)
{
    return code == 2;
}

const tt_device_rt_t tt_fake_gpu = {
    .name = "fake GPU (test)",
    .device_of = f_device_of,
    .enter = f_enter,
    .leave = f_leave,
    .preload = f_preload,
    .capturing = f_capturing,
    .host_alloc = f_host_alloc,
    .host_free = f_host_free,
    .dev_alloc = f_dev_alloc,
    .dev_free = f_dev_free,
    .stream_create = f_stream_create,
    .stream_destroy = f_stream_destroy,
    .stream_sync = f_stream_sync,
    .copy = f_copy,
    .signal = f_signal,
    .gate = f_gate,
    .event_create = f_event_create,
    .event_destroy = f_event_destroy,
    .event_record = f_event_record,
    .event_query = f_event_query,
    .event_sync = f_event_sync,
    .stream_wait = f_stream_wait,
    .error = f_error,
    .out_of_memory = f_out_of_memory,
};

/* ---- what the tests drive ---- */

void tt_fake_gpu_mode(const tt_fake_mode_t *mode)
{
    g.mode = *mode;
}

void *tt_fake_gpu_malloc(size_t bytes, int device)
{
    start();
    void *p = calloc(1, bytes ? bytes : 1);
    pthread_mutex_lock(&g.lock);
    add_range(p, bytes, device, 0);
    pthread_mutex_unlock(&g.lock);
    return p;
}

void *tt_fake_gpu_stream(void)
{
    start();
    pthread_mutex_lock(&g.lock);
    fstream_t *s = new_stream(0);
    pthread_mutex_unlock(&g.lock);
    return s;
}

void tt_fake_gpu_hold(void *stream)
{
    start();
    pthread_mutex_lock(&g.lock);
    g.held = 1;
    push(stream, OP_HOLD, "a hold", 'H');
    pthread_mutex_unlock(&g.lock);
}

void tt_fake_gpu_fail_copy(int nth)
{
    start();
    pthread_mutex_lock(&g.lock);
    g.fail_copy = nth;
    pthread_mutex_unlock(&g.lock);
}

void tt_fake_gpu_release(void)
{
    pthread_mutex_lock(&g.lock);
    g.held = 0;
    pthread_cond_broadcast(&g.changed);
    pthread_mutex_unlock(&g.lock);
}

void tt_fake_gpu_capture(void *stream, int capturing)
{
    start();
    pthread_mutex_lock(&g.lock);
    stream_of(stream, "a capture")->capturing = capturing;
    pthread_mutex_unlock(&g.lock);
}

int tt_fake_gpu_current(void)
{
    return current_device;
}

void tt_fake_gpu_set_current(int device)
{
    current_device = device;
}

void tt_fake_gpu_log(void *stream, char *buf, size_t len)
{
    start();
    pthread_mutex_lock(&g.lock);
    fstream_t *s = stream_of(stream, "a log");
    snprintf(buf, len, "%.*s", (int)s->nlog, s->log);
    pthread_mutex_unlock(&g.lock);
}

int tt_fake_gpu_library_ops(void)
{
    return g.library_ops;
}

int tt_fake_gpu_first_gate(void)
{
    return g.first_gate;
}

int tt_fake_gpu_preloaded_at(void)
{
    return g.preloaded_at;
}
