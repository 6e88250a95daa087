/* SPDX-License-Identifier: MIT */
/*
 * Staging: a collective on device buffers run as the host collective on
 * pinned stand-ins. A call that cannot go direct copies through the
 * caller's stream: its inputs before the gate, its results after it, so
 * the proxy touches host memory only (queue.c says why). A call that
 * offered to go direct but was refused by another rank is staged by the
 * proxy, slice by slice, each slice's inputs copied in just before the
 * engine needs them and its results copied out as soon as it is done, so
 * the copies overlap the other slices' transfers.
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
/* On the caller's thread, on its stream: c's device inputs into the
 * staging (before the gate), its device results out of it (after). */
int tt_stage_in(const tt_device_ctx_t *ctx, const tt_call_t *c, const tt_stage_layout_t *l, void *stream);
int tt_stage_out(const tt_device_ctx_t *ctx, const tt_call_t *c, const tt_stage_layout_t *l, void *stream);
/* On the proxy thread: runs c (sequence number seq) on host, its stand-in,
 * copying slice by slice on the proxy's streams. */
tutti_status_t tt_stage_run(tutti_comm_t comm, const tt_device_ctx_t *ctx, const tt_call_t *c,
                            tt_call_t *host, uint64_t seq, const char *name);

#endif
