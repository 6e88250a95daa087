/* SPDX-License-Identifier: MIT */
/*
 * The cost model for many ranks, from a sample of their schedules: the
 * cheap half of tt_cost_predict_each (tune/cost.h), which falls back to
 * the walk of every schedule where the sample cannot stand for the job.
 */
#ifndef TT_COST_SAMPLE_H
#define TT_COST_SAMPLE_H

#include "tune/cost.h"

/* Ranks a sample holds at most besides rank 0, the root and the last: this
 * many spread evenly, and this many of each of a few whole hosts. */
#define TT_COST_SAMPLE_RANKS 32

/*
 * Prices algo for args from a sample of its ranks (every rank of small
 * hosts, rank 0, the root, the last, and ranks spread evenly): out[i] for
 * nslices[i]. One slice's trip is the sum over rounds of the costliest
 * sampled rank's round, which is the walk's where every rank runs the same
 * rounds (its peers shifted); the work is the busiest sampled rank's, or
 * the busiest sampled host's traffic to other hosts. *alike says whether
 * every sampled rank ran the same rounds, with the same steps and bytes;
 * *steps estimates the steps of every rank's schedule together, so the
 * caller can tell whether walking them all is affordable. 0, or -1 when
 * algo cannot build a schedule (or memory ran out).
 */
int tt_cost_sample_price(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out, int *alike, double *steps);

#endif
