/* SPDX-License-Identifier: MIT */
/*
 * Staging: a collective on device buffers run as the host collective on
 * pinned stand-ins, slice by slice, each slice's inputs copied in just
 * before the engine needs them and its results copied out as soon as it
 * is done, so the copies overlap the other slices' transfers.
 */
#ifndef TT_DEVICE_STAGING_H
#define TT_DEVICE_STAGING_H

#include "coll/coll.h"
#include "device/queue.h"

/* Where a call's device buffers sit in the staging. */
typedef struct {
    size_t bytes, send_off, recv_off;
} tt_stage_layout_t;

tt_stage_layout_t tt_stage_layout(const tt_call_t *c);
/* c's host stand-in: its device buffers replaced by their places in pinned. */
tt_call_t tt_stage_stand_in(const tt_call_t *c, const tt_stage_layout_t *l, void *pinned);
/* On the proxy thread: runs c (sequence number seq) on host, its stand-in. */
tutti_status_t tt_stage_run(tutti_comm_t comm, const tt_device_ctx_t *ctx, const tt_call_t *c,
                            tt_call_t *host, uint64_t seq, const char *name);

#endif
