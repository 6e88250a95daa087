/* SPDX-License-Identifier: MIT */
/* The stream model of fake_gpu.h: a "GPU" thread runs the streams' operations. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/fakes/fake_gpu_model.h"
#include "reduce/reduce.h"

struct fake_gpu_state fake_gpu_state;
__thread int current_device;
__thread int capture_mode;
__thread const char *said_text = "";

void fake_violation(const char *fmt, const char *detail)
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

/* With the lock held: until the model changes, or ns nanoseconds pass. */
static void nap(long ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ns;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&fake_gpu_state.changed, &fake_gpu_state.lock, &ts);
}

/* With fake_gpu_state.lock held: until pred(arg) holds, at most WAIT_LIMIT_S, else what
 * could never end is reported. */
void fake_wait_until(int (*pred)(const void *), const void *arg, const char *what)
{
    int64_t deadline = now_ns() + WAIT_LIMIT_NS;
    while (!pred(arg)) {
        if (now_ns() > deadline)
            fake_violation("%s waited more than " TT_STR(WAIT_LIMIT_S) " s: it can never end", what);
        nap(50000000);
    }
}

int fake_range_of(const void *p)
{
    for (int i = fake_gpu_state.nranges - 1; i >= 0; i--)
        if ((const char *)p >= fake_gpu_state.ranges[i].p &&
            (const char *)p < fake_gpu_state.ranges[i].p + fake_gpu_state.ranges[i].bytes)
            return i;
    return -1;
}

static void check_live(const void *p, const char *what)
{
    int r = fake_range_of(p);
    if (r >= 0 && fake_gpu_state.ranges[r].freed)
        fake_violation("%s touches pinned memory that was freed", what);
}

int fake_runnable(const op_t *o)
{
    switch (o->kind) {
    case OP_GATE: return (int)(__atomic_load_n(o->word, __ATOMIC_ACQUIRE) - o->value) >= 0;
    case OP_WAIT: return (int)(o->ev->completed - o->gen) >= 0;
    case OP_HOLD: return !fake_gpu_state.held;
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
    pthread_mutex_lock(&fake_gpu_state.lock);
    for (;;) {
        int progressed = 0;
        for (int q = 0; q < fake_gpu_state.nqueues; q++) {
            op_t *o = fake_gpu_state.queue_head[q];
            if (!o || !fake_runnable(o))
                continue;
            if (fake_gpu_state.mode.op_delay_us) {
                pthread_mutex_unlock(&fake_gpu_state.lock);
                usleep((useconds_t)fake_gpu_state.mode.op_delay_us);
                pthread_mutex_lock(&fake_gpu_state.lock);
            }
            run(o);
            fake_gpu_state.queue_head[q] = o->next_in_queue;
            if (!fake_gpu_state.queue_head[q])
                fake_gpu_state.queue_tail[q] = NULL;
            o->stream->pending--;
            o->done = 1; /* freed by whoever waits for it, or leaked: the model is small */
            progressed = 1;
            pthread_cond_broadcast(&fake_gpu_state.changed);
        }
        if (!progressed) {
            nap(200000); /* gate words change without a signal */
        }
    }
    return NULL;
}

void fake_start(void)
{
    if (fake_gpu_state.pid == getpid())
        return;
    tt_fake_mode_t mode = fake_gpu_state.mode;
    memset(&fake_gpu_state, 0, sizeof fake_gpu_state);
    fake_gpu_state.mode = mode;
    fake_gpu_state.pid = getpid();
    fake_gpu_state.first_gate = fake_gpu_state.preloaded_at = -1;
    fake_gpu_state.app[fake_gpu_state.napp++] =
        pthread_self(); /* the thread that starts the model is the application's */
    fake_gpu_state.nqueues =
        mode.connections > 0 && mode.connections <= MAX_QUEUES ? mode.connections : DEFAULT_QUEUES;
    pthread_mutex_init(&fake_gpu_state.lock, NULL);
    pthread_mutex_init(&fake_gpu_state.ctx, NULL);
    pthread_cond_init(&fake_gpu_state.changed, NULL);
    pthread_create(&fake_gpu_state.gpu, NULL, gpu_main, NULL);
    pthread_detach(fake_gpu_state.gpu);
}

/* Every runtime call: the model running, and the context lock passed. */
void fake_enter_runtime(void)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.ctx);
    pthread_mutex_unlock(&fake_gpu_state.ctx);
}

static int device_idle(const void *arg)
{
    (void)arg;
    for (int q = 0; q < fake_gpu_state.nqueues; q++)
        if (fake_gpu_state.queue_head[q])
            return 0;
    return 1;
}

/* A lazy module load or an implicit synchronisation point: holding the
 * context lock, until every operation queued on the device has run. */
void fake_drain_device(const char *what)
{
    fake_start();
    pthread_mutex_lock(&fake_gpu_state.ctx);
    pthread_mutex_lock(&fake_gpu_state.lock);
    fake_wait_until(device_idle, NULL, what);
    pthread_mutex_unlock(&fake_gpu_state.lock);
    pthread_mutex_unlock(&fake_gpu_state.ctx);
}

fstream_t *fake_new_stream(void)
{
    fstream_t *s = calloc(1, sizeof *s);
    s->device = current_device;
    s->hwq = fake_gpu_state.next_queue++ %
             fake_gpu_state.nqueues; /* round-robin, as CUDA hands out its connections */
    if (fake_gpu_state.nstreams < 256)
        fake_gpu_state.streams[fake_gpu_state.nstreams++] = s;
    return s;
}

/* With the lock held: the stream for handle (NULL: the current device's default). */
fstream_t *fake_stream_of(void *handle, const char *what)
{
    fstream_t *s = handle;
    if (!s) {
        if (!fake_gpu_state.defaults[current_device])
            fake_gpu_state.defaults[current_device] = fake_new_stream();
        s = fake_gpu_state.defaults[current_device];
    }
    if (s->device != current_device)
        fake_violation("%s on a stream of another device than the current one", what);
    return s;
}

/* With the lock held: a call that may synchronise (CUDA's "potentially
 * unsafe" calls) breaks a capture that forbids it on this thread. */
void fake_unsafe(const char *what)
{
    if (capture_mode == TT_FAKE_CAPTURE_RELAXED)
        return;
    pthread_t self = pthread_self();
    for (int i = 0; i < fake_gpu_state.nstreams; i++) {
        const fstream_t *s = fake_gpu_state.streams[i];
        if (!s->capturing || s->capture_mode == TT_FAKE_CAPTURE_RELAXED)
            continue;
        int mine = pthread_equal(s->capture_thread, self);
        if (mine || (s->capture_mode == TT_FAKE_CAPTURE_GLOBAL && capture_mode == TT_FAKE_CAPTURE_GLOBAL))
            fake_violation("%s while a stream is being captured (that invalidates the capture)", what);
    }
}

op_t *fake_push(void *handle, op_kind_t kind, const char *what, char letter)
{
    fstream_t *s = fake_stream_of(handle, what);
    op_t *o = calloc(1, sizeof *o);
    o->stream = s;
    o->kind = kind;
    if (s->nlog + 1 < sizeof s->log)
        s->log[s->nlog++] = letter;
    s->pending++;
    if (fake_gpu_state.queue_tail[s->hwq])
        fake_gpu_state.queue_tail[s->hwq]->next_in_queue = o;
    else
        fake_gpu_state.queue_head[s->hwq] = o;
    fake_gpu_state.queue_tail[s->hwq] = o;
    pthread_cond_broadcast(&fake_gpu_state.changed);
    return o;
}

int fake_op_done(const void *arg)
{
    return ((const op_t *)arg)->done;
}
