/* SPDX-License-Identifier: MIT */
/* Which bytes of the call's buffers one slice of a schedule reads and writes. */
#include <stdlib.h>

#include "sched/stage.h"

static int piece_order(const void *a, const void *b)
{
    const tt_piece_t *x = a, *y = b;
    if (x->buf != y->buf)
        return x->buf < y->buf ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static void add(tt_region_t r, size_t elem, int nslices, int slice, unsigned mask, tt_piece_t *out, int *n)
{
    size_t count = tt_block_count(r.count, nslices, slice);
    if (!count || !(mask >> r.buf & 1u))
        return;
    out[(*n)++] = (tt_piece_t){r.buf, (r.off + tt_block_off(r.count, nslices, slice)) * elem, count * elem};
}

int tt_stage_partitions(const tt_sched_t *s, size_t elem, int nslices, tt_buf_t buf, size_t bytes,
                        tt_piece_t *scratch)
{
    /* The slices together write what the whole regions write; if their
     * pieces add up to no more than that, no byte is in two slices. */
    unsigned mask = 1u << buf;
    int n = tt_stage_pieces(s, elem, 1, 0, mask, 1, scratch);
    if (n != 1 || scratch[0].off != 0 || scratch[0].bytes != bytes)
        return 0;
    size_t total = 0;
    for (int k = 0; k < nslices; k++) {
        n = tt_stage_pieces(s, elem, nslices, k, mask, 1, scratch);
        for (int i = 0; i < n; i++)
            total += scratch[i].bytes;
    }
    return total == bytes;
}

int tt_stage_pieces(const tt_sched_t *s, size_t elem, int nslices, int slice, unsigned mask, int writes,
                    tt_piece_t *out)
{
    int n = 0;
    for (int i = 0; i < s->nsteps; i++) {
        const tt_step_t *st = &s->steps[i];
        if (writes) {
            if (st->kind != TT_STEP_SEND)
                add(st->dst, elem, nslices, slice, mask, out, &n);
            continue;
        }
        if (st->kind != TT_STEP_RECV)
            add(st->src, elem, nslices, slice, mask, out, &n);
        if (st->kind == TT_STEP_REDUCE) /* dst = dst op src */
            add(st->dst, elem, nslices, slice, mask, out, &n);
    }
    if (n < 2)
        return n;
    qsort(out, (size_t)n, sizeof *out, piece_order);
    int merged = 0;
    for (int i = 1; i < n; i++) {
        tt_piece_t *last = &out[merged];
        if (out[i].buf == last->buf && out[i].off <= last->off + last->bytes) {
            size_t end = out[i].off + out[i].bytes;
            if (end > last->off + last->bytes)
                last->bytes = end - last->off;
        } else {
            out[++merged] = out[i];
        }
    }
    return merged + 1;
}
