/* SPDX-License-Identifier: MIT */
/* What steers the choice of algorithm, and the choice for one call. */
#ifndef TT_POLICY_H
#define TT_POLICY_H

#include <stdint.h>

#include "sched/schedule.h"
#include "tune/tuner.h"

/* Read from the environment once per communicator (environment look-ups
 * cost more than a small call). */
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

#endif
