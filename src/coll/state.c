/* SPDX-License-Identifier: MIT */
/*
 * The coll layer's state on a communicator (state.h), made on first use
 * and freed with the communicator, and what it tells the layers above: the
 * bytes this rank sent, and tutti-explain --measure's trace of the last
 * call.
 */
#include <stdlib.h>

#include "coll/coll.h"
#include "coll/state.h"

static void state_destroy(tt_comm_t *comm, void *state)
{
    tt_coll_state_t *s = state;
    (void)comm;
    tt_sched_cache_free(&s->sched_cache);
    free(s->scratch);
    free(s->engine_ws);
    free(s->wait_fds);
    free(s);
}

static const tt_layer_ops_t coll_layer_ops = {.destroy = state_destroy};

tt_coll_state_t *tt_coll_state(tt_comm_t *comm)
{
    return tt_comm_layer_make(comm, TT_LAYER_COLL, sizeof(tt_coll_state_t), &coll_layer_ops,
                              "the collectives' state");
}

uint64_t tt_coll_bytes_sent(tt_comm_t *comm)
{
    tt_coll_state_t *s = tt_comm_layer(comm, TT_LAYER_COLL);
    return s ? s->bytes_sent : 0;
}

void tt_coll_trace(tt_comm_t *comm, int64_t *round_end_ns, int cap)
{
    tt_coll_state_t *s = tt_coll_state(comm);
    if (s) {
        s->trace.round_end_ns = round_end_ns;
        s->trace.cap = cap;
    }
}

const tt_algorithm_t *tt_coll_traced(tt_comm_t *comm, int *nrounds, int *nslices)
{
    tt_coll_state_t *s = tt_comm_layer(comm, TT_LAYER_COLL);
    if (!s || !s->trace.algo)
        return NULL;
    *nrounds = s->trace.nrounds;
    *nslices = s->trace.nslices;
    return s->trace.algo;
}
