/* SPDX-License-Identifier: MIT */
/*
 * The cost model: alpha (seconds per message), beta (seconds per byte
 * moved) and gamma (seconds per byte reduced) for each class of link, and
 * the price of a schedule built from them. The model reads the schedules
 * themselves, so it sees each algorithm's rounds, bytes per link, the
 * messages that share a round and the engine's slices.
 */
#ifndef TT_COST_H
#define TT_COST_H

#include <stddef.h>

#include "core/link.h"
#include "sched/schedule.h"
#include "tune/cost_fix.h"

typedef struct {
    double alpha; /* s per message */
    double beta;  /* s per byte on the wire */
    double gamma; /* s per byte reduced (where this link class's data is reduced) */
} tt_link_cost_t;

typedef struct {
    tt_link_cost_t link[TT_LINK_COUNT];
    tt_link_t intra, inter; /* the class of a link inside a host, and between hosts */
    int classes_fixed;      /* the tuning file set intra or inter: they win over links */
    tt_link_t (*link_of)(const void *arg, int a,
                         int b); /* each pair's class (a communicator's); NULL: intra/inter */
    const void *link_arg;
    int inter_links; /* independent inter-host links per host (NICs); its ranks share them */
    /* Ranks per CPU on the most crowded host (1 when each rank has a CPU).
     * Crowded ranks share their CPUs' copying and reducing, and a rank that
     * waits for a peer gets its CPU back only after a switch (wake_s). */
    double crowding;
    double wake_s;
    tt_cost_fix_t fix; /* measured corrections (tune/cost_fix.h); the model alone prices the rest */
} tt_cost_model_t;

/* The documented defaults (host memory: shm inside a host, tcp across). */
void tt_cost_defaults(tt_cost_model_t *m);
/*
 * Overrides from a tuning file: lines "CLASS ALPHA_US GB_PER_S REDUCE_GB_PER_S"
 * ("shm 1.0 8 10"), "intra CLASS", "inter CLASS", "inter_links N", "wake_us US",
 * "fix ..." (tune/cost_fix.h); # starts a comment.
 * Returns TUTTI_ERR_CONFIG with err set on a bad line or unreadable file.
 */
tutti_status_t tt_cost_load(tt_cost_model_t *m, const char *path, char *err, size_t errlen);
/* Prices pairs by the class of each pair's link, which link_of(arg, a, b)
 * tells (the caller's, kept alive as long as m prices with it), and takes
 * intra and inter from the first pair inside a host and between hosts of
 * hosts. */
void tt_cost_use_links(tt_cost_model_t *m, const tt_hosts_t *hosts, int nranks,
                       tt_link_t (*link_of)(const void *arg, int a, int b), const void *arg);
/* The class of the link between ranks a and b. */
tt_link_t tt_cost_link(const tt_cost_model_t *m, const tt_hosts_t *hosts, int a, int b);

/* What one rank does in one round, per slice. */
typedef struct {
    double seconds;                          /* predicted, for one slice: the busier direction */
    double send_seconds, recv_seconds;       /* each direction; receiving includes reducing and copying */
    size_t sent, received, reduced;          /* bytes, whole call (all slices) */
    size_t sent_off_host, received_off_host; /* of those, to and from other hosts */
    int messages;                            /* sends and receives, per slice */
    tt_link_t busiest;                       /* the link class that bounds the round */
} tt_round_cost_t;

tt_round_cost_t tt_cost_round(const tt_cost_model_t *m, const tt_coll_args_t *args, const tt_sched_t *s,
                              int round, size_t elem, int nslices);

/*
 * Predicted seconds for algo running args (rank ignored) on elements of
 * elem bytes cut into S = nslices slices: D + W (1 - 1/S). D is one slice's
 * trip through every rank's rounds, each transfer waiting for both its
 * ends; W is the busiest rank's sending or receiving (and reducing) time
 * over all slices, or the busiest host's traffic to other hosts through
 * its inter_links links if that is longer: the rate at which the pipeline
 * drains. Up to 64 ranks every schedule is walked; beyond that a sample
 * of the ranks (tune/cost_sample.h) prices algorithms whose ranks all run
 * alike, exactly as the walk would, and the walk prices the others where
 * their schedules hold O(p log p) steps in all (trees, chains), so that
 * the work stays O(p log p) per rank. Negative when algo cannot build the
 * schedule.
 */
double tt_cost_predict(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                       size_t elem, int nslices);
/* The same for several slice counts at once, building the schedules once:
 * out[i] for nslices[i]. 0, or -1 when algo cannot build the schedule. */
int tt_cost_predict_each(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out);
/* The same by walking every rank's schedule, whatever their number: the
 * reference the sample is checked against, O(p^2) steps for the ring. */
int tt_cost_predict_walk(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out);
/* Whether walking every schedule of a job of p ranks and this many steps
 * in all keeps to O(log p) steps per rank (the tree and chain algorithms
 * do; the ring's p^2 steps do not). */
int tt_cost_walk_affordable(double steps, int p);
/* When each of args->rank's nrounds rounds ends for the first slice, in
 * seconds from the start (up to 64 ranks). 0, or -1 if it cannot tell. */
int tt_cost_round_ends(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                       size_t elem, int nslices, double *ends, int nrounds);

#endif
