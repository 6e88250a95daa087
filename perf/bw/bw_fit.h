/* SPDX-License-Identifier: MIT */
/* tutti-bw --fit: the parts shared by the link fit and the collective check. */
#ifndef TT_BW_FIT_H
#define TT_BW_FIT_H

#include "bw.h"
#include "tune/cost.h"

#define TT_FIT_MAX_ALGOS 16
#define TT_FIT_MAX_SIZES 40

/* One pass over the all-reduce sizes: every algorithm the tuner considers,
 * each forced on a communicator of its own, and the tuner, timed in
 * alternation (us: median over repeats of the slowest rank's mean). */
typedef struct {
    int nalgo, nsizes;
    const tt_algorithm_t *algo[TT_FIT_MAX_ALGOS];
    size_t bytes[TT_FIT_MAX_SIZES];
    double us[TT_FIT_MAX_ALGOS + 1][TT_FIT_MAX_SIZES]; /* [nalgo]: the tuner */
} tt_fit_pass_t;

/* Times one pass; the tuner reads the tuning file at path (NULL: the job's environment). */
tutti_status_t tt_bw_fit_pass(tt_bw_job_t *job, const char *path, tt_fit_pass_t *pass);
/* Adds to m's corrections, for this job's shape, what pass measured over
 * what m predicts (per algorithm and size class, the median of each class
 * and its neighbours, against noise). Returns how many did not fit. */
int tt_bw_fit_corrections(const tt_bw_job_t *job, const tt_fit_pass_t *pass, tt_cost_model_t *m);
/* Adds to m the corrections of other job shapes from the tuning file at
 * path, moved onto m's link parameters; returns how many did not fit. */
int tt_bw_fit_keep_shapes(const tt_bw_job_t *job, const char *path, tt_cost_model_t *m);
/* How well the fitted models predict the all-reduce times: the median
 * over the algorithms of each one's median relative error. */
typedef struct {
    double link_fit; /* the fitted links alone, against the first pass */
    double after;    /* with the corrections, against the second pass */
} tt_fit_errors_t;

/* Rank 0: the prediction errors of the default (before), link-fitted and
 * corrected (after) models, and the tuner's picks before and after against
 * the fastest algorithm in the second pass; returns at how many sizes the
 * fitted tuner's pick is within 10% of the fastest. */
int tt_bw_fit_report(tt_bw_job_t *job, const tt_fit_pass_t *first, const tt_fit_pass_t *second,
                     const tt_cost_model_t *before, const tt_cost_model_t *link, const tt_cost_model_t *after,
                     tt_fit_errors_t *errs);

#endif
