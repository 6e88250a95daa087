/* SPDX-License-Identifier: MIT */
/*
 * Staging hooks: how the device proxy moves each slice of a call's device
 * buffers into pinned host memory just before the engine runs that slice,
 * and out again as soon as the slice is done. Slice k of every region is
 * touched only by slice k's steps, so one slice's copies overlap the
 * transfers and reductions of the others.
 */
#ifndef TT_STAGE_H
#define TT_STAGE_H

#include <stddef.h>

#include "sched/schedule.h"

/* bytes at byte offset off of one of the call's buffers. */
typedef struct {
    tt_buf_t buf;
    size_t off, bytes;
} tt_piece_t;

typedef struct {
    unsigned fetch_bufs;   /* bit per tt_buf_t: buffers whose pieces a slice reads are fetched */
    unsigned deliver_bufs; /* ... whose pieces a slice writes are delivered */
    /* Called for every slice, in order, before any runs: start fetching
     * its pieces (n may be 0). */
    void (*fetch)(void *arg, int slice, const tt_piece_t *pieces, int n);
    /* Polled before the slice's first round: 1 once its pieces are in, 0
     * not yet, -1 when fetching failed (the hook logged why). */
    int (*fetched)(void *arg, int slice);
    /* Called once the slice's last round is done: its written pieces hold
     * their final values. */
    void (*deliver)(void *arg, int slice, const tt_piece_t *pieces, int n);
    void *arg;
} tt_stage_hooks_t;

/*
 * The pieces of slice (of nslices) that the steps of s read (writes 0) or
 * write, in the buffers of mask, as byte ranges merged where they overlap
 * or touch, ordered by buffer and offset. out has room for 2 s->nsteps.
 * Returns how many.
 */
int tt_stage_pieces(const tt_sched_t *s, size_t elem, int nslices, int slice, unsigned mask, int writes,
                    tt_piece_t *out);

/*
 * Whether the pieces that the slices of s write in buffer buf cover its
 * first bytes exactly once: each byte is written by one slice only, so
 * its value is final when that slice is done (the average can be divided
 * there). scratch has room for 2 s->nsteps pieces.
 */
int tt_stage_partitions(const tt_sched_t *s, size_t elem, int nslices, tt_buf_t buf, size_t bytes,
                        tt_piece_t *scratch);

#endif
