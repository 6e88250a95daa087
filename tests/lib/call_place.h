/* SPDX-License-Identifier: MIT */
/* For suites that build calls by hand: where a call's buffers go, and running one. */
#ifndef TT_TEST_CALL_PLACE_H
#define TT_TEST_CALL_PLACE_H

#include "coll/coll.h"

/* Points c's buffers into span (n elements of e bytes per block, rank r
 * of p): the input first, the output after it; or, in place (ip), as
 * the API defines the in-place form of coll. */
static inline void tt_test_place(tt_call_t *c, tt_coll_t coll, char *span, size_t n, size_t e, int r, int p,
                                 int ip)
{
    size_t in = (coll == TT_COLL_REDUCE_SCATTER || coll == TT_COLL_ALLTOALL) ? n * (size_t)p : n;
    c->send = span;
    c->recv = span + in * e;
    if (!ip)
        return;
    c->recv = span;
    if (coll == TT_COLL_REDUCE_SCATTER)
        c->recv = span + (size_t)r * n * e;
    if (coll == TT_COLL_ALLGATHER)
        c->send = span + (size_t)r * n * e;
}

/* Validates and runs c on host buffers now, as the compressed all-reduce
 * runs its inner collectives. */
static inline tutti_status_t tt_test_run_host(tt_comm_t *comm, tt_call_t *c)
{
    tutti_status_t st = tt_coll_validate(comm, c, tt_coll_name(c->coll));
    return st ? st : tt_coll_run(comm, c);
}

#endif
