/* SPDX-License-Identifier: MIT */
/*
 * The cost model beyond 64 ranks, where it prices from a sample of the
 * ranks' schedules: against the walk of every schedule (the model's own
 * reference) from 65 to 1024 ranks, on one host and on hosts of 8, and the
 * tuner's choices that follow from it.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "algorithms/registry.h"
#include "tests/lib/harness.h"
#include "sched/hosts.h"
#include "tune/cost_sample.h"
#include "tune/policy.h"
#include "tune/tuner.h"

static const int rank_counts[] = {65, 100, 128, 200, 257, 512, 1024};
enum { NSLICES = 3 };

/* Hosts of per_host consecutive ranks (the last may hold fewer). */
static void hosts_of(tt_hosts_t *h, int p, int per_host)
{
    uint64_t *ids = malloc((size_t)p * sizeof *ids);
    ck_assert_ptr_nonnull(ids);
    for (int r = 0; r < p; r++)
        ids[r] = (uint64_t)(r / per_host);
    ck_assert_int_eq(tt_hosts_init(h, p, ids, NULL), TUTTI_SUCCESS);
    free(ids);
}

/* The tuner's three slice counts for a call of bytes. */
static void slice_counts(const tt_coll_args_t *a, int *nslices)
{
    static const size_t slice[NSLICES] = {TT_TUNER_DEFAULT_SLICE, 64 << 10, 1 << 20};
    for (int i = 0; i < NSLICES; i++)
        nslices[i] = tt_tuner_slices(tt_tuner_chunk_bytes(a, 4), slice[i]);
}

/* How far the model may stray from the walk: nowhere where a sample of
 * alike ranks stands for the job, or where it walks every schedule; where
 * neither holds (Rabenseifner's extra ranks, beyond the largest power of
 * two, fold their data in first and take the result last; scatter-allgather's
 * scatter is a tree), the sample aligns rounds by their index, which can
 * count the largest round of Rabenseifner's doubling once more. */
static double tolerance(const tt_tuner_t *t, const tt_algorithm_t *algo, const tt_coll_args_t *a,
                        const int *nslices)
{
    double out[NSLICES], steps;
    int alike;
    ck_assert_int_eq(tt_cost_sample_price(&t->model, algo, a, 4, nslices, NSLICES, out, &alike, &steps), 0);
    return alike || tt_cost_walk_affordable(steps, a->nranks) ? 0.01 : 0.6;
}

/* Every algorithm and collective the tuner considers for one layout and
 * size: the sample's price against the walk's, and the sample's cheapest
 * against the walk's cheapest, by the walk. */
static void check_layout(const tt_tuner_t *t, int p, const tt_hosts_t *hosts, size_t bytes)
{
    for (int c = 0; c < TT_COLL_COUNT; c++) {
        double best_walk = -1, pick_walk = -1, pick_sample = -1;
        const char *best = "", *pick = "";
        for (int i = 0; i < tt_num_algorithms; i++) {
            const tt_algorithm_t *algo = tt_algorithms[i];
            tt_coll_args_t a = {
                .coll = (tt_coll_t)c, .nranks = p, .root = p / 3, .count = bytes / 4, .hosts = hosts};
            if (c == TT_COLL_BARRIER)
                a.count = 0;
            int nslices[NSLICES];
            double sample[NSLICES], walk[NSLICES];
            if (!tt_tuner_considers(t, algo, &a))
                continue;
            slice_counts(&a, nslices);
            if (tt_cost_predict_walk(&t->model, algo, &a, 4, nslices, NSLICES, walk))
                continue; /* point-to-point: no job to walk */
            ck_assert_int_eq(tt_cost_predict_each(&t->model, algo, &a, 4, nslices, NSLICES, sample), 0);
            double tol = tolerance(t, algo, &a, nslices);
            for (int k = 0; k < NSLICES; k++) {
                double ratio = sample[k] / walk[k];
                ck_assert_msg(ratio > 1 / (1 + tol) && ratio < 1 + tol,
                              "%s %s p=%d hosts=%d %zu B, %d slices: sampled %g s, walked %g s", algo->name,
                              tt_coll_name(a.coll), p, hosts ? hosts->nhosts : 1, bytes, nslices[k],
                              sample[k], walk[k]);
            }
            if (best_walk < 0 || walk[0] < best_walk)
                best_walk = walk[0], best = algo->name;
            if (pick_sample < 0 || sample[0] < pick_sample)
                pick_sample = sample[0], pick_walk = walk[0], pick = algo->name;
        }
        ck_assert_msg(best_walk < 0 || pick_walk <= best_walk * (1 + TT_TUNER_MARGIN),
                      "%s p=%d %zu B: the sample's cheapest, %s, walks in %g s; %s in %g s",
                      tt_coll_name((tt_coll_t)c), p, bytes, pick, pick_walk, best, best_walk);
    }
}

/* _i indexes rank_counts. Up to 512 ranks: one host and hosts of 8, small
 * and large calls; at 1024 (where walking the ring's p^2 steps takes
 * seconds) hosts of 8 and a small call, where the trip matters most. */
START_TEST(the_sample_prices_as_the_walk_from_65_to_1024_ranks)
{
    int p = rank_counts[_i];
    tt_tuner_t t = {0};
    tt_cost_defaults(&t.model);
    tt_hosts_t hosts;
    hosts_of(&hosts, p, 8);
    static const size_t sizes[] = {4096, 64 << 20};
    for (int s = 0; s < 2 && (p < 1024 || s == 0); s++) {
        if (p < 1024)
            check_layout(&t, p, NULL, sizes[s]);
        check_layout(&t, p, &hosts, sizes[s]);
    }
    /* p ranks on 2 CPUs, where every wait for a peer costs a switch */
    t.model.crowding = p / 2.0;
    check_layout(&t, p, p < 1024 ? NULL : &hosts, sizes[0]);
    tt_hosts_free(&hosts);
}
END_TEST

/* At 65 ranks a 4 KiB broadcast through a chain makes 64 hops in a row
 * where the binomial tree makes 7 rounds: the tuner must not take the
 * chain, with a CPU per rank or with every rank on 2 CPUs, where each hop
 * waits for the next rank to get its CPU back (114 ms against 25 ms). */
START_TEST(a_small_broadcast_takes_the_tree_at_any_rank_count)
{
    static const int counts[] = {4, 8, 16, 64, 65, 100, 128, 200, 257, 512, 1024, 4096};
    char err[256];
    for (int crowded = 0; crowded < 2; crowded++)
        for (int i = 0; i < (int)(sizeof counts / sizeof counts[0]); i++) {
            tt_algo_policy_t policy;
            ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_SUCCESS);
            policy.tuner.model.crowding = crowded ? counts[i] / 2.0 : 1;
            tt_coll_args_t a = {.coll = TT_COLL_BROADCAST, .nranks = counts[i], .count = 1024};
            const tt_algorithm_t *algo = tt_algo_choose(&policy, &a, 4096, 4).algo;
            ck_assert_msg(algo == &tt_algo_binomial, "p=%d%s: a 4 KiB broadcast takes %s", counts[i],
                          crowded ? " on 2 CPUs" : "", algo ? algo->name : "nothing");
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cost-sample");
    TCase *tc = tcase_create("cost-sample");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, the_sample_prices_as_the_walk_from_65_to_1024_ranks, 0,
                        (int)(sizeof rank_counts / sizeof rank_counts[0]));
    tcase_add_test(tc, a_small_broadcast_takes_the_tree_at_any_rank_count);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
