/* SPDX-License-Identifier: MIT */
/*
 * Inside the stream model of fake_gpu.h: its operations, streams and
 * state, and the model's own calls, which fake_gpu_model.c runs (the
 * "GPU" thread and its queues) and fake_gpu.c's runtime table and test
 * controls use. Not for the suites: they use fake_gpu.h.
 */
#ifndef TT_FAKE_GPU_MODEL_H
#define TT_FAKE_GPU_MODEL_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "tests/fakes/fake_gpu.h"

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

struct fake_gpu_state {
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
};
extern struct fake_gpu_state fake_gpu_state;

extern __thread int current_device;
extern __thread int capture_mode;      /* this thread's (TT_FAKE_CAPTURE_GLOBAL unless exchanged) */
extern __thread const char *said_text; /* what the last refusal said */

/* Ends the process with what the application did wrong (exit 90). */
void fake_violation(const char *fmt, const char *detail);
/* With the lock held: until pred(arg) holds, at most WAIT_LIMIT_S, else what
 * could never end is reported. */
void fake_wait_until(int (*pred)(const void *), const void *arg, const char *what);
/* The pinned or device range p falls in, or -1. */
int fake_range_of(const void *p);
/* Whether the GPU thread could run operation o now. */
int fake_runnable(const op_t *o);
/* Starts the model in this process, once. */
void fake_start(void);
/* Every runtime call: the model running, and the context lock passed. */
void fake_enter_runtime(void);
/* A lazy module load or an implicit synchronisation point: holding the
 * context lock, until every operation queued on the device has run. */
void fake_drain_device(const char *what);
/* With the lock held: a new stream on the current device, or the stream
 * for handle (NULL: the current device's default). */
fstream_t *fake_new_stream(void);
fstream_t *fake_stream_of(void *handle, const char *what);
/* With the lock held: a call that may synchronise (CUDA's "potentially
 * unsafe" calls) breaks a capture that forbids it on this thread. */
void fake_unsafe(const char *what);
/* With the lock held: a new operation queued on handle's stream. */
op_t *fake_push(void *handle, op_kind_t kind, const char *what, char letter);
/* For fake_wait_until: the operation has run. */
int fake_op_done(const void *arg);

#endif
