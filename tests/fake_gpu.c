/* SPDX-License-Identifier: MIT */
/* The stream model of fake_gpu.h: a "GPU" thread runs the streams' operations. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_gpu.h"
#include "reduce/reduce.h"

#define MAX_RANGES 4096
#define MAX_QUEUES 64
#define DEFAULT_QUEUES 8 /* CUDA_DEVICE_MAX_CONNECTIONS' default */
/* A wait this long is taken for one that can never end. A wait for a
 * collective also waits for its peers, which a loaded 2-core CI machine can
 * keep off the CPU for seconds (5 s was too short there); a real hang still
 * ends the rank well inside every test's limit. */
#define WAIT_LIMIT_S 30
#define WAIT_LIMIT_NS (WAIT_LIMIT_S * 1000000000LL)
#define TT_STR_(x) #x
#define TT_STR(x) TT_STR_(x)

typedef enum {
    OP_COPY,
    OP_SIGNAL,
    OP_GATE,
    OP_RECORD,
    OP_WAIT,
    OP_HOLD,
    OP_REDUCE,
    OP_AVG,
    OP_SCALE
} op_kind_t;

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
    const void *b; /* reductions: the second operand; scaling: the scalar on the device */
    size_t n;
    tutti_dtype_t dtype;
    tutti_op_t op;
    unsigned char k[8]; /* scaling: the scalar as it was when queued */
    fevent_t *ev;
    unsigned gen;
    int done;
} op_t;

struct fstream {
    int device, hwq, pending;
    int capturing, capture_mode; /* a capture, begun in capture_mode by capture_thread */
    pthread_t capture_thread;
    char log[512];
    size_t nlog;
};

static struct {
    pid_t pid;
    pthread_mutex_t lock; /* the model's state */
    pthread_mutex_t ctx;  /* the context lock that every runtime call passes */
    pthread_cond_t changed;
    pthread_t gpu;
    tt_fake_mode_t mode;
    op_t *queue_head[MAX_QUEUES], *queue_tail[MAX_QUEUES]; /* hardware queues */
    int nqueues, next_queue;
    fstream_t *defaults[8];
    fstream_t *streams[256];
    int nstreams;
    int held, order, first_gate, preloaded_at, fail_copy;
    pthread_t app[8]; /* the application's threads: every other one's runtime calls are counted */
    int napp, foreign;
    char first_foreign[64];
    struct {
        char *p;
        size_t bytes;
        int device, pinned, freed;
    } ranges[MAX_RANGES];
    int nranges;
} g;

static __thread int current_device;
static __thread int capture_mode; /* this thread's (TT_FAKE_CAPTURE_GLOBAL unless exchanged) */
static __thread const char *said_text = "";

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

/* With g.lock held: until pred(arg) holds, at most WAIT_LIMIT_S, else what
 * could never end is reported. */
static void wait_until(int (*pred)(const void *), const void *arg, const char *what)
{
    int64_t deadline = now_ns() + WAIT_LIMIT_NS;
    while (!pred(arg)) {
        if (now_ns() > deadline)
            violation("%s waited more than " TT_STR(WAIT_LIMIT_S) " s: it can never end", what);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&g.changed, &g.lock, &ts);
    }
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
    case OP_REDUCE: tt_reduce_get(o->dtype, o->op)(o->dst, o->src, o->b, o->n); break;
    case OP_AVG: tt_reduce_avg_finish(o->dst, o->n, o->dtype, (int)o->value); break;
    case OP_SCALE: tt_reduce_scale(o->dst, o->src, o->n, o->dtype, o->b ? o->b : o->k); break;
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
    g.app[g.napp++] = pthread_self(); /* the thread that starts the model is the application's */
    g.nqueues = mode.connections > 0 && mode.connections <= MAX_QUEUES ? mode.connections : DEFAULT_QUEUES;
    pthread_mutex_init(&g.lock, NULL);
    pthread_mutex_init(&g.ctx, NULL);
    pthread_cond_init(&g.changed, NULL);
    pthread_create(&g.gpu, NULL, gpu_main, NULL);
    pthread_detach(g.gpu);
}

/* Every runtime call: the model running, and the context lock passed. */
static void enter_runtime(void)
{
    start();
    pthread_mutex_lock(&g.ctx);
    pthread_mutex_unlock(&g.ctx);
}

static int device_idle(const void *arg)
{
    (void)arg;
    for (int q = 0; q < g.nqueues; q++)
        if (g.queue_head[q])
            return 0;
    return 1;
}

/* A lazy module load or an implicit synchronisation point: holding the
 * context lock, until every operation queued on the device has run. */
static void drain_device(const char *what)
{
    start();
    pthread_mutex_lock(&g.ctx);
    pthread_mutex_lock(&g.lock);
    wait_until(device_idle, NULL, what);
    pthread_mutex_unlock(&g.lock);
    pthread_mutex_unlock(&g.ctx);
}

static fstream_t *new_stream(void)
{
    fstream_t *s = calloc(1, sizeof *s);
    s->device = current_device;
    s->hwq = g.next_queue++ % g.nqueues; /* round-robin, as CUDA hands out its connections */
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
            g.defaults[current_device] = new_stream();
        s = g.defaults[current_device];
    }
    if (s->device != current_device)
        violation("%s on a stream of another device than the current one", what);
    return s;
}

/* With the lock held: a call that may synchronise (CUDA's "potentially
 * unsafe" calls) breaks a capture that forbids it on this thread. */
static void unsafe(const char *what)
{
    if (capture_mode == TT_FAKE_CAPTURE_RELAXED)
        return;
    pthread_t self = pthread_self();
    for (int i = 0; i < g.nstreams; i++) {
        const fstream_t *s = g.streams[i];
        if (!s->capturing || s->capture_mode == TT_FAKE_CAPTURE_RELAXED)
            continue;
        int mine = pthread_equal(s->capture_thread, self);
        if (mine || (s->capture_mode == TT_FAKE_CAPTURE_GLOBAL && capture_mode == TT_FAKE_CAPTURE_GLOBAL))
            violation("%s while a stream is being captured (that invalidates the capture)", what);
    }
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
    if (g.queue_tail[s->hwq])
        g.queue_tail[s->hwq]->next_in_queue = o;
    else
        g.queue_head[s->hwq] = o;
    g.queue_tail[s->hwq] = o;
    pthread_cond_broadcast(&g.changed);
    return o;
}

static int op_done(const void *arg)
{
    return ((const op_t *)arg)->done;
}

/* ---- the runtime table ---- */

/* A call of the table: the model running, the context lock passed, and
 * the calling thread noted when it is not the application's. */
static void runtime_call(const char *what)
{
    enter_runtime();
    pthread_t self = pthread_self();
    pthread_mutex_lock(&g.lock);
    int app = 0;
    for (int i = 0; i < g.napp && !app; i++)
        app = pthread_equal(g.app[i], self);
    if (!app && g.foreign++ == 0)
        snprintf(g.first_foreign, sizeof g.first_foreign, "%s", what);
    pthread_mutex_unlock(&g.lock);
}

static tutti_status_t refuse(const char *words, tutti_status_t st)
{
    said_text = words;
    return st;
}

static tutti_status_t f_usable(char *why, size_t len)
{
    (void)why;
    (void)len;
    return TUTTI_SUCCESS;
}

static tutti_status_t f_device_of(const void *ptr, int *device)
{
    runtime_call("a pointer query");
    pthread_mutex_lock(&g.lock);
    int r = range_of(ptr);
    *device = r >= 0 && !g.ranges[r].pinned ? g.ranges[r].device : -1;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_enter(int device, int *prev)
{
    runtime_call("making a device current");
    *prev = current_device;
    current_device = device;
    return TUTTI_SUCCESS;
}

static void f_leave(int prev)
{
    current_device = prev;
}

static tutti_status_t f_relax(int *prev)
{
    *prev = capture_mode;
    capture_mode = TT_FAKE_CAPTURE_RELAXED;
    return TUTTI_SUCCESS;
}

static void f_unrelax(int prev)
{
    capture_mode = prev;
}

static tutti_status_t f_preload(void)
{
    runtime_call("loading the kernels");
    pthread_mutex_lock(&g.lock);
    if (g.preloaded_at < 0)
        g.preloaded_at = g.order++;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_capturing(void *stream, int *yes)
{
    runtime_call("a capture query");
    pthread_mutex_lock(&g.lock);
    int dev = current_device; /* a query of any device's stream is fine */
    fstream_t *s = stream;
    if (s)
        current_device = s->device;
    *yes = stream_of(stream, "a capture query")->capturing;
    current_device = dev;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
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

/* A pinned allocation synchronises the device (CUDA's implicit
 * synchronisation points), under the context lock. */
static tutti_status_t f_host_alloc(size_t bytes, void **host, void **dev)
{
    runtime_call("a pinned allocation");
    pthread_mutex_lock(&g.lock);
    unsafe("a pinned allocation");
    pthread_mutex_unlock(&g.lock);
    drain_device("a pinned allocation (a synchronisation point)");
    *host = *dev = calloc(1, bytes ? bytes : 1);
    if (!*host)
        return refuse("out of memory", TUTTI_ERR_NO_MEMORY);
    pthread_mutex_lock(&g.lock);
    add_range(*host, bytes, current_device, 1);
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

/* cudaFreeHost waits for the whole device: never while a gate is closed. */
static void f_host_free(void *host)
{
    runtime_call("a pinned free");
    pthread_mutex_lock(&g.lock);
    unsafe("a pinned free");
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

static tutti_status_t f_dev_alloc(size_t bytes, void *stream, void **ptr)
{
    runtime_call("a device allocation");
    pthread_mutex_lock(&g.lock);
    stream_of(stream, "a stream-ordered allocation");
    unsafe("a device allocation");
    pthread_mutex_unlock(&g.lock);
    *ptr = tt_fake_gpu_malloc(bytes, current_device);
    return *ptr ? TUTTI_SUCCESS : refuse("out of memory", TUTTI_ERR_NO_MEMORY);
}

static void f_dev_free(void *ptr, void *stream)
{
    runtime_call("a device free");
    (void)ptr;
    (void)stream; /* stream-ordered: kept, as the model keeps all memory */
}

static int stream_idle(const void *arg)
{
    return ((const fstream_t *)arg)->pending == 0;
}

static tutti_status_t f_stream_sync(void *handle)
{
    runtime_call("a stream sync");
    pthread_mutex_lock(&g.lock);
    fstream_t *s = stream_of(handle, "a stream sync");
    unsafe("a stream sync");
    wait_until(stream_idle, s, "a stream sync");
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    runtime_call("a copy");
    pthread_mutex_lock(&g.lock);
    if (g.fail_copy && --g.fail_copy == 0) {
        pthread_mutex_unlock(&g.lock);
        return refuse("fake GPU error (a copy refused)", TUTTI_ERR_SYSTEM);
    }
    op_t *o = push(stream, OP_COPY, "a copy", 'C');
    o->dst = dst;
    o->src = src;
    o->bytes = bytes;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t word_op(void *stream, unsigned *word, unsigned value, op_kind_t kind)
{
    runtime_call(kind == OP_GATE ? "a gate" : "a signal");
    pthread_mutex_lock(&g.lock);
    op_t *o = push(stream, kind, kind == OP_GATE ? "a gate" : "a signal", kind == OP_GATE ? 'G' : 'S');
    o->word = word;
    o->value = value;
    if (kind == OP_GATE && g.first_gate < 0)
        g.first_gate = g.order++;
    if (g.mode.launch_blocking)
        wait_until(op_done, o,
                   kind == OP_GATE ? "a gate launched with launch blocking"
                                   : "a signal with launch blocking");
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_signal(void *stream, unsigned *dev, unsigned value)
{
    return word_op(stream, dev, value, OP_SIGNAL);
}

static tutti_status_t f_gate(void *stream, const unsigned *dev, unsigned value)
{
    return word_op(stream, (unsigned *)dev, value, OP_GATE);
}

/* A kernel: the model runs the CPU's code for it on the "GPU" thread. */
static op_t *kernel(void *stream, op_kind_t kind, void *dst, size_t n, tutti_dtype_t dtype)
{
    runtime_call("a kernel launch");
    pthread_mutex_lock(&g.lock);
    op_t *o = push(stream, kind, "a kernel", 'K');
    o->dst = dst;
    o->n = n;
    o->dtype = dtype;
    return o; /* with the lock held */
}

static tutti_status_t f_reduce(void *dst, const void *a, const void *b, size_t n, tutti_dtype_t dtype,
                               tutti_op_t op, void *stream)
{
    op_t *o = kernel(stream, OP_REDUCE, dst, n, dtype);
    o->src = a;
    o->b = b;
    o->op = op;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks, void *stream)
{
    op_t *o = kernel(stream, OP_AVG, buf, n, dtype);
    o->value = (unsigned)nranks;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_scale(void *dst, const void *src, size_t n, tutti_dtype_t dtype, const void *k_dev,
                              const void *k_host, void *stream)
{
    op_t *o = kernel(stream, OP_SCALE, dst, n, dtype);
    o->src = src;
    o->b = k_dev;
    if (!k_dev)
        memcpy(o->k, k_host, tutti_dtype_size(dtype));
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_event_create(void **event)
{
    runtime_call("an event creation");
    fevent_t *e = calloc(1, sizeof *e);
    if (!e)
        return refuse("out of memory", TUTTI_ERR_NO_MEMORY);
    e->device = current_device;
    *event = e;
    return TUTTI_SUCCESS;
}

static void f_event_destroy(void *event)
{
    runtime_call("an event destruction");
    (void)event; /* kept: a queued wait may still point at it in the model */
}

static tutti_status_t f_event_record(void *event, void *stream)
{
    runtime_call("an event record");
    fevent_t *e = event;
    pthread_mutex_lock(&g.lock);
    if (e->device != current_device)
        violation("%s", "an event of another device recorded");
    op_t *o = push(stream, OP_RECORD, "an event record", 'R');
    o->ev = e;
    o->gen = ++e->recorded;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_event_query(void *event, int *done)
{
    runtime_call("an event query");
    fevent_t *e = event;
    pthread_mutex_lock(&g.lock);
    unsafe("an event query");
    *done = (int)(e->completed - e->recorded) >= 0;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static int event_done(const void *arg)
{
    const fevent_t *e = arg;
    return (int)(e->completed - e->recorded) >= 0;
}

static tutti_status_t f_event_sync(void *event)
{
    runtime_call("an event sync");
    pthread_mutex_lock(&g.lock);
    unsafe("an event sync");
    wait_until(event_done, event, "an event sync");
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_stream_wait(void *stream, void *event)
{
    runtime_call("an event wait");
    fevent_t *e = event;
    pthread_mutex_lock(&g.lock);
    op_t *o = push(stream, OP_WAIT, "an event wait", 'W');
    o->ev = e;
    o->gen = e->recorded;
    pthread_mutex_unlock(&g.lock);
    return TUTTI_SUCCESS;
}

static const char *f_said(void)
{
    return said_text;
}

const tt_device_rt_t tt_fake_gpu = {
    .name = "fake GPU (test)",
    .usable = f_usable,
    .device_of = f_device_of,
    .enter = f_enter,
    .leave = f_leave,
    .relax = f_relax,
    .unrelax = f_unrelax,
    .preload = f_preload,
    .capturing = f_capturing,
    .host_alloc = f_host_alloc,
    .host_free = f_host_free,
    .dev_alloc = f_dev_alloc,
    .dev_free = f_dev_free,
    .stream_sync = f_stream_sync,
    .copy = f_copy,
    .signal = f_signal,
    .gate = f_gate,
    .reduce = f_reduce,
    .avg_finish = f_avg_finish,
    .scale = f_scale,
    .event_create = f_event_create,
    .event_destroy = f_event_destroy,
    .event_record = f_event_record,
    .event_query = f_event_query,
    .event_sync = f_event_sync,
    .stream_wait = f_stream_wait,
    .said = f_said,
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
    fstream_t *s = new_stream();
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

void tt_fake_gpu_begin_capture(void *stream, int mode)
{
    start();
    pthread_mutex_lock(&g.lock);
    fstream_t *s = stream_of(stream, "a capture");
    s->capturing = 1;
    s->capture_mode = mode;
    s->capture_thread = pthread_self();
    pthread_mutex_unlock(&g.lock);
}

void tt_fake_gpu_capture(void *stream, int capturing)
{
    if (capturing) {
        tt_fake_gpu_begin_capture(stream, TT_FAKE_CAPTURE_GLOBAL);
        return;
    }
    pthread_mutex_lock(&g.lock);
    stream_of(stream, "a capture")->capturing = 0;
    pthread_mutex_unlock(&g.lock);
}

void tt_fake_gpu_exchange_mode(int *mode)
{
    int was = capture_mode;
    capture_mode = *mode;
    *mode = was;
}

void tt_fake_gpu_lazy_load(void)
{
    drain_device("a lazy module load");
}

void tt_fake_gpu_runtime_call(const char *what)
{
    runtime_call(what);
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

void tt_fake_gpu_app_thread(void)
{
    start();
    pthread_mutex_lock(&g.lock);
    if (g.napp < 8)
        g.app[g.napp++] = pthread_self();
    pthread_mutex_unlock(&g.lock);
}

int tt_fake_gpu_own_calls_only(int rank)
{
    start();
    pthread_mutex_lock(&g.lock);
    int n = g.foreign;
    char first[64];
    snprintf(first, sizeof first, "%s", g.first_foreign);
    pthread_mutex_unlock(&g.lock);
    if (!n)
        return 0;
    if (rank >= 0)
        fprintf(stderr, "rank %d: ", rank);
    fprintf(stderr, "%d runtime calls from another thread than the caller's, the first %s\n", n, first);
    return 1;
}

int tt_fake_gpu_first_gate(void)
{
    return g.first_gate;
}

int tt_fake_gpu_preloaded_at(void)
{
    return g.preloaded_at;
}
