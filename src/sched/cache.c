/* SPDX-License-Identifier: MIT */
/* The schedule cache (see sched_cache.h). */
#include "sched/cache.h"

static int same_shape(const tt_coll_args_t *a, const tt_coll_args_t *b)
{
    return a->coll == b->coll && a->nranks == b->nranks && a->rank == b->rank && a->root == b->root &&
           a->count == b->count && a->in_place == b->in_place;
}

const tt_sched_t *tt_sched_cache_get(tt_sched_cache_t *cache, const tt_algorithm_t *algo,
                                     const tt_coll_args_t *args, tutti_status_t *st)
{
    for (int i = 0; i < TT_SCHED_CACHE_SIZE; i++) {
        tt_sched_cache_entry_t *e = &cache->entries[i];
        if (e->algo == algo && same_shape(&e->args, args))
            return &e->sched;
    }
    tt_sched_cache_entry_t *e = &cache->entries[cache->next_victim];
    cache->next_victim = (cache->next_victim + 1) % TT_SCHED_CACHE_SIZE;
    if (e->algo)
        tt_sched_free(&e->sched);
    e->algo = NULL;
    *st = tt_sched_build(algo, args, &e->sched);
    if (*st)
        return NULL;
    e->algo = algo;
    e->args = *args;
    return &e->sched;
}

void tt_sched_cache_free(tt_sched_cache_t *cache)
{
    for (int i = 0; i < TT_SCHED_CACHE_SIZE; i++)
        if (cache->entries[i].algo)
            tt_sched_free(&cache->entries[i].sched);
}
