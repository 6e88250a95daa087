/* SPDX-License-Identifier: MIT */
/* The algorithm registry. One algorithm per collective for now; the tuner
 * will choose among several once they exist. */
#include <stddef.h>

#include "algo.h"

const tt_algorithm_t *const tt_algorithms[] = {&tt_algo_ring, &tt_algo_chain, &tt_algo_pairwise,
                                               &tt_algo_dissemination, &tt_algo_p2p};
const int tt_num_algorithms = sizeof tt_algorithms / sizeof tt_algorithms[0];

static const char *const coll_names[TT_COLL_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall", "barrier", "send", "recv"};

const char *tt_coll_name(tt_coll_t coll)
{
    return (unsigned)coll < TT_COLL_COUNT ? coll_names[coll] : "unknown";
}

const tt_algorithm_t *tt_algo_for(tt_coll_t coll)
{
    for (int i = 0; i < tt_num_algorithms; i++)
        if (tt_algorithms[i]->build[coll])
            return tt_algorithms[i];
    return NULL;
}

tutti_status_t tt_algo_build(const tt_coll_args_t *args, tt_sched_t *s)
{
    const tt_algorithm_t *algo = tt_algo_for(args->coll);
    if (!algo)
        return TUTTI_ERR_UNSUPPORTED;
    tt_sched_init(s);
    tutti_status_t st = algo->build[args->coll](args, s);
    if (st != TUTTI_SUCCESS)
        tt_sched_free(s);
    return st;
}
