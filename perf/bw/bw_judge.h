/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw's judgements from its own figures: whether a link runs as fast
 * as a baseline measured the same way says it could, or why no verdict
 * can be given; and whether a --fit explains the measurements it rests on.
 * Pure functions, so the suites can try every case.
 */
#ifndef TT_BW_JUDGE_H
#define TT_BW_JUDGE_H

#include <stddef.h>

typedef enum {
    TT_VERDICT_NORMAL,   /* at least 0.75 of the baseline */
    TT_VERDICT_BELOW,    /* 0.4 to 0.75 */
    TT_VERDICT_LOW,      /* under 0.4 */
    TT_VERDICT_ABOVE,    /* above the baseline, which is then no ceiling */
    TT_VERDICT_WITHHELD, /* the machine's state makes a verdict meaningless */
    TT_VERDICT_UNKNOWN   /* no baseline */
} tt_bw_verdict_t;

/* What a verdict rests on. */
typedef struct {
    double measured;    /* GB/s: the figure the table shows */
    double cv;          /* its repeats' standard deviation / mean */
    double baseline;    /* GB/s, measured the same way; <= 0: none */
    int same_host;      /* the pair shares rank 0's host, so it needs two of its CPUs */
    int shared_cpu;     /* the pair's two ranks are pinned to one CPU */
    int cpus;           /* CPUs of rank 0's host the job may run on */
    double others_cpus; /* CPUs other processes kept busy meanwhile; < 0: unknown */
} tt_bw_evidence_t;

/* Figures whose repeats vary more than this (cv) say nothing about the link. */
#define TT_BW_NOISY_CV 0.5
/* Other processes' CPUs beyond what the pair leaves free that withhold a verdict. */
#define TT_BW_BUSY_MARGIN 0.5

/* The verdict on e, with why filled (a phrase; empty for a plain verdict). */
tt_bw_verdict_t tt_bw_judge(const tt_bw_evidence_t *e, char *why, size_t len);
/* "normal", "below the usual", "low", "above its baseline", "withheld", "unknown". */
const char *tt_bw_verdict_name(tt_bw_verdict_t v);

/* A fitted line may miss a measured point by this factor, and a model the
 * collectives' times by this much (median relative error), before the fit
 * is said not to explain its data. */
#define TT_BW_FIT_MAX_MISS 2.0
#define TT_BW_FIT_MAX_ERROR 0.5

/* The largest factor max(fitted/measured, measured/fitted) over n points
 * (positive times), and at which index (*at); 1 when n is 0. */
double tt_bw_fit_miss(const double *measured, const double *fitted, int n, int *at);

#endif
