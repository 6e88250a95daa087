/* SPDX-License-Identifier: MIT */
/*
 * A model of a GPU's streams in host memory, behind the device layer's
 * runtime table (src/device/rt.h), so the real queue and staging code run
 * without a GPU. What it models, and nothing more:
 * - streams: operations run in the order queued on a stream, on a "GPU"
 *   thread of this process. Streams share hardware queues as CUDA shares
 *   them: connections queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default),
 *   handed out round-robin in the order streams are made; an operation that
 *   cannot run yet (a closed gate, an event wait, a hold) holds up every
 *   operation queued behind it in its hardware queue, whatever its stream;
 * - copies (memcpy), signals and gates on host words (shared memory too, so
 *   a gate can wait for another process), kernels (reductions, averages,
 *   scalings: the CPU's code, run in stream order), events (record, query,
 *   wait, sync), stream synchronisation;
 * - which threads make runtime calls: the tests count those of threads
 *   other than the application's;
 * - the context lock: every runtime call passes it. A lazy module load (an
 *   application's kernel launched for the first time) and a pinned
 *   allocation (an implicit synchronisation point) take it and wait, while
 *   holding it, for every operation queued on the device;
 * - stream capture per thread: a capture begun in global mode forbids the
 *   unsafe calls (allocations, stream and event creation, queries and
 *   synchronisations) of every thread left in global mode; one begun in
 *   thread-local mode only those of its own thread; a thread in relaxed
 *   mode may make them all;
 * - launch blocking (CUDA_LAUNCH_BLOCKING=1): a gate or signal returns only
 *   once it has run;
 * - a current device per thread, device memory ranges with their device,
 *   pinned allocations and their frees.
 * It reports, and the rank exits 90 for, what the real runtime would make
 * a hang, a broken capture or undefined behaviour: a stream call made while
 * another device is current, a pinned free while a gate is still closed
 * (cudaFreeHost waits for the device), a gate or copy that touches freed
 * pinned memory, a wait of more than 30 s (a blocking gate, a stream or
 * event sync, a lazy load or allocation waiting for the device), an unsafe
 * call that a capture forbids.
 */
#ifndef TT_TEST_FAKE_GPU_H
#define TT_TEST_FAKE_GPU_H

#include <stddef.h>

#include "device/rt.h"

extern const tt_device_rt_t tt_fake_gpu;

typedef struct {
    int connections;     /* hardware queues (CUDA_DEVICE_MAX_CONNECTIONS); 0: CUDA's default, 8 */
    int launch_blocking; /* gates and signals return once run */
    int op_delay_us;     /* each operation takes this long on the "GPU" */
} tt_fake_mode_t;

/* CUDA's capture modes (cudaStreamCaptureMode's values). */
enum { TT_FAKE_CAPTURE_GLOBAL = 0, TT_FAKE_CAPTURE_THREAD_LOCAL = 1, TT_FAKE_CAPTURE_RELAXED = 2 };

/* Sets the mode for streams made from now on (in this process). */
void tt_fake_gpu_mode(const tt_fake_mode_t *mode);
/* Device memory of GPU device (host memory the model knows as such). */
void *tt_fake_gpu_malloc(size_t bytes, int device);
/* A stream of the current device; NULL is the current device's default. */
void *tt_fake_gpu_stream(void);
/* Holds stream until tt_fake_gpu_release (the application's own work). */
void tt_fake_gpu_hold(void *stream);
void tt_fake_gpu_release(void);
/* The nth copy queued from now on fails (as the runtime refusing it). */
void tt_fake_gpu_fail_copy(int nth);
/* Begins (1) or ends (0) a capture of stream by this thread in global mode. */
void tt_fake_gpu_capture(void *stream, int capturing);
/* Begins a capture of stream by this thread in mode (TT_FAKE_CAPTURE_*). */
void tt_fake_gpu_begin_capture(void *stream, int mode);
/* This thread's capture mode: sets *mode, returns the one it had
 * (cudaThreadExchangeStreamCaptureMode). */
void tt_fake_gpu_exchange_mode(int *mode);
/* The application launches a kernel whose module is not loaded yet: takes
 * the context lock and waits for every queued operation of the device. */
void tt_fake_gpu_lazy_load(void);
/* A runtime call of a test backend's (what, for the report): passes the
 * context lock (waits while a lazy load or an allocation holds it), and is
 * counted when the calling thread is not the application's. */
void tt_fake_gpu_runtime_call(const char *what);
/* The calling thread is one of the application's (the one that started
 * the model is). */
void tt_fake_gpu_app_thread(void);
/* A rank body's check that no thread but the application's (the device
 * proxy, say) made a runtime call: 0, else 1 after printing how many and
 * the first (prefixed with the rank when rank >= 0). */
int tt_fake_gpu_own_calls_only(int rank);
int tt_fake_gpu_current(void);
void tt_fake_gpu_set_current(int device);

/* What happened on one stream, as letters: W wait for an event, C copy,
 * S signal, G gate, R record, H hold, K kernel; into buf. */
void tt_fake_gpu_log(void *stream, char *buf, size_t len);
/* Kernels preloaded, and gates queued, in the order they happened: the
 * index of the first gate, -1 if none; of the preload, -1 if none. */
int tt_fake_gpu_first_gate(void);
int tt_fake_gpu_preloaded_at(void);

#endif
