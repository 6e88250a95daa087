/* SPDX-License-Identifier: MIT */
/* tutti-explain --measure: each round's measured end on real ranks, beside the cost model's prediction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/collectives.h"
#include "coll/coll.h"
#include "comm/comm.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "tools/explain_measure.h"
#include "tune/policy.h"

#define MEASURE_ITERS 20
#define MEASURE_WARMUP 3
#define MAX_TRACED_ROUNDS 4096

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int tt_explain_measure(tt_coll_t coll, const tt_algorithm_t *algo, size_t bytes, tutti_dtype_t dtype,
                       int root)
{
    /* One slice, so a round's end is a point in time; the algorithm is
     * forced for this collective only. */
    setenv("TUTTI_SLICE_BYTES", "1G", 1);
    if (algo) {
        char var[64];
        snprintf(var, sizeof var, "TUTTI_ALGO_%s", tt_coll_name(coll));
        for (char *c = var; *c; c++)
            *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
        setenv(var, algo->name, 1);
    }
    tutti_comm_t handle;
    tutti_status_t st = tutti_comm_init_env(&handle, NULL);
    if (st) {
        fprintf(stderr, "tutti-explain --measure: %s: %s (run it under tutti-run)\n", tutti_status_name(st),
                tutti_comm_last_error(NULL));
        return 1;
    }
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* what the tracing reads */
    int p = comm->nranks, me = comm->rank;
    size_t elem = tutti_dtype_size(dtype), count = bytes / elem;
    if (tt_coll_count_per_rank(coll))
        count /= (size_t)p;
    char *in = calloc(bytes + elem, 1), *out = calloc(bytes + elem, 1);
    int64_t *ends = calloc(MAX_TRACED_ROUNDS, sizeof *ends);
    double *samples = calloc((size_t)MAX_TRACED_ROUNDS * MEASURE_ITERS, sizeof *samples);
    if (!in || !out || !ends || !samples) {
        fprintf(stderr, "tutti-explain --measure: out of memory\n");
        return 1;
    }
    tt_coll_trace(comm, ends, MAX_TRACED_ROUNDS);
    int nrounds = 0, nslices = 0;
    const tt_algorithm_t *ran = NULL;
    for (int it = 0; it < MEASURE_WARMUP + MEASURE_ITERS && !st; it++) {
        st = tutti_barrier(handle, NULL);
        int64_t t0 = tt_now_ns();
        if (!st)
            st = tt_coll_call(coll, in, out, count, dtype, TUTTI_SUM, root, handle, NULL);
        if (!st)
            ran = tt_coll_traced(comm, &nrounds, &nslices);
        for (int k = 0; !st && it >= MEASURE_WARMUP && k < nrounds; k++)
            samples[(size_t)k * MEASURE_ITERS + (size_t)(it - MEASURE_WARMUP)] =
                (double)(ends[k] - t0) * 1e-9;
    }
    int rc = 0;
    if (st) {
        fprintf(stderr, "tutti-explain --measure: rank %d: %s\n", me, tutti_comm_last_error(handle));
        rc = 1;
    } else if (me == 0 && ran) {
        tt_coll_args_t args = {
            .coll = coll, .nranks = p, .rank = 0, .root = root, .count = count, .hosts = &comm->hosts};
        double *predicted = calloc((size_t)nrounds + 1, sizeof *predicted);
        int have = predicted && tt_cost_round_ends(&comm->policy.tuner.model, ran, &args, elem, 1, predicted,
                                                   nrounds) == 0;
        printf("%s of %zu bytes with %s on %d ranks, one slice, median of %d runs (rank 0's rounds)\n",
               tt_coll_name(coll), bytes, ran->name, p, MEASURE_ITERS);
        printf("%6s %14s %14s %8s\n", "round", "measured_us", "predicted_us", "ratio");
        for (int k = 0; k < nrounds; k++) {
            double *s = samples + (size_t)k * MEASURE_ITERS;
            qsort(s, MEASURE_ITERS, sizeof *s, by_value);
            double m = s[MEASURE_ITERS / 2];
            if (have)
                printf("%6d %14.1f %14.1f %8.2f\n", k + 1, m * 1e6, predicted[k] * 1e6,
                       predicted[k] > 0 ? m / predicted[k] : 0.0);
            else
                printf("%6d %14.1f %14s %8s\n", k + 1, m * 1e6, "-", "-");
        }
        free(predicted);
    }
    tutti_comm_destroy(handle);
    free(in);
    free(out);
    free(ends);
    free(samples);
    return rc;
}
