/* SPDX-License-Identifier: MIT */
/*
 * The teaching and tuning views: the symbolic trace behind tutti-explain
 * (every algorithm and collective ends with every chunk holding exactly the
 * right ranks' terms), the cost model (closed forms for the ring and the
 * chain, tuning files, a slow inter-host link favouring hierarchical), and
 * the tutti-explain command itself.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune/registry.h"
#include "tune/cost.h"
#include "tools/explain_trace.h"
#include "harness.h"
#include "sched/hosts.h"

/* Every rank's output holds the right terms for its collective. */
static void check_outputs(const tt_trace_t *t, const tt_coll_args_t *a)
{
    int p = a->nranks;
    uint64_t all = p == 64 ? ~0ull : (1ull << p) - 1;
    for (int r = 0; r < p; r++)
        for (size_t i = 0; i < t->nout; i++) {
            const tt_cell_t *c = &t->out[r][i];
            uint64_t want;
            switch (a->coll) {
            case TT_COLL_ALLREDUCE:
            case TT_COLL_REDUCE_SCATTER: want = all; break;
            case TT_COLL_REDUCE: want = r == a->root ? all : c->ranks; break;
            case TT_COLL_BROADCAST: want = 1ull << a->root; break;
            case TT_COLL_ALLGATHER:
            case TT_COLL_ALLTOALL: want = 1ull << (i / a->count); break;
            default: want = c->ranks;
            }
            ck_assert_msg(c->ranks == want, "%s p=%d rank %d element %zu holds %#llx, not %#llx",
                          tt_coll_name(a->coll), p, r, i, (unsigned long long)c->ranks,
                          (unsigned long long)want);
        }
}

/* _i is nranks: every algorithm, every collective it serves, with hosts of
 * two ranks when p is even. */
START_TEST(the_trace_of_every_schedule_ends_with_the_right_terms)
{
    int p = _i;
    uint64_t ids[17];
    for (int r = 0; r < p; r++)
        ids[r] = (uint64_t)(p % 2 == 0 ? r / 2 : 0);
    tt_hosts_t hosts;
    ck_assert_int_eq(tt_hosts_init(&hosts, p, ids, NULL), TUTTI_SUCCESS);
    for (int i = 0; i < tt_num_algorithms; i++)
        for (int c = 0; c <= TT_COLL_BARRIER; c++) {
            if (!tt_algorithms[i]->build[c])
                continue;
            tt_coll_args_t a = {.coll = (tt_coll_t)c,
                                .nranks = p,
                                .root = p - 1,
                                .count = c == TT_COLL_BARRIER ? 0
                                         : c == TT_COLL_REDUCE_SCATTER || c == TT_COLL_ALLGATHER ||
                                                 c == TT_COLL_ALLTOALL
                                             ? 1
                                             : (size_t)p,
                                .hosts = &hosts};
            tt_trace_t t;
            ck_assert_msg(tt_trace_run(&t, tt_algorithms[i], &a) == 0, "%s/%s p=%d: %s",
                          tt_algorithms[i]->name, tt_coll_name(a.coll), p, t.error);
            check_outputs(&t, &a);
            tt_trace_free(&t);
        }
    tt_hosts_free(&hosts);
}
END_TEST

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
}
END_TEST

START_TEST(tutti_explain_shows_rounds_compares_and_draws)
{
    static char out[1 << 16];
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a ring -n 4 -s 64M", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "round 6"), "%s", out);
    ck_assert_msg(strstr(out, "adds chunk 1 [b1+c1+d1] from rank 3: chunk 1 [a1+b1+c1+d1]"), "%s", out);
    ck_assert_msg(strstr(out, "16 MiB out, 16 MiB in over shm"), "%s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -n 8 -s 8 --compare", out, sizeof out), 0);
    int picks = 0;
    for (char *s = out; (s = strstr(s, "  *\n")); s++)
        picks++;
    ck_assert_msg(picks == 1, "%d picks in\n%s", picks, out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a hierarchical -n 4 --nodes 2 --mermaid",
                                 out, sizeof out),
                     0);
    ck_assert_msg(strncmp(out, "sequenceDiagram\n", 16) == 0 && strstr(out, "r2->>r0: chunk 3 [c3+d3]"), "%s",
                  out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allgather -a bruck -n 5", out, sizeof out), 0);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a bruck -n 4", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "bruck does not serve allreduce"), "%s", out);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -a rign -n 4", out, sizeof out), 2);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -n 0", out, sizeof out), 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("explain");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, the_trace_of_every_schedule_ends_with_the_right_terms, 1, 18);
    tcase_add_test(tc, the_model_prices_the_ring_and_the_chain_as_their_formulas);
    tcase_add_test(tc, a_slow_network_favours_the_hierarchical_algorithm);
    tcase_add_test(tc, tuning_files_override_the_defaults_and_bad_lines_are_named);
    tcase_add_test(tc, tutti_explain_shows_rounds_compares_and_draws);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
