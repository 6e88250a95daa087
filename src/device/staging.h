/* SPDX-License-Identifier: MIT */
/*
 * Staging: a collective on device buffers run as the host collective on a
 * host stand-in, its device inputs passed to the host before the proxy
 * runs it and its results passed back after (through the pipe: pipe.h).
 */
#ifndef TT_DEVICE_STAGING_H
#define TT_DEVICE_STAGING_H

#include "coll/coll.h"
#include "device/queue.h"

/* Where a call's device buffers sit in the stand-in. */
typedef struct {
    size_t bytes, send_off, recv_off;
} tt_stage_layout_t;

tt_stage_layout_t tt_stage_layout(const tt_call_t *c);
/* c's host stand-in: its device buffers replaced by their places in host. */
tt_call_t tt_stage_stand_in(const tt_call_t *c, const tt_stage_layout_t *l, char *host);
/* c's device inputs into the stand-in (*nin: 0 or 1) and its device results
 * out of it (*nout: 0 or 1). */
void tt_stage_spans(const tt_call_t *c, const tt_stage_layout_t *l, tt_device_span_t *in, int *nin,
                    tt_device_span_t *out, int *nout);

#endif
