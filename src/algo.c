/* SPDX-License-Identifier: MIT */
/* The algorithm registry and the rule that picks one per call (the cost
 * model and tuner will replace the rule). */
#include <stddef.h>
#include <string.h>

#include "algo.h"
#include "env_config.h"

/* Registration order is the fallback preference per collective. */
const tt_algorithm_t *const tt_algorithms[] = {&tt_algo_ring,         &tt_algo_recursive_doubling,
                                               &tt_algo_rabenseifner, &tt_algo_double_tree, &tt_algo_direct,
                                               &tt_algo_bruck,        &tt_algo_chain,
                                               &tt_algo_binomial,     &tt_algo_scatter_allgather,
                                               &tt_algo_pairwise,     &tt_algo_dissemination,
                                               &tt_algo_p2p,          &tt_algo_hierarchical, &tt_algo_ordered};
const int tt_num_algorithms = sizeof tt_algorithms / sizeof tt_algorithms[0];

static const char *const coll_names[TT_COLL_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall", "barrier", "send", "recv"};

const char *tt_coll_name(tt_coll_t coll)
{
    return (unsigned)coll < TT_COLL_COUNT ? coll_names[coll] : "unknown";
}

const tt_algorithm_t *tt_algo_named(const char *name)
{
    for (int i = 0; i < tt_num_algorithms; i++)
        if (strcmp(tt_algorithms[i]->name, name) == 0)
            return tt_algorithms[i];
    return NULL;
}

void tt_algo_policy_from_env(tt_algo_policy_t *policy)
{
    policy->forced = tt_algo_named(tt_config_str(TT_CFG_ALGO));
    policy->small_bytes = (size_t)tt_config_int(TT_CFG_SMALL_BYTES);
    policy->deterministic = tt_config_int(TT_CFG_DETERMINISTIC) != 0;
}

/* Deterministic mode: reductions add in rank order, through the direct
 * all-reduce (small or forced) or the ordered algorithms. */
static const tt_algorithm_t *deterministic_choice(const tt_algo_policy_t *policy, const tt_coll_args_t *args,
                                                  size_t bytes)
{
    if (args->coll == TT_COLL_ALLREDUCE &&
        (policy->forced ? policy->forced == &tt_algo_direct : bytes <= policy->small_bytes))
        return &tt_algo_direct;
    return &tt_algo_ordered;
}

const tt_algorithm_t *tt_algo_choose(const tt_algo_policy_t *policy, const tt_coll_args_t *args, size_t bytes)
{
    if (policy->deterministic && tt_algo_ordered.build[args->coll])
        return deterministic_choice(policy, args, bytes);
    if (policy->forced && policy->forced->build[args->coll])
        return policy->forced;
    /* Small messages: the fewest rounds. */
    if (bytes <= policy->small_bytes) {
        if (args->coll == TT_COLL_ALLREDUCE)
            return &tt_algo_recursive_doubling;
        if (args->coll == TT_COLL_BROADCAST || args->coll == TT_COLL_REDUCE)
            return &tt_algo_binomial;
    }
    for (int i = 0; i < tt_num_algorithms; i++)
        if (tt_algorithms[i]->build[args->coll])
            return tt_algorithms[i];
    return NULL;
}

tutti_status_t tt_algo_build(const tt_algorithm_t *algo, const tt_coll_args_t *args, tt_sched_t *s)
{
    if (!algo || !algo->build[args->coll])
        return TUTTI_ERR_UNSUPPORTED;
    tt_sched_init(s);
    tutti_status_t st = algo->build[args->coll](args, s);
    if (st != TUTTI_SUCCESS)
        tt_sched_free(s);
    return st;
}
