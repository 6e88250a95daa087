/* SPDX-License-Identifier: MIT */
/*
 * A model of a GPU's streams in host memory, behind the device layer's
 * runtime table (src/device/rt.h), so the real queue and staging code run
 * without a GPU. What it models, and nothing more:
 * - streams: operations run in the order queued on a stream, on a "GPU"
 *   thread of this process; streams are mapped onto hardware queues, one
 *   each by default, or all onto one (connections = 1, as
 *   CUDA_DEVICE_MAX_CONNECTIONS=1), where an operation that cannot run yet
 *   (a closed gate, an event wait) holds up every stream behind it;
 * - copies (memcpy), signals and gates on host words, events (record,
 *   query, wait, sync), stream synchronisation;
 * - launch blocking (CUDA_LAUNCH_BLOCKING=1): a gate or signal returns only
 *   once it has run;
 * - a current device per thread, stream capture, device memory ranges with
 *   their device, pinned allocations and their frees.
 * It reports, and the rank exits 90 for, what the real runtime would make
 * a hang or undefined behaviour: a stream call made while another device
 * is current, a pinned free while a gate is still closed (cudaFreeHost
 * waits for the device), a gate or copy that touches freed pinned memory,
 * a blocking gate or a stream sync that waits more than 30 s, an allocation
 * or stream creation while a stream is being captured. Kernels,
 * lazy loading and the driver's stream memory operations are not modelled.
 */
#ifndef TT_TEST_FAKE_GPU_H
#define TT_TEST_FAKE_GPU_H

#include <stddef.h>

#include "device/rt.h"

extern const tt_device_rt_t tt_fake_gpu;

typedef struct {
    int connections;     /* 1: every stream on one hardware queue; 0: one queue each */
    int launch_blocking; /* gates and signals return once run */
    int op_delay_us;     /* each operation takes this long on the "GPU" */
} tt_fake_mode_t;

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
/* Marks stream as being captured (1) or not (0). */
void tt_fake_gpu_capture(void *stream, int capturing);
int tt_fake_gpu_current(void);
void tt_fake_gpu_set_current(int device);

/* What happened on one stream, as letters: W wait for an event, C copy,
 * S signal, G gate, R record, H hold; into buf. */
void tt_fake_gpu_log(void *stream, char *buf, size_t len);
/* Operations queued so far on streams the library made itself. */
int tt_fake_gpu_library_ops(void);
/* Kernels preloaded, and gates queued, in the order they happened: the
 * index of the first gate, -1 if none; of the preload, -1 if none. */
int tt_fake_gpu_first_gate(void);
int tt_fake_gpu_preloaded_at(void);

#endif
