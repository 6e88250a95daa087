/* SPDX-License-Identifier: MIT */
/*
 * A communicator's recently used schedules, keyed by algorithm and call
 * shape, so a training loop that repeats the same calls builds each schedule
 * once.
 */
#ifndef TT_SCHED_CACHE_H
#define TT_SCHED_CACHE_H

#include "sched/schedule.h"

#define TT_SCHED_CACHE_SIZE 16

typedef struct {
    const tt_algorithm_t *algo; /* NULL: empty entry */
    tt_coll_args_t args;
    tt_sched_t sched;
} tt_sched_cache_entry_t;

typedef struct {
    tt_sched_cache_entry_t entries[TT_SCHED_CACHE_SIZE];
    int next_victim; /* replaced in turn once full */
} tt_sched_cache_t;

/* The schedule of algo for args, built on first use. NULL (with *st set)
 * when building fails. Valid until the next call on the cache. */
const tt_sched_t *tt_sched_cache_get(tt_sched_cache_t *cache, const tt_algorithm_t *algo,
                                     const tt_coll_args_t *args, tutti_status_t *st);
void tt_sched_cache_free(tt_sched_cache_t *cache);

#endif
