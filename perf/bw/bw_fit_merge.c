/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw --fit keeps the corrections other job shapes measured earlier in
 * the same tuning file. A correction is the measured time over the model's
 * prediction, and the fit replaces the model's link parameters, so each
 * kept correction is moved onto the new parameters: times the old model's
 * prediction over the new one's, which leaves the corrected time (what was
 * measured) as it was.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bw_fit.h"
#include "comm/comm.h"
#include "sched/hosts.h"
#include "algorithms/registry.h"
#include "tune/tuner.h"

/* The model's time for one correction's shape and size: hosts of equal
 * size, CPUs shared as this machine would share them, no corrections. */
static double shape_predict(const tt_cost_model_t *base, const tt_cost_fix_entry_t *e,
                            const tt_algorithm_t *algo)
{
    tt_cost_model_t *m = malloc(sizeof *m);
    uint64_t *ids = calloc((size_t)e->nranks, sizeof *ids);
    tt_hosts_t hosts;
    double t = -1;
    if (!m || !ids)
        goto out;
    *m = *base;
    m->fix.n = 0;
    m->link_of = NULL; /* the pairs of that job are gone; its hosts' classes stand for them */
    int per_host = e->nranks / e->nhosts;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    m->crowding = cpus > 0 && per_host > cpus ? (double)per_host / (double)cpus : 1;
    for (int r = 0; r < e->nranks; r++)
        ids[r] = (uint64_t)(r / (per_host > 0 ? per_host : 1));
    if (tt_hosts_init(&hosts, e->nranks, ids, NULL))
        goto out;
    size_t bytes = (size_t)1 << e->size_class;
    tt_coll_args_t args = {
        .coll = (tt_coll_t)e->coll, .nranks = e->nranks, .count = bytes / 4, .hosts = &hosts};
    if (args.coll == TT_COLL_REDUCE_SCATTER || args.coll == TT_COLL_ALLGATHER ||
        args.coll == TT_COLL_ALLTOALL)
        args.count /= (size_t)e->nranks;
    int nslices = tt_tuner_slices(tt_tuner_chunk_bytes(&args, 4), TT_TUNER_DEFAULT_SLICE);
    t = tt_cost_predict(m, algo, &args, 4, nslices);
    tt_hosts_free(&hosts);
out:
    free(m);
    free(ids);
    return t;
}

int tt_bw_fit_keep_shapes(const tt_bw_job_t *job, const char *path, tt_cost_model_t *m)
{
    tt_cost_model_t *old = calloc(1, sizeof *old);
    char err[256];
    int dropped = 0;
    if (!old)
        return 0;
    tt_cost_defaults(old);
    if (access(path, R_OK) == 0 && tt_cost_load(old, path, err, sizeof err) == TUTTI_SUCCESS)
        for (int i = 0; i < old->fix.n; i++) {
            tt_cost_fix_entry_t e = old->fix.e[i];
            if (e.nranks == job->nranks && e.nhosts == job->in->hosts.nhosts)
                continue; /* this shape was measured again */
            const tt_algorithm_t *algo = tt_algo_named(e.algo);
            double was = algo ? shape_predict(old, &e, algo) : -1,
                   now = algo ? shape_predict(m, &e, algo) : -1;
            if (was > 0 && now > 0)
                e.factor *= was / now;
            dropped += tt_cost_fix_set(&m->fix, &e) != 0;
        }
    free(old);
    return dropped;
}
