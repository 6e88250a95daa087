/* SPDX-License-Identifier: MIT */
/* The algorithm registry: which algorithms exist and which one a call uses. */
#ifndef TT_ALGO_H
#define TT_ALGO_H

#include "sched/schedule.h"
#include "tune/tuner.h"

extern const tt_algorithm_t *const tt_algorithms[];
extern const int tt_num_algorithms;

/* Name of a collective ("allreduce"). */
const char *tt_coll_name(tt_coll_t coll);
/* The registered algorithm with this name, or NULL. */
const tt_algorithm_t *tt_algo_named(const char *name);
/* What steers the choice, read from the environment once per
 * communicator (environment look-ups cost more than a small call). */
typedef struct {
    const tt_algorithm_t *forced[TT_COLL_COUNT]; /* TUTTI_ALGO_<COLL>, else TUTTI_ALGO; NULL: tuned */
    tt_tuner_t tuner;
} tt_algo_policy_t;

/* Reads TUTTI_ALGO*, TUTTI_SLICE_BYTES, TUTTI_DETERMINISTIC and
 * TUTTI_TUNING_FILE; TUTTI_ERR_CONFIG with err set on an unknown algorithm,
 * one that does not serve its collective, or a bad tuning file. */
tutti_status_t tt_algo_policy_from_env(tt_algo_policy_t *policy, char *err, size_t errlen);
/* A digest of what steers the choice: ranks must agree on it. */
uint64_t tt_algo_policy_hash(const tt_algo_policy_t *policy);
/*
 * The algorithm and slice size for a call moving bytes (the whole buffer)
 * in elements of elem bytes: the forced one where it serves the collective
 * (in deterministic mode, only if it adds in rank order), else the tuner's.
 */
tt_tuned_t tt_algo_choose(tt_algo_policy_t *policy, const tt_coll_args_t *args, size_t bytes, size_t elem);
/* Builds this rank's schedule for args with algo. */
tutti_status_t tt_algo_build(const tt_algorithm_t *algo, const tt_coll_args_t *args, tt_sched_t *s);

#endif
