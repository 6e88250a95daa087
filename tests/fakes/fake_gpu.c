/* SPDX-License-Identifier: MIT */
/*
 * The stream model's runtime table (what tutti's device layer calls in
 * place of CUDA's runtime) and the controls the suites drive it with
 * (fake_gpu.h); the model itself is fake_gpu_model.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakes/fake_gpu_model.h"
#include "reduce/reduce.h"

/* ---- the runtime table ---- */

/* A call of the table: the model running, the context lock passed, and
 * the calling thread noted when it is not the application's. */
static void runtime_call(const char *what)
{
    fake_enter_runtime();
    pthread_t self = pthread_self();
    pthread_mutex_lock(&fake_gpu_state.lock);
    int app = 0;
    for (int i = 0; i < fake_gpu_state.napp && !app; i++)
        app = pthread_equal(fake_gpu_state.app[i], self);
    if (!app && fake_gpu_state.foreign++ == 0)
        snprintf(fake_gpu_state.first_foreign, sizeof fake_gpu_state.first_foreign, "%s", what);
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    pthread_mutex_lock(&fake_gpu_state.lock);
    int r = fake_range_of(ptr);
    *device = r >= 0 && !fake_gpu_state.ranges[r].pinned ? fake_gpu_state.ranges[r].device : -1;
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    pthread_mutex_lock(&fake_gpu_state.lock);
    if (fake_gpu_state.preloaded_at < 0)
        fake_gpu_state.preloaded_at = fake_gpu_state.order++;
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_capturing(void *stream, int *yes)
{
    runtime_call("a capture query");
    pthread_mutex_lock(&fake_gpu_state.lock);
    int dev = current_device; /* a query of any device's stream is fine */
    fstream_t *s = stream;
    if (s)
        current_device = s->device;
    *yes = fake_stream_of(stream, "a capture query")->capturing;
    current_device = dev;
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

static void add_range(void *p, size_t bytes, int device, int pinned)
{
    if (fake_gpu_state.nranges == MAX_RANGES)
        fake_violation("%s", "too many allocations for the model");
    fake_gpu_state.ranges[fake_gpu_state.nranges].p = p;
    fake_gpu_state.ranges[fake_gpu_state.nranges].bytes = bytes;
    fake_gpu_state.ranges[fake_gpu_state.nranges].device = device;
    fake_gpu_state.ranges[fake_gpu_state.nranges].pinned = pinned;
    fake_gpu_state.ranges[fake_gpu_state.nranges++].freed = 0;
}

/* A pinned allocation synchronises the device (CUDA's implicit
 * synchronisation points), under the context lock. */
static tutti_status_t f_host_alloc(size_t bytes, void **host, void **dev)
{
    runtime_call("a pinned allocation");
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_unsafe("a pinned allocation");
    pthread_mutex_unlock(&fake_gpu_state.lock);
    fake_drain_device("a pinned allocation (a synchronisation point)");
    *host = *dev = calloc(1, bytes ? bytes : 1);
    if (!*host)
        return refuse("out of memory", TUTTI_ERR_NO_MEMORY);
    pthread_mutex_lock(&fake_gpu_state.lock);
    add_range(*host, bytes, current_device, 1);
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

/* cudaFreeHost waits for the whole device: never while a gate is closed. */
static void f_host_free(void *host)
{
    runtime_call("a pinned free");
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_unsafe("a pinned free");
    for (int q = 0; q < fake_gpu_state.nqueues; q++)
        for (op_t *o = fake_gpu_state.queue_head[q]; o; o = o->next_in_queue)
            if (o->kind == OP_GATE && !fake_runnable(o))
                fake_violation(
                    "%s", "pinned memory freed while a gate holds a stream (that free waits for the device)");
    int r = fake_range_of(host);
    if (r >= 0)
        fake_gpu_state.ranges[r].freed =
            1; /* the memory itself stays, so later touches are caught, not crashes */
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

static tutti_status_t f_dev_alloc(size_t bytes, void *stream, void **ptr)
{
    runtime_call("a device allocation");
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_stream_of(stream, "a stream-ordered allocation");
    fake_unsafe("a device allocation");
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    pthread_mutex_lock(&fake_gpu_state.lock);
    fstream_t *s = fake_stream_of(handle, "a stream sync");
    fake_unsafe("a stream sync");
    fake_wait_until(stream_idle, s, "a stream sync");
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    runtime_call("a copy");
    pthread_mutex_lock(&fake_gpu_state.lock);
    if (fake_gpu_state.fail_copy && --fake_gpu_state.fail_copy == 0) {
        pthread_mutex_unlock(&fake_gpu_state.lock);
        return refuse("fake GPU error (a copy refused)", TUTTI_ERR_SYSTEM);
    }
    op_t *o = fake_push(stream, OP_COPY, "a copy", 'C');
    o->dst = dst;
    o->src = src;
    o->bytes = bytes;
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t word_op(void *stream, unsigned *word, unsigned value, op_kind_t kind)
{
    runtime_call(kind == OP_GATE ? "a gate" : "a signal");
    pthread_mutex_lock(&fake_gpu_state.lock);
    op_t *o = fake_push(stream, kind, kind == OP_GATE ? "a gate" : "a signal", kind == OP_GATE ? 'G' : 'S');
    o->word = word;
    o->value = value;
    if (kind == OP_GATE && fake_gpu_state.first_gate < 0)
        fake_gpu_state.first_gate = fake_gpu_state.order++;
    if (fake_gpu_state.mode.launch_blocking)
        fake_wait_until(fake_op_done, o,
                        kind == OP_GATE ? "a gate launched with launch blocking"
                                        : "a signal with launch blocking");
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    pthread_mutex_lock(&fake_gpu_state.lock);
    op_t *o = fake_push(stream, kind, "a kernel", 'K');
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
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_avg_finish(void *buf, size_t n, tutti_dtype_t dtype, int nranks, void *stream)
{
    op_t *o = kernel(stream, OP_AVG, buf, n, dtype);
    o->value = (unsigned)nranks;
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    pthread_mutex_lock(&fake_gpu_state.lock);
    if (e->device != current_device)
        fake_violation("%s", "an event of another device recorded");
    op_t *o = fake_push(stream, OP_RECORD, "an event record", 'R');
    o->ev = e;
    o->gen = ++e->recorded;
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_event_query(void *event, int *done)
{
    runtime_call("an event query");
    fevent_t *e = event;
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_unsafe("an event query");
    *done = (int)(e->completed - e->recorded) >= 0;
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_unsafe("an event sync");
    fake_wait_until(event_done, event, "an event sync");
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return TUTTI_SUCCESS;
}

static tutti_status_t f_stream_wait(void *stream, void *event)
{
    runtime_call("an event wait");
    fevent_t *e = event;
    pthread_mutex_lock(&fake_gpu_state.lock);
    op_t *o = fake_push(stream, OP_WAIT, "an event wait", 'W');
    o->ev = e;
    o->gen = e->recorded;
    pthread_mutex_unlock(&fake_gpu_state.lock);
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
    fake_gpu_state.mode = *mode;
}

void *tt_fake_gpu_malloc(size_t bytes, int device)
{
    fake_start();
    void *p = calloc(1, bytes ? bytes : 1);
    pthread_mutex_lock(&fake_gpu_state.lock);
    add_range(p, bytes, device, 0);
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return p;
}

void *tt_fake_gpu_stream(void)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.lock);
    fstream_t *s = fake_new_stream();
    pthread_mutex_unlock(&fake_gpu_state.lock);
    return s;
}

void tt_fake_gpu_hold(void *stream)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_gpu_state.held = 1;
    fake_push(stream, OP_HOLD, "a hold", 'H');
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

void tt_fake_gpu_fail_copy(int nth)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_gpu_state.fail_copy = nth;
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

void tt_fake_gpu_release(void)
{
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_gpu_state.held = 0;
    pthread_cond_broadcast(&fake_gpu_state.changed);
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

void tt_fake_gpu_begin_capture(void *stream, int mode)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.lock);
    fstream_t *s = fake_stream_of(stream, "a capture");
    s->capturing = 1;
    s->capture_mode = mode;
    s->capture_thread = pthread_self();
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

void tt_fake_gpu_capture(void *stream, int capturing)
{
    if (capturing) {
        tt_fake_gpu_begin_capture(stream, TT_FAKE_CAPTURE_GLOBAL);
        return;
    }
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_stream_of(stream, "a capture")->capturing = 0;
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

void tt_fake_gpu_exchange_mode(int *mode)
{
    int was = capture_mode;
    capture_mode = *mode;
    *mode = was;
}

void tt_fake_gpu_lazy_load(void)
{
    fake_drain_device("a lazy module load");
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
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.lock);
    fstream_t *s = fake_stream_of(stream, "a log");
    snprintf(buf, len, "%.*s", (int)s->nlog, s->log);
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

void tt_fake_gpu_app_thread(void)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.lock);
    if (fake_gpu_state.napp < 8)
        fake_gpu_state.app[fake_gpu_state.napp++] = pthread_self();
    pthread_mutex_unlock(&fake_gpu_state.lock);
}

int tt_fake_gpu_own_calls_only(int rank)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.lock);
    int n = fake_gpu_state.foreign;
    char first[64];
    snprintf(first, sizeof first, "%s", fake_gpu_state.first_foreign);
    pthread_mutex_unlock(&fake_gpu_state.lock);
    if (!n)
        return 0;
    if (rank >= 0)
        fprintf(stderr, "rank %d: ", rank);
    fprintf(stderr, "%d runtime calls from another thread than the caller's, the first %s\n", n, first);
    return 1;
}

int tt_fake_gpu_first_gate(void)
{
    return fake_gpu_state.first_gate;
}

int tt_fake_gpu_preloaded_at(void)
{
    return fake_gpu_state.preloaded_at;
}
