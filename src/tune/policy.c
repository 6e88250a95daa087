/* SPDX-License-Identifier: MIT */
/* The choice of algorithm per call: what the user forced, else what the tuner picks. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/env_config.h"
#include "core/hash.h"
#include "tune/policy.h"
#include "algorithms/registry.h"

/* TUTTI_ALGO_<COLLECTIVE> for each collective, in tt_coll_t order;
 * TT_CFG_COUNT for those no algorithm serves. */
#define ALGO_VAR_1(ID) TT_CFG_ALGO_##ID
#define ALGO_VAR_0(ID) TT_CFG_COUNT
#define ALGO_VAR(ID, NAME, PER_RANK, REDUCES, SCHEDULED) ALGO_VAR_##SCHEDULED(ID),
static const tt_config_id_t per_coll_var[TT_COLL_COUNT] = {TT_COLL_LIST(ALGO_VAR)};

static tutti_status_t named_or_empty(const char *var, const char *name, const tt_algorithm_t **out, char *err,
                                     size_t errlen)
{
    *out = NULL;
    if (!*name)
        return TUTTI_SUCCESS;
    *out = tt_algo_named(name);
    if (*out)
        return TUTTI_SUCCESS;
    snprintf(err, errlen, "%s=%s: no such algorithm (tutti-info -A lists them)", var, name);
    return TUTTI_ERR_CONFIG;
}

tutti_status_t tt_algo_policy_from_env(tt_algo_policy_t *policy, char *err, size_t errlen)
{
    *policy = (tt_algo_policy_t){0};
    tt_tuner_t *t = &policy->tuner;
    tt_cost_defaults(&t->model);
    const char *file = tt_config_str(TT_CFG_TUNING_FILE);
    if (*file)
        TT_TRY(tt_cost_load(&t->model, file, err, errlen));
    t->slice_bytes = (size_t)tt_config_int(TT_CFG_SLICE_BYTES);
    t->deterministic = tt_config_int(TT_CFG_DETERMINISTIC) != 0;
    const tt_algorithm_t *all;
    TT_TRY(named_or_empty("TUTTI_ALGO", tt_config_str(TT_CFG_ALGO), &all, err, errlen));
    for (int c = 0; c < TT_COLL_COUNT; c++) {
        policy->forced[c] = all && all->build[c] ? all : NULL;
        if (per_coll_var[c] == TT_CFG_COUNT)
            continue;
        const tt_algorithm_t *one;
        const char *var = tt_config_core.entries[per_coll_var[c]].name;
        TT_TRY(named_or_empty(var, tt_config_str(per_coll_var[c]), &one, err, errlen));
        if (one && !one->build[c]) {
            snprintf(err, errlen, "%s=%s: %s does not serve %s", var, one->name, one->name,
                     tt_coll_name((tt_coll_t)c));
            return TUTTI_ERR_CONFIG;
        }
        if (one)
            policy->forced[c] = one;
    }
    return TUTTI_SUCCESS;
}

uint64_t tt_algo_policy_hash(const tt_algo_policy_t *policy)
{
    const tt_tuner_t *t = &policy->tuner;
    const tt_cost_model_t *m = &t->model;
    uint64_t h = TT_HASH_SEED;
    for (int c = 0; c < TT_COLL_COUNT; c++) {
        const char *name = policy->forced[c] ? policy->forced[c]->name : "";
        h = tt_hash(name, strlen(name) + 1, h);
    }
    for (int l = 0; l < TT_LINK_COUNT; l++)
        h = tt_hash(&m->link[l], sizeof m->link[l], h); /* three doubles: no padding */
    int ints[] = {m->intra, m->inter, m->inter_links, t->deterministic};
    h = tt_hash(ints, sizeof ints, h);
    h = tt_hash(&m->wake_s, sizeof m->wake_s, h);
    for (int i = 0; i < m->fix.n; i++) { /* field by field: the entries have padding */
        const tt_cost_fix_entry_t *e = &m->fix.e[i];
        int key[] = {e->coll, e->nranks, e->nhosts, e->size_class};
        h = tt_hash(e->algo, strlen(e->algo) + 1, h);
        h = tt_hash(key, sizeof key, h);
        h = tt_hash(&e->factor, sizeof e->factor, h);
    }
    return tt_hash(&t->slice_bytes, sizeof t->slice_bytes, h);
}

tt_tuned_t tt_algo_choose(tt_algo_policy_t *policy, const tt_coll_args_t *args, size_t bytes, size_t elem)
{
    const tt_algorithm_t *forced = policy->forced[args->coll];
    /* Deterministic mode keeps a forced algorithm only if it adds in rank order. */
    if (forced && (!policy->tuner.deterministic || tt_tuner_considers(&policy->tuner, forced, args))) {
        size_t slice = policy->tuner.slice_bytes ? policy->tuner.slice_bytes : TT_TUNER_DEFAULT_SLICE;
        return (tt_tuned_t){forced, slice, -1};
    }
    return tt_tuner_pick(&policy->tuner, args, bytes, elem);
}
