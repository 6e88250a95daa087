/* SPDX-License-Identifier: MIT */
/*
 * The pipe (see pipe.h). The stream and the proxy count the pieces of
 * every staged call of the communicator, one count each, in one order:
 * the stream stores into TT_WORD_GPU how many pieces it has finished, the
 * proxy into TT_WORD_HOST how many it has; each waits for the other's
 * count where it needs the other's piece. A call takes consecutive pieces:
 * - whole (its stand-in fits the staging): two. The stream copies the
 *   inputs into the staging and finishes piece 1 (the proxy may start);
 *   the proxy runs the call there and finishes piece 2 (the gate opens);
 *   the stream copies the results out.
 * - bounce: nin input pieces, each at most a slot of the staging (slot i
 *   mod TT_STAGING_SLOTS): the stream waits until the proxy has emptied the
 *   slot's previous piece, fills it and finishes it; the proxy copies it
 *   into its stand-in and finishes it. Then nout output pieces, the first
 *   empty (the proxy finishes it when the call is done: the gate), each
 *   other filled by the proxy once the stream has emptied the slot's
 *   previous one, and emptied by the stream.
 * A call's first pieces never wait for the slots: the stream reaches them
 * only after the previous call's last piece, which the proxy finished
 * last. Counts wrap around, compared by signed distance.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/pipe.h"

static size_t slot_bytes(const tt_device_layer_t *d)
{
    return d->staging_bytes / TT_STAGING_SLOTS;
}

static char *slot(const tt_device_layer_t *d, int i)
{
    return d->staging + (size_t)(i % TT_STAGING_SLOTS) * slot_bytes(d);
}

static const char *dev_of(const tt_device_span_t *s, const tt_device_ctx_t *ctx)
{
    return s->dev ? (const char *)s->dev : ctx->gpu + s->gpu_off;
}

/* Pieces of spans, one per slot's worth, at least min in all. */
static int count_pieces(const tt_device_span_t *spans, int n, size_t slot, int min)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += (int)((spans[i].bytes + slot - 1) / slot);
    return k > min ? k : min;
}

static tt_pipe_piece_t *fill_pieces(tt_pipe_piece_t *at, const tt_device_span_t *spans, int n, size_t slot)
{
    for (int i = 0; i < n; i++)
        for (size_t off = 0; off < spans[i].bytes; off += slot)
            *at++ = (tt_pipe_piece_t){
                .span = i, .at = off, .bytes = spans[i].bytes - off < slot ? spans[i].bytes - off : slot};
    return at;
}

tutti_status_t tt_pipe_plan(tt_device_layer_t *d, const tt_device_work_t *w, tt_pipe_t *p)
{
    *p = (tt_pipe_t){.base = d->pieces, .whole = w->host_bytes <= d->staging_bytes};
    if (p->whole) {
        p->end = p->base + 2;
        d->pieces = p->end;
        return TUTTI_SUCCESS;
    }
    size_t slot = slot_bytes(d);
    p->nin = count_pieces(w->in, w->nin, slot, 1);
    p->nout = 1 + count_pieces(w->out, w->nout, slot, 0);
    p->pieces = calloc((size_t)(p->nin + p->nout), sizeof *p->pieces);
    if (!p->pieces)
        return TUTTI_ERR_NO_MEMORY;
    fill_pieces(p->pieces, w->in, w->nin, slot); /* a call without inputs keeps one empty piece */
    fill_pieces(p->pieces + p->nin + 1, w->out, w->nout, slot);
    p->end = p->base + (unsigned)(p->nin + p->nout);
    d->pieces = p->end;
    return TUTTI_SUCCESS;
}

void tt_pipe_free(tt_pipe_t *p)
{
    free(p->pieces);
    p->pieces = NULL;
}

/* ---- the stream's side, on the caller's thread ---- */

tutti_status_t tt_pipe_put_in(tt_device_layer_t *d, const tt_device_item_t *it, void *stream,
                              const char **what)
{
    const tt_device_rt_t *rt = d->rt;
    const tt_device_work_t *w = &it->work;
    const tt_pipe_t *p = &it->pipe;
    tutti_status_t st = TUTTI_SUCCESS;
    *what = "copying the inputs to the staging";
    if (p->whole) {
        for (int i = 0; i < w->nin && !st; i++)
            if (w->in[i].bytes)
                st = rt->copy(d->staging + w->in[i].host_off, dev_of(&w->in[i], &it->ctx), w->in[i].bytes,
                              stream);
        if (!st && (st = rt->signal(stream, &d->words_dev[TT_WORD_GPU], p->base + 1)) != TUTTI_SUCCESS)
            *what = "signalling the proxy from the stream";
        return st;
    }
    for (int i = 0; i < p->nin && !st; i++) {
        const tt_pipe_piece_t *pc = &p->pieces[i];
        unsigned k = p->base + (unsigned)i;
        if (i >= TT_STAGING_SLOTS)
            st = rt->gate(stream, &d->words_dev[TT_WORD_HOST], k - TT_STAGING_SLOTS + 1);
        if (!st && pc->bytes)
            st = rt->copy(slot(d, i), dev_of(&w->in[pc->span], &it->ctx) + pc->at, pc->bytes, stream);
        if (!st)
            st = rt->signal(stream, &d->words_dev[TT_WORD_GPU], k + 1);
    }
    return st;
}

tutti_status_t tt_pipe_put_out(tt_device_layer_t *d, const tt_device_item_t *it, void *stream,
                               const char **what)
{
    const tt_device_rt_t *rt = d->rt;
    const tt_device_work_t *w = &it->work;
    const tt_pipe_t *p = &it->pipe;
    *what = "holding the stream for the call";
    if (p->whole) {
        tutti_status_t st = rt->gate(stream, &d->words_dev[TT_WORD_HOST], p->base + 2);
        *what = "copying the results from the staging";
        for (int i = 0; i < w->nout && !st; i++)
            if (w->out[i].bytes)
                st = rt->copy((char *)dev_of(&w->out[i], &it->ctx), d->staging + w->out[i].host_off,
                              w->out[i].bytes, stream);
        return st;
    }
    tutti_status_t st = TUTTI_SUCCESS;
    unsigned o = p->base + (unsigned)p->nin;
    for (int j = 0; j < p->nout && !st; j++) {
        const tt_pipe_piece_t *pc = &p->pieces[p->nin + j];
        st = rt->gate(stream, &d->words_dev[TT_WORD_HOST], o + (unsigned)j + 1);
        if (!st && j > 0 && pc->bytes) {
            *what = "copying the results from the staging";
            st = rt->copy((char *)dev_of(&w->out[pc->span], &it->ctx) + pc->at, slot(d, j - 1), pc->bytes,
                          stream);
        }
        if (!st)
            st = rt->signal(stream, &d->words_dev[TT_WORD_GPU], o + (unsigned)j + 1);
    }
    return st;
}

/* ---- the proxy's side: host memory only ---- */

static int reached(const tt_device_layer_t *d, int word, unsigned value)
{
    return (int)(atomic_load_explicit(&d->words[word], memory_order_acquire) - value) >= 0;
}

/* A waiting proxy costs nothing much: the stream's store wakes no one, so
 * after a short spin it sleeps, longer each time, up to a millisecond. */
tutti_status_t tt_pipe_wait(tt_device_layer_t *d, int word, unsigned value, _Atomic int *cancelled)
{
    long pause_ns = 2000;
    for (int spins = 0; !reached(d, word, value); spins++) {
        if (atomic_load_explicit(&d->comm->aborting, memory_order_relaxed) ||
            (cancelled && atomic_load_explicit(cancelled, memory_order_acquire)))
            return TUTTI_ERR_ABORTED;
        if (spins < 100) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        pause_ns = pause_ns < 1000000 ? pause_ns * 2 : 1000000;
    }
    return TUTTI_SUCCESS;
}

static void finish(tt_device_layer_t *d, unsigned value)
{
    atomic_store_explicit(&d->words[TT_WORD_HOST], value, memory_order_release);
}

tutti_status_t tt_pipe_take_in(tt_device_layer_t *d, tt_device_item_t *it, char *host)
{
    const tt_pipe_t *p = &it->pipe;
    if (p->whole)
        return tt_pipe_wait(d, TT_WORD_GPU, p->base + 1, &it->cancelled);
    for (int i = 0; i < p->nin; i++) {
        const tt_pipe_piece_t *pc = &p->pieces[i];
        unsigned k = p->base + (unsigned)i;
        TT_TRY(tt_pipe_wait(d, TT_WORD_GPU, k + 1, &it->cancelled));
        if (pc->bytes)
            memcpy(host + it->work.in[pc->span].host_off + pc->at, slot(d, i), pc->bytes);
        finish(d, k + 1);
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_pipe_give_out(tt_device_layer_t *d, tt_device_item_t *it, const char *host)
{
    const tt_pipe_t *p = &it->pipe;
    if (p->whole) {
        finish(d, p->base + 2);
        return TUTTI_SUCCESS;
    }
    unsigned o = p->base + (unsigned)p->nin;
    finish(d, o + 1); /* the call is done: its gate opens */
    for (int j = 1; j < p->nout; j++) {
        const tt_pipe_piece_t *pc = &p->pieces[p->nin + j];
        if (j > TT_STAGING_SLOTS)
            TT_TRY(tt_pipe_wait(d, TT_WORD_GPU, o + (unsigned)(j - TT_STAGING_SLOTS) + 1, &it->cancelled));
        memcpy(slot(d, j - 1), host + it->work.out[pc->span].host_off + pc->at, pc->bytes);
        finish(d, o + (unsigned)j + 1);
    }
    return TUTTI_SUCCESS;
}

void tt_pipe_skip(tt_device_layer_t *d, const tt_device_item_t *it)
{
    unsigned now = atomic_load_explicit(&d->words[TT_WORD_HOST], memory_order_acquire);
    if ((int)(it->pipe.end - now) > 0)
        finish(d, it->pipe.end);
}

void tt_device_item_let_go(tt_device_item_t *item)
{
    if (atomic_fetch_sub_explicit(&item->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (item->work.release)
        item->work.release(item->work.arg);
    tt_pipe_free(&item->pipe);
    free(item);
}
