/* SPDX-License-Identifier: MIT */
/*
 * tuner-bench: the tuner's choices against one algorithm (the ring by
 * default), in one process. Each rank joins two communicators, one tuned
 * and one with TUTTI_ALGO set to the other algorithm, and times fp32 sum
 * calls of one collective (all-reduce, broadcast or reduce, root 0) on them
 * in alternation, size by size, so both see the same machine at the same
 * moment (this project's machines change speed from one process to the
 * next). Prints a Markdown table of medians; exit status 1 if, where the
 * tuner picks something else, it is more than 10% slower.
 *
 *     tutti-run -n 4 perf/compare/tuner-bench [-b 8] [-e 256M] [-r 7]
 *     tutti-run -n 65 perf/compare/tuner-bench -C broadcast -a chain -b 4K -e 4K
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/registry.h"
#include "api/collectives.h"
#include "comm/comm.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "tune/policy.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean time of iters calls on count floats, slowest rank's, in us. */
static double time_calls(tt_coll_t coll, tutti_comm_t comm, float *in, float *out, size_t count, int iters)
{
    double local, slowest = -1;
    if (tutti_barrier(comm, NULL))
        return -1;
    int64_t t0 = tt_now_ns();
    for (int i = 0; i < iters; i++)
        if (tt_coll_call(coll, in, out, count, TUTTI_FP32, TUTTI_SUM, 0, comm, NULL))
            return -1;
    local = (double)(tt_now_ns() - t0) / 1e3 / iters;
    if (tutti_allreduce(&local, &slowest, 1, TUTTI_FP64, TUTTI_MAX, comm, NULL))
        return -1;
    return slowest;
}

/* The options into their variables; 0, or 2 after printing the usage. */
static int parse_options(int argc, char **argv, uint64_t *minb, uint64_t *maxb, int *reps, tt_coll_t *coll,
                         const char **against)
{
    for (int c; (c = getopt(argc, argv, "b:e:r:C:a:h")) != -1;) {
        int64_t v;
        if ((c == 'b' && tt_parse_size(optarg, minb)) || (c == 'e' && tt_parse_size(optarg, maxb)) ||
            (c == 'r' && (tt_parse_int(optarg, &v) || v < 1 || (*reps = (int)v, 0))) ||
            (c == 'C' &&
             (tt_coll_parse(optarg, coll) ||
              (*coll != TT_COLL_ALLREDUCE && *coll != TT_COLL_BROADCAST && *coll != TT_COLL_REDUCE))) ||
            (c == 'a' && !tt_algo_named(*against = optarg)) || c == 'h' || c == '?') {
            fprintf(stderr, "usage: tutti-run -n P tuner-bench [-b MIN] [-e MAX] [-r REPEATS] "
                            "[-C allreduce|broadcast|reduce] [-a ALGORITHM]\n");
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t minb = 8, maxb = 256 << 20;
    int reps = 7;
    tt_coll_t coll = TT_COLL_ALLREDUCE;
    const char *against = "ring";
    if (parse_options(argc, argv, &minb, &maxb, &reps, &coll, &against))
        return 2;
    const tt_algorithm_t *other = tt_algo_named(against);
    if (!other->build[coll]) {
        fprintf(stderr, "tuner-bench: %s does not serve %s\n", against, tt_coll_name(coll));
        return 2;
    }
    tutti_comm_t tuned, forced;
    tutti_unique_id_t id;
    if (tutti_comm_init_env(&tuned, NULL)) {
        fprintf(stderr, "tuner-bench: %s (run it under tutti-run)\n", tutti_comm_last_error(NULL));
        return 1;
    }
    tt_comm_t *tc =
        tt_comm_lookup(tuned, NULL); /* the handle is no address: the internals, for the tuner's pick */
    int rank = tc->rank, p = tc->nranks;
    if ((rank == 0 && tutti_get_unique_id(&id)) ||
        tutti_broadcast(&id, &id, sizeof id, TUTTI_UINT8, 0, tuned, NULL))
        return 1;
    setenv("TUTTI_ALGO", against, 1); /* read when the second communicator is made */
    if (tutti_comm_init(&forced, p, rank, &id, NULL)) {
        fprintf(stderr, "tuner-bench: %s\n", tutti_comm_last_error(NULL));
        return 1;
    }
    unsetenv("TUTTI_ALGO");
    float *in = calloc(maxb / 4 + 1, 4), *out = calloc(maxb / 4 + 1, 4);
    double *t_tuned = calloc((size_t)reps, sizeof(double)), *t_forced = calloc((size_t)reps, sizeof(double));
    if (!in || !out || !t_tuned || !t_forced)
        return 1;
    int worse = 0;
    if (rank == 0)
        printf("%s, %d ranks\n\n| size | tuner picks | tuned us | %s us | tuned / %s |\n"
               "|---:|---|---:|---:|---:|\n",
               tt_coll_name(coll), p, against, against);
    for (uint64_t size = minb; size <= maxb; size *= 2) {
        size_t count = size / 4 ? size / 4 : 1;
        /* about 20 ms of work per timing, at least 2 iterations */
        double probe = time_calls(coll, forced, in, out, count, 1);
        int iters = probe > 0 && probe < 10000 ? (int)(20000 / probe) : 2;
        iters = iters < 2 ? 2 : iters > 2000 ? 2000 : iters;
        for (int r = 0; r < reps; r++) {
            t_tuned[r] = time_calls(coll, tuned, in, out, count, iters);
            t_forced[r] = time_calls(coll, forced, in, out, count, iters);
            if (t_tuned[r] < 0 || t_forced[r] < 0) {
                fprintf(stderr, "tuner-bench: rank %d: %s\n", rank, tutti_comm_last_error(tuned));
                return 1;
            }
        }
        qsort(t_tuned, (size_t)reps, sizeof(double), by_value);
        qsort(t_forced, (size_t)reps, sizeof(double), by_value);
        double a = t_tuned[reps / 2], b = t_forced[reps / 2];
        tt_coll_args_t args = {.coll = coll, .nranks = p, .count = count, .hosts = &tc->hosts};
        const tt_algorithm_t *pick = tt_algo_choose(&tc->policy, &args, count * 4, 4).algo;
        int bad = pick != other && a > 1.10 * b;
        worse += bad;
        if (rank == 0)
            printf("| %llu | %s | %.2f | %.2f | %.2f%s |\n", (unsigned long long)size, pick->name, a, b,
                   a / b, bad ? " **slower**" : "");
        fflush(stdout);
    }
    tutti_comm_destroy(forced);
    tutti_comm_destroy(tuned);
    free(in);
    free(out);
    free(t_tuned);
    free(t_forced);
    return worse ? 1 : 0;
}
