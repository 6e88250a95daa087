/* SPDX-License-Identifier: MIT */
/*
 * One cell of a tutti-bw table: the pair measures while every other rank
 * waits in the bootstrap's blocking exchange (asleep, so it takes no CPU
 * from the pair), then all ranks pass the timer's result to rank 0.
 */
#include <stdlib.h>
#include <string.h>

#include "bw.h"
#include "comm/comm.h"
#include "core/clock.h"

typedef struct {
    int valid;
    tt_bw_result_t res;
} cell_record_t;

tutti_status_t tt_bw_cell(tt_bw_job_t *job, tt_bw_tp_t *tp, int a, int b, tt_bw_kind_t kind, size_t bytes,
                          tt_bw_result_t *res, int *valid)
{
    int me = job->rank, n = job->nranks;
    cell_record_t mine = {0};
    tutti_status_t st = TUTTI_SUCCESS;
    if ((me == a || me == b) && tp->uses[a * n + b]) {
        int peer = me == a ? b : a;
        tt_comm_t *c = tp->in;
        tt_bw_link_t link = {.ops = c->peers[peer].ops,
                             .conn = c->peers[peer].conn,
                             .nchannels = c->nchannels,
                             .timeout_ms = c->timeout_ms,
                             .yield = tp->force_yield,
                             .sendbuf = tp->sendbuf,
                             .recvbuf = tp->recvbuf};
        st = tt_bw_pair_measure(&link, me == a, kind, bytes, &job->o->rule, &mine.res);
        mine.valid = st == TUTTI_SUCCESS && me == a;
    }
    /* Every rank takes part, so that a failure on the pair reaches all. */
    cell_record_t *all = calloc((size_t)n, sizeof *all);
    if (!all)
        return TUTTI_ERR_NO_MEMORY;
    mine.valid = st ? -1 : mine.valid;
    tutti_status_t gst = tt_bootstrap_allgather(&job->in->bs, &mine, all, sizeof mine);
    if (!gst)
        for (int r = 0; r < n; r++)
            if (all[r].valid < 0)
                gst = TUTTI_ERR_PEER_FAILED;
    if (!gst) {
        *res = all[a].res;
        *valid = all[a].valid;
    }
    free(all);
    return st ? st : gst;
}

int tt_bw_class_pairs(const tt_bw_tp_t *tp, int *as, int *bs, int max)
{
    int count = 0;
    for (int a = 0; a < tp->n; a++)
        for (int b = a + 1; b < tp->n; b++) {
            if (!tp->uses[a * tp->n + b])
                continue;
            int seen = 0;
            for (int k = 0; k < count && !seen; k++)
                seen = strcmp(tp->cls[as[k] * tp->n + bs[k]], tp->cls[a * tp->n + b]) == 0;
            if (!seen && count < max) {
                as[count] = a;
                bs[count++] = b;
            }
        }
    return count;
}

void tt_bw_format_bytes(size_t b, char *out, size_t len)
{
    if (b >= (1u << 30) && b % (1u << 30) == 0)
        snprintf(out, len, "%zu GiB", b >> 30);
    else if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(out, len, "%zu MiB", b >> 20);
    else if (b >= (1u << 10) && b % (1u << 10) == 0)
        snprintf(out, len, "%zu KiB", b >> 10);
    else
        snprintf(out, len, "%zu B", b);
}

double tt_bw_memcpy_gbps(size_t bytes)
{
    char *src = malloc(bytes), *dst = malloc(bytes);
    double best = 0;
    if (!src || !dst) {
        free(src);
        free(dst);
        return 0;
    }
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    /* Passes of at least 2 ms, so small copies are timed in bulk; the first
     * pass faults the pages in and warms the caches. */
    int reps = (int)((size_t)(32 << 20) / bytes) + 1;
    for (int i = 0; i < 6; i++) {
        int64_t t0 = tt_now_ns();
        for (int k = 0; k < reps; k++) {
            memcpy(dst, src, bytes);
            __asm__ __volatile__("" : : "r"(dst) : "memory"); /* keep every copy */
        }
        double s = (double)(tt_now_ns() - t0) * 1e-9;
        if (i > 0 && s > 0 && (double)bytes * reps / s / 1e9 > best)
            best = (double)bytes * reps / s / 1e9;
    }
    free(src);
    free(dst);
    return best;
}
