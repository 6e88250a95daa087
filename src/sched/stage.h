/* SPDX-License-Identifier: MIT */
/*
 * The byte ranges of a call's buffers that one slice of a schedule reads or
 * writes. Slice k of every region is touched only by slice k's steps, so
 * once a slice's last round is done its written pieces hold their final
 * values: the engine divides an average there, while they are in cache.
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
