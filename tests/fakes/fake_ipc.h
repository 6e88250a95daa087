/* SPDX-License-Identifier: MIT */
/*
 * A cuda_ipc backend whose "device memory" is host memory, for the suites
 * that run the device transport without a GPU: windows are shared
 * segments (their IPC handle is the segment's name), registered segments
 * are reached as they are, and every call is a runtime call of the stream
 * model's (fake_gpu.h). A window freed while a peer still has it open, and
 * a binding call made while another GPU than the communicator's is
 * current, exit the rank (91, 92).
 */
#ifndef TT_TEST_FAKE_IPC_H
#define TT_TEST_FAKE_IPC_H

#include <stdatomic.h>

#include "transports/cuda_ipc/cuda_ipc.h"

#define TT_FAKE_IPC_GPUS 4

extern const tt_cuda_ipc_backend_t tt_fake_ipc;

/* What the backend did in this process. */
extern struct tt_fake_ipc_used {
    int opens, closes;
    _Atomic int shares;
} tt_fake_ipc_used;

/* reach[g]: bit h set when GPU g can load from GPU h (all, to begin with). */
extern unsigned tt_fake_ipc_reach[TT_FAKE_IPC_GPUS];
/* Milliseconds a close takes in this process (a slow peer at teardown). */
extern int tt_fake_ipc_slow_close;

/* Removes the windows of processes that are gone (ranks that aborted leave
 * theirs, as a GPU's would stay until their process ended). */
void tt_fake_ipc_sweep(void);

/* Binds comm to gpu and opens the windows its peers publish, trying until
 * every one is open (the peers bind at their own pace): what a rank does
 * before its first direct call. 1, or 0 after 10 s. */
int tt_fake_ipc_prepared(tt_comm_t *comm, int gpu);

#endif
