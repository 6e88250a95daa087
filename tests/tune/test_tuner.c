/* SPDX-License-Identifier: MIT */
/*
 * The cost model and the tuner (src/tune): closed forms for the ring and the
 * chain, a slow inter-host link favouring hierarchical, tuning files and the
 * corrections tutti-bw --fit writes, and the tuner leaving out algorithms
 * whose ranks connect to every other at many ranks.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/registry.h"
#include "sched/hosts.h"
#include "tests/lib/harness.h"
#include "tune/cost.h"
#include "tune/tuner.h"

static double predict(const tt_cost_model_t *m, const tt_algorithm_t *algo, tt_coll_t coll, int p,
                      size_t count, int nslices, const tt_hosts_t *hosts)
{
    tt_coll_args_t a = {.coll = coll, .nranks = p, .count = count, .hosts = hosts};
    return tt_cost_predict(m, algo, &a, 4, nslices);
}

START_TEST(the_model_prices_the_ring_and_the_chain_as_their_formulas)
{
    tt_cost_model_t m;
    tt_cost_defaults(&m);
    const tt_link_cost_t *c = &m.link[TT_LINK_SHM];
    for (int p = 2; p <= 16; p *= 2) {
        size_t count = 1 << 20, chunk = count * 4 / (size_t)p;
        /* ring, one slice: 2 (p-1) (alpha + n/p beta) + (p-1) n/p gamma */
        double want = 2 * (p - 1) * (c->alpha + (double)chunk * c->beta) + (p - 1) * (double)chunk * c->gamma;
        double got = predict(&m, &tt_algo_ring, TT_COLL_ALLREDUCE, p, count, 1, NULL);
        ck_assert_msg(got > want * 0.999 && got < want * 1.001, "ring p=%d: %g, formula %g", p, got, want);
        /* chain broadcast, S slices: (p - 1 + S - 1) steps of alpha + n/S beta, about */
        int S = 64;
        double step = c->alpha + (double)count * 4 / S * c->beta;
        double chain = predict(&m, &tt_algo_chain, TT_COLL_BROADCAST, p, count, S, NULL);
        ck_assert_msg(chain > (p - 1 + S - 1) * step * 0.9 && chain < (p - 1 + S - 1) * step * 1.1,
                      "chain p=%d: %g, formula %g", p, chain, (p - 1 + S - 1) * step);
        /* pipelining pays once the chain has a few hops */
        ck_assert(p < 4 || chain < predict(&m, &tt_algo_chain, TT_COLL_BROADCAST, p, count, 1, NULL) / 2);
    }
}
END_TEST

START_TEST(a_slow_network_favours_the_hierarchical_algorithm)
{
    tt_cost_model_t m;
    tt_cost_defaults(&m);
    uint64_t ids[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    tt_hosts_t hosts;
    ck_assert_int_eq(tt_hosts_init(&hosts, 8, ids, NULL), TUTTI_SUCCESS);
    size_t count = 16 << 20;
    double ring = predict(&m, &tt_algo_ring, TT_COLL_ALLREDUCE, 8, count, 64, &hosts);
    double hier = predict(&m, &tt_algo_hierarchical, TT_COLL_ALLREDUCE, 8, count, 64, &hosts);
    /* The ring's two host-crossing hops each carry 2 (p-1)/p n over tcp;
     * hierarchical's four cross-host rings each carry 2 (H-1)/H n/L. */
    ck_assert_msg(hier < ring / 2, "hierarchical %g, ring %g", hier, ring);
    tt_hosts_free(&hosts);
}
END_TEST

static char *write_file(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tutti-tuning-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

START_TEST(tuning_files_override_the_defaults_and_bad_lines_are_named)
{
    tt_cost_model_t m;
    char err[256];
    tt_cost_defaults(&m);
    char *path = write_file("# measured\nshm 2.5 20 40\ninter ib\nwake_us 4\n\n");
    ck_assert_int_eq(tt_cost_load(&m, path, err, sizeof err), TUTTI_SUCCESS);
    unlink(path);
    ck_assert(m.link[TT_LINK_SHM].alpha > 2.49e-6 && m.link[TT_LINK_SHM].alpha < 2.51e-6);
    ck_assert(m.link[TT_LINK_SHM].beta > 0.99 / 20e9 && m.link[TT_LINK_SHM].beta < 1.01 / 20e9);
    ck_assert_int_eq(m.inter, TT_LINK_IB);
    ck_assert(m.wake_s > 3.99e-6 && m.wake_s < 4.01e-6);
    path = write_file("shm 1 8 10\nnvlink fast\n");
    ck_assert_int_eq(tt_cost_load(&m, path, err, sizeof err), TUTTI_ERR_CONFIG);
    unlink(path);
    ck_assert_msg(strstr(err, ":2: expected"), "%s", err);
    ck_assert_int_eq(tt_cost_load(&m, "/nonexistent/tuning", err, sizeof err), TUTTI_ERR_CONFIG);
    ck_assert_msg(strstr(err, "/nonexistent/tuning"), "%s", err);
    /* tutti-bw --fit describes a loaded machine in a comment longer than a setting may be */
    char text[1200] = "# machine: ";
    memset(text + strlen(text), 'x', 600);
    strcat(text, "\nwake_us 7\n");
    path = write_file(text);
    ck_assert_msg(tt_cost_load(&m, path, err, sizeof err) == TUTTI_SUCCESS, "%s", err);
    unlink(path);
    ck_assert(m.wake_s > 6.99e-6 && m.wake_s < 7.01e-6);
    memset(text, ' ', 600);
    strcpy(text + 600, "wake_us 8\n");
    path = write_file(text);
    ck_assert_int_eq(tt_cost_load(&m, path, err, sizeof err), TUTTI_ERR_CONFIG);
    unlink(path);
    ck_assert_msg(strstr(err, ":1: a setting longer than"), "%s", err);
}
END_TEST

/* The corrections tutti-bw --fit writes steer the tuner on their job shape only. */
START_TEST(measured_corrections_steer_the_tuner_on_their_shape)
{
    tt_tuner_t *t = calloc(1, sizeof *t);
    char err[256];
    tt_cost_defaults(&t->model);
    tt_coll_args_t a = {.coll = TT_COLL_ALLREDUCE, .nranks = 8, .count = 4 << 20};
    size_t bytes = a.count * 4;
    ck_assert_ptr_eq(tt_tuner_pick(t, &a, bytes, 4).algo, &tt_algo_ring);
    /* the ring measured 10 times slower than predicted at 16 MiB on 8 ranks, 4 ranks left alone */
    char *path = write_file("fix allreduce ring 8 1 24 10\nfix allreduce ring 4 1 24 10\n");
    ck_assert_int_eq(tt_cost_load(&t->model, path, err, sizeof err), TUTTI_SUCCESS);
    unlink(path);
    ck_assert_int_eq(t->model.fix.n, 2);
    memset(t->cache, 0, sizeof t->cache);
    const tt_algorithm_t *pick = tt_tuner_pick(t, &a, bytes, 4).algo;
    ck_assert_msg(pick && pick != &tt_algo_ring, "the tuner kept the ring");
    ck_assert(tt_cost_fix_factor(&t->model.fix, "ring", &a, bytes) == 10);
    ck_assert(tt_cost_fix_factor(&t->model.fix, "ring", &a, bytes * 2) == 1); /* another size class */
    a.nranks = 16;                                                            /* another shape */
    memset(t->cache, 0, sizeof t->cache);
    ck_assert_ptr_eq(tt_tuner_pick(t, &a, bytes, 4).algo, &tt_algo_ring);
    path = write_file("fix allreduce ring 8 1 24 -1\n");
    ck_assert_int_eq(tt_cost_load(&t->model, path, err, sizeof err), TUTTI_ERR_CONFIG);
    unlink(path);
    FILE *f = fopen(path = write_file(""), "w");
    for (int i = 0; i <= TT_COST_FIX_MAX; i++)
        fprintf(f, "fix allreduce ring %d 1 %d 2\n", 2 + i / 60, i % 60);
    fclose(f);
    tt_cost_defaults(&t->model);
    ck_assert_int_eq(tt_cost_load(&t->model, path, err, sizeof err), TUTTI_ERR_CONFIG);
    ck_assert_msg(strstr(err, "more than 1024 fix lines"), "%s", err);
    unlink(path);
    free(t);
}
END_TEST

/* The most distinct peers any rank of algo's schedules for args names. */
static int widest_fan_out(const tt_algorithm_t *algo, tt_coll_args_t a)
{
    int widest = 0;
    for (a.rank = 0; a.rank < a.nranks; a.rank++) {
        tt_sched_t s;
        ck_assert_int_eq(tt_sched_build(algo, &a, &s), TUTTI_SUCCESS);
        unsigned char *seen = calloc((size_t)a.nranks, 1);
        int n = 0;
        for (int i = 0; i < s.nsteps; i++)
            if (s.steps[i].peer >= 0 && !seen[s.steps[i].peer]++)
                n++;
        widest = n > widest ? n : widest;
        free(seen);
        tt_sched_free(&s);
    }
    return widest;
}

/* An algorithm whose ranks connect to every other is flagged so (all-to-all
 * and deterministic mode need it), and the tuner drops it beyond
 * TT_TUNER_MAX_PEERS: a small all-reduce at 64 crowded ranks no longer
 * takes the direct one, which connected every pair on its first call. */
START_TEST(the_tuner_leaves_out_every_peer_algorithms_at_many_ranks)
{
    int p = TT_TUNER_MAX_PEERS + 8;
    for (int i = 0; i < tt_num_algorithms; i++)
        for (int c = 0; c < TT_COLL_COUNT; c++) {
            const tt_algorithm_t *algo = tt_algorithms[i];
            if (!algo->build[c] || c == TT_COLL_SEND || c == TT_COLL_RECV)
                continue;
            tt_coll_args_t a = {.coll = (tt_coll_t)c, .nranks = p, .root = 1, .count = 4 * (size_t)p};
            int every = widest_fan_out(algo, a) == p - 1;
            int exempt = c == TT_COLL_ALLTOALL || (algo->flags & TT_ALGO_ONLY_ORDERED);
            ck_assert_msg(every == !!(algo->flags & TT_ALGO_EVERY_PEER) || (every && exempt),
                          "%s's %s: a rank talks to %s peer, but the flag says otherwise", algo->name,
                          tt_coll_name(a.coll), every ? "every" : "not every");
        }
    tt_tuner_t *t = calloc(1, sizeof *t), *det = calloc(1, sizeof *det);
    tt_cost_defaults(&t->model);
    t->model.crowding = 32; /* 64 ranks on 2 CPUs */
    det->model = t->model;
    det->deterministic = 1;
    tt_coll_args_t a = {.coll = TT_COLL_ALLREDUCE, .nranks = TT_TUNER_MAX_PEERS + 1, .count = 1};
    ck_assert(tt_tuner_considers(t, &tt_algo_direct, &a));
    ck_assert_ptr_eq(tt_tuner_pick(t, &a, 4, 4).algo, &tt_algo_direct); /* still best here */
    a.nranks = 64;
    memset(t->cache, 0, sizeof t->cache);
    ck_assert(!tt_tuner_considers(t, &tt_algo_direct, &a));
    ck_assert_ptr_ne(tt_tuner_pick(t, &a, 4, 4).algo, &tt_algo_direct);
    ck_assert(tt_tuner_considers(det, &tt_algo_direct, &a)); /* deterministic mode keeps it */
    a.coll = TT_COLL_ALLTOALL;
    a.count = 1 << 20;
    ck_assert(tt_tuner_considers(t, &tt_algo_pairwise, &a));
    free(t);
    free(det);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tuner");
    TCase *tc = tcase_create("tuner");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, the_model_prices_the_ring_and_the_chain_as_their_formulas);
    tcase_add_test(tc, a_slow_network_favours_the_hierarchical_algorithm);
    tcase_add_test(tc, tuning_files_override_the_defaults_and_bad_lines_are_named);
    tcase_add_test(tc, measured_corrections_steer_the_tuner_on_their_shape);
    tcase_add_test(tc, the_tuner_leaves_out_every_peer_algorithms_at_many_ranks);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
