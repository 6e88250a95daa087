/* SPDX-License-Identifier: MIT */
/* Staged runs of collectives on device buffers (see staging.h). */
#include "device/staging.h"

#define STAGE_ALIGN 256

tt_stage_layout_t tt_stage_layout(const tt_call_t *c)
{
    tt_stage_layout_t l = {0};
    if (c->in_place && c->send_on_device && c->recv_on_device) {
        /* In-place forms keep their layout: one span covers both buffers. */
        const char *s = c->send, *r = c->recv;
        const char *lo = s < r ? s : r,
                   *hi = s + c->in_bytes > r + c->out_bytes ? s + c->in_bytes : r + c->out_bytes;
        return (tt_stage_layout_t){(size_t)(hi - lo), (size_t)(s - lo), (size_t)(r - lo)};
    }
    if (c->send_on_device)
        l.bytes = (c->in_bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    if (c->recv_on_device) {
        l.recv_off = l.bytes;
        l.bytes += c->out_bytes;
    }
    return l;
}

tt_call_t tt_stage_stand_in(const tt_call_t *c, const tt_stage_layout_t *l, char *host)
{
    tt_call_t stand_in = *c;
    if (c->send_on_device)
        stand_in.send = host + l->send_off;
    if (c->recv_on_device)
        stand_in.recv = host + l->recv_off;
    return stand_in;
}

void tt_stage_spans(const tt_call_t *c, const tt_stage_layout_t *l, tt_device_span_t *in, int *nin,
                    tt_device_span_t *out, int *nout)
{
    *nin = *nout = 0;
    if (c->in_place && c->send_on_device && c->recv_on_device) { /* one span holds both */
        const char *lo = (const char *)c->send < (const char *)c->recv ? c->send : c->recv;
        *in = (tt_device_span_t){.dev = lo, .bytes = l->bytes};
        *nin = l->bytes != 0;
    } else if (c->send_on_device && c->in_bytes) {
        *in = (tt_device_span_t){.dev = c->send, .host_off = l->send_off, .bytes = c->in_bytes};
        *nin = 1;
    }
    if (c->recv_on_device && c->out_bytes) {
        *out = (tt_device_span_t){.dev = c->recv, .host_off = l->recv_off, .bytes = c->out_bytes};
        *nout = 1;
    }
}
