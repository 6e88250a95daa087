/* SPDX-License-Identifier: MIT */
/*
 * Schedule builders, checked two ways: structural facts of the ring, and the
 * simulator running every algorithm for nranks 1..17, counts 0, 1, 7, 1000,
 * 65537 and a few million, every dtype and op, several slice/lane cuts,
 * compared with the reduction computed here rank by rank.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/registry.h"
#include "tune/policy.h"
#include "core/env_config.h"
#include "core/half.h"
#include "tests/lib/harness.h"
#include "sched/hosts.h"
#include "sched/job.h"
#include "reduce/reduce.h"
#include "tests/lib/sim.h"

typedef struct {
    const tt_algorithm_t *algo;
    tt_coll_t coll;
    int p, root, in_place;
    size_t count;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int nslices, nlanes;
    const tt_hosts_t *hosts; /* NULL: one host */
} case_t;

/* Elements of each rank's input and output buffers. */
static void buffer_counts(const case_t *c, size_t *in, size_t *out)
{
    size_t n = c->count, pn = n * (size_t)c->p;
    switch (c->coll) {
    case TT_COLL_REDUCE_SCATTER:
        *in = pn;
        *out = n;
        break;
    case TT_COLL_ALLGATHER:
        *in = n;
        *out = pn;
        break;
    case TT_COLL_ALLTOALL: *in = *out = pn; break;
    default: *in = *out = n; break;
    }
}

/* Runs one case in the simulator and compares every rank's output with
 * what the collective must give, computed here from tt_test_value's terms. */
static void run_case(const case_t *c)
{
    size_t elem = tutti_dtype_size(c->dtype), nin, nout;
    buffer_counts(c, &nin, &nout);
    int p = c->p;
    tt_sim_t sim = {.nranks = p,
                    .elem = elem,
                    .dtype = c->dtype,
                    .op = c->op,
                    .nslices = c->nslices,
                    .nlanes = c->nlanes,
                    .seed = (unsigned)(c->count * 31 + (size_t)p)};
    sim.in = calloc((size_t)p, sizeof(char *));
    sim.out = calloc((size_t)p, sizeof(char *));
    for (int r = 0; r < p; r++) {
        sim.out[r] = calloc(nout + nin + 1, elem);
        /* In place, the input lives inside the output as the API defines. */
        size_t in_off = c->coll == TT_COLL_ALLGATHER ? (size_t)r * c->count : 0;
        sim.in[r] = c->in_place ? sim.out[r] + in_off * elem : calloc(nin + 1, elem);
        size_t base = c->coll == TT_COLL_ALLGATHER ? (size_t)r * c->count : 0;
        for (size_t i = 0; i < nin; i++)
            tt_test_value(c->dtype, c->op, sim.in[r], i, r, base + i);
    }
    /* reduce_scatter in place: rank r's output is its input block r. */
    char **outs = calloc((size_t)p, sizeof(char *));
    for (int r = 0; r < p; r++)
        outs[r] = c->in_place && c->coll == TT_COLL_REDUCE_SCATTER ? sim.in[r] + (size_t)r * c->count * elem
                                                                   : sim.out[r];
    char **saved_out = sim.out;
    sim.out = outs;
    tt_coll_args_t args = {.coll = c->coll,
                           .nranks = p,
                           .root = c->root,
                           .count = c->count,
                           .in_place = c->in_place,
                           .hosts = c->hosts};
    int rc = tt_sim_run(&sim, c->algo, args);
    ck_assert_msg(rc == 0, "%s/%s p=%d count=%zu %s %s slices=%d lanes=%d in_place=%d: %s", c->algo->name,
                  tt_coll_name(c->coll), p, c->count, tutti_dtype_name(c->dtype), tutti_op_name(c->op),
                  c->nslices, c->nlanes, c->in_place, sim.error);

    tt_reduce_fn reduce = tt_reduce_get(c->dtype, c->op);
    char *want = malloc((nout + 1) * elem), *term = malloc((nout + 1) * elem);
    for (int r = 0; r < p; r++) {
        size_t n = c->count, check_n = nout;
        switch (c->coll) {
        case TT_COLL_ALLREDUCE:
        case TT_COLL_REDUCE:
        case TT_COLL_REDUCE_SCATTER: {
            if (c->coll == TT_COLL_REDUCE && r != c->root)
                continue;
            size_t base = c->coll == TT_COLL_REDUCE_SCATTER ? (size_t)r * n : 0;
            for (size_t i = 0; i < n; i++)
                tt_test_value(c->dtype, c->op, want, i, 0, base + i);
            for (int q = 1; q < p; q++) {
                for (size_t i = 0; i < n; i++)
                    tt_test_value(c->dtype, c->op, term, i, q, base + i);
                reduce(want, want, term, n);
            }
            check_n = n;
            break;
        }
        case TT_COLL_ALLGATHER:
            for (size_t i = 0; i < nout; i++)
                tt_test_value(c->dtype, c->op, want, i, (int)(i / n), i);
            break;
        case TT_COLL_BROADCAST:
            for (size_t i = 0; i < n; i++)
                tt_test_value(c->dtype, c->op, want, i, c->root, i);
            break;
        case TT_COLL_ALLTOALL:
            for (size_t i = 0; i < nout; i++)
                tt_test_value(c->dtype, c->op, want, i, (int)(i / n), (size_t)r * n + i % n);
            break;
        default: check_n = 0;
        }
        ck_assert_msg(memcmp(want, outs[r], check_n * elem) == 0,
                      "%s/%s p=%d count=%zu %s %s slices=%d: rank %d wrong", c->algo->name,
                      tt_coll_name(c->coll), p, c->count, tutti_dtype_name(c->dtype), tutti_op_name(c->op),
                      c->nslices, r);
    }
    free(want);
    free(term);
    for (int r = 0; r < p; r++) {
        if (!c->in_place)
            free(sim.in[r]);
        free(saved_out[r]);
    }
    free(outs);
    free(sim.in);
    free(saved_out);
}

/* Runs the case through every registered algorithm that serves its collective. */
static void run_every_algorithm(case_t *c)
{
    int ran = 0;
    for (int i = 0; i < tt_num_algorithms; i++)
        if (tt_algorithms[i]->build[c->coll]) {
            c->algo = tt_algorithms[i];
            run_case(c);
            ran++;
        }
    ck_assert_msg(ran > 0, "no algorithm serves %s", tt_coll_name(c->coll));
}

static const tt_coll_t reducing[] = {TT_COLL_ALLREDUCE, TT_COLL_REDUCE_SCATTER, TT_COLL_REDUCE};
static const tt_coll_t moving[] = {TT_COLL_ALLGATHER, TT_COLL_BROADCAST, TT_COLL_ALLTOALL, TT_COLL_BARRIER};

/* _i is nranks. */
START_TEST(every_algorithm_every_dtype_and_op)
{
    int p = _i;
    static const size_t counts[] = {0, 1, 7, 1000};
    for (size_t ci = 0; ci < 4; ci++)
        for (int t = 0; t < TUTTI_NUM_DTYPES; t++) {
            for (int op = 0; op < TUTTI_NUM_OPS; op++) {
                if (op == TUTTI_AVG)
                    continue; /* avg is sum plus a division outside the schedule */
                for (size_t k = 0; k < 3; k++) {
                    case_t c = {NULL,
                                reducing[k],
                                p,
                                (int)(counts[ci] % (size_t)p),
                                (int)((ci + (size_t)t) % 2),
                                counts[ci],
                                (tutti_dtype_t)t,
                                (tutti_op_t)op,
                                1 + (int)((ci + (size_t)op) % 3),
                                1 + t % 4,
                                NULL};
                    run_every_algorithm(&c);
                }
            }
            for (size_t k = 0; k < 4; k++) {
                case_t c = {NULL,
                            moving[k],
                            p,
                            p - 1,
                            (int)((ci + k) % 2),
                            counts[ci],
                            (tutti_dtype_t)t,
                            TUTTI_SUM,
                            1 + (int)(ci % 3),
                            1 + (int)k,
                            NULL};
                run_every_algorithm(&c);
            }
        }
}
END_TEST

START_TEST(large_counts_with_many_slices)
{
    int p = _i;
    for (size_t k = 0; k < 3; k++) {
        case_t c = {NULL,      reducing[k], p, p / 2, p % 2, 65537, p % 2 ? TUTTI_FP16 : TUTTI_INT32,
                    TUTTI_SUM, 7,           4, NULL};
        run_every_algorithm(&c);
    }
    for (size_t k = 0; k < 3; k++) {
        case_t c = {NULL, moving[k], p, 0, (p + 1) % 2, 65537, TUTTI_FP64, TUTTI_SUM, 5, 3, NULL};
        run_every_algorithm(&c);
    }
}
END_TEST

START_TEST(a_few_million_elements)
{
    int ps[] = {3, 8};
    for (int i = 0; i < 2; i++) {
        case_t c = {NULL, TT_COLL_ALLREDUCE, ps[i], 0, i, 3000017, TUTTI_FP32, TUTTI_SUM, 12, 4, NULL};
        run_every_algorithm(&c);
        case_t g = {NULL,       TT_COLL_ALLGATHER, ps[i], 0, 0,   3000017 / (size_t)ps[i],
                    TUTTI_BF16, TUTTI_SUM,         9,     4, NULL};
        run_every_algorithm(&g);
    }
}
END_TEST

/* The hierarchical algorithms on every uniform layout of p ranks (hosts
 * of L ranks, placed in blocks or round-robin) and on uneven hosts (where
 * they fall back to one ring). _i is p. */
START_TEST(hierarchical_on_every_host_layout)
{
    int p = _i;
    uint64_t ids[17];
    for (int L = 1; L <= p; L++) {
        for (int round_robin = 0; round_robin < 2; round_robin++) {
            int uneven = p % L != 0;
            for (int r = 0; r < p; r++)
                ids[r] = uneven        ? (uint64_t)(r < L)
                         : round_robin ? (uint64_t)(r % (p / L))
                                       : (uint64_t)(r / L);
            tt_hosts_t hosts;
            ck_assert_int_eq(tt_hosts_init(&hosts, p, ids, NULL), TUTTI_SUCCESS);
            ck_assert_int_eq(hosts.per_host, uneven && L < p ? 0 : L);
            for (size_t k = 0; k < 3; k++) {
                static const size_t counts[] = {1, 7, 1000, 65537};
                for (size_t ci = 0; ci < (L == 2 ? 4u : 3u); ci++) {
                    case_t c = {&tt_algo_hierarchical,
                                k == 2 ? TT_COLL_ALLGATHER : reducing[k],
                                p,
                                0,
                                (int)((ci + (size_t)round_robin) % 2),
                                counts[ci],
                                k == 1 ? TUTTI_BF16 : TUTTI_FP32,
                                TUTTI_SUM,
                                1 + (int)ci,
                                1 + (int)k,
                                &hosts};
                    run_case(&c);
                }
            }
            tt_hosts_free(&hosts);
            if (uneven)
                break;
        }
    }
}
END_TEST

START_TEST(ring_allreduce_structure)
{
    for (int p = 2; p <= 9; p++)
        for (int r = 0; r < p; r++) {
            tt_coll_args_t a = {.coll = TT_COLL_ALLREDUCE, .nranks = p, .rank = r, .count = 1000};
            tt_sched_t s;
            ck_assert_int_eq(tt_sched_build(&tt_algo_ring, &a, &s), TUTTI_SUCCESS);
            ck_assert_int_eq(s.nrounds, 2 * (p - 1));
            size_t moved = 0;
            for (int k = 0; k < s.nrounds; k++) {
                int n;
                const tt_step_t *st = tt_sched_round_steps(&s, k, &n);
                ck_assert_int_eq(n, 2);
                ck_assert_int_eq(st[0].kind, TT_STEP_SEND);
                ck_assert_int_eq(st[0].peer, (r + 1) % p);
                ck_assert_int_eq(st[1].kind, k < p - 1 ? TT_STEP_RECV_REDUCE : TT_STEP_RECV);
                ck_assert_int_eq(st[1].peer, (r + p - 1) % p);
                moved += st[0].src.count;
            }
            /* Each rank sends 2 (p - 1) / p of the data: bandwidth-optimal. */
            ck_assert_uint_le(moved, 2 * 1000 * (size_t)(p - 1) / (size_t)p + 2 * (size_t)p);
            ck_assert_uint_ge(moved, 2 * 1000 * (size_t)(p - 1) / (size_t)p - 2 * (size_t)p);
            tt_sched_free(&s);
        }
}
END_TEST

/* Rounds in which this rank sends or receives anything. */
static int rounds_with_messages(const tt_sched_t *s)
{
    int busy = 0;
    for (int k = 0; k < s->nrounds; k++) {
        int n, any = 0;
        const tt_step_t *st = tt_sched_round_steps(s, k, &n);
        for (int i = 0; i < n; i++)
            any |= st[i].peer >= 0;
        busy += any;
    }
    return busy;
}

static tt_tuned_t choose(tt_algo_policy_t *policy, tt_coll_t coll, int p, size_t bytes)
{
    tt_coll_args_t a = {.coll = coll, .nranks = p, .rank = 0, .count = bytes / 4};
    return tt_algo_choose(policy, &a, bytes, 4);
}

START_TEST(the_tuner_takes_few_rounds_for_small_calls_and_the_ring_for_large)
{
    char err[256];
    tt_algo_policy_t policy;
    ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_SUCCESS);
    for (int p = 4; p <= 16; p *= 2) {
        const tt_algorithm_t *small = choose(&policy, TT_COLL_ALLREDUCE, p, 8).algo;
        tt_sched_t s, ring;
        tt_coll_args_t a = {.coll = TT_COLL_ALLREDUCE, .nranks = p, .count = 2};
        ck_assert_int_eq(tt_sched_build(small, &a, &s), TUTTI_SUCCESS);
        ck_assert_int_eq(tt_sched_build(&tt_algo_ring, &a, &ring), TUTTI_SUCCESS);
        ck_assert_msg(rounds_with_messages(&s) <= rounds_with_messages(&ring) / 2, "p=%d: %s takes %d rounds",
                      p, small->name, rounds_with_messages(&s));
        tt_sched_free(&s);
        tt_sched_free(&ring);
        ck_assert_ptr_eq(choose(&policy, TT_COLL_ALLREDUCE, p, 256 << 20).algo, &tt_algo_ring);
        ck_assert_ptr_eq(choose(&policy, TT_COLL_BROADCAST, p, 8).algo, &tt_algo_binomial);
    }
}
END_TEST

/* 4 and 8 ranks on 2 CPUs: every round costs a wait for a peer's time
 * slice, so small all-reduces go to one exchange round; with a CPU each,
 * the log-round exchange wins; large ones stay on the ring either way. */
START_TEST(crowded_cpus_make_the_tuner_trade_messages_for_rounds)
{
    char err[256];
    for (int p = 4; p <= 8; p *= 2) {
        tt_algo_policy_t roomy, crowded;
        ck_assert_int_eq(tt_algo_policy_from_env(&roomy, err, sizeof err), TUTTI_SUCCESS);
        ck_assert_int_eq(tt_algo_policy_from_env(&crowded, err, sizeof err), TUTTI_SUCCESS);
        crowded.tuner.model.crowding = p / 2.0;
        const tt_algorithm_t *few_cpus = choose(&crowded, TT_COLL_ALLREDUCE, p, 64).algo;
        const tt_algorithm_t *cpu_each = choose(&roomy, TT_COLL_ALLREDUCE, p, 64).algo;
        tt_coll_args_t a = {.coll = TT_COLL_ALLREDUCE, .nranks = p, .count = 16};
        tt_sched_t s;
        ck_assert_int_eq(tt_sched_build(few_cpus, &a, &s), TUTTI_SUCCESS);
        ck_assert_msg(rounds_with_messages(&s) == 1, "p=%d crowded: %s takes %d rounds", p, few_cpus->name,
                      rounds_with_messages(&s));
        tt_sched_free(&s);
        ck_assert_int_eq(tt_sched_build(cpu_each, &a, &s), TUTTI_SUCCESS);
        ck_assert_msg(rounds_with_messages(&s) > 1, "p=%d: %s takes %d rounds", p, cpu_each->name,
                      rounds_with_messages(&s));
        tt_sched_free(&s);
        ck_assert_ptr_eq(choose(&crowded, TT_COLL_ALLREDUCE, p, 256 << 20).algo, &tt_algo_ring);
    }
}
END_TEST

/* Ranks choose on their own, so the choice must not depend on who asks or
 * on a rank's own in-place flag (only the root's broadcast is in place). */
START_TEST(every_rank_gets_the_same_choice_in_place_or_not)
{
    char err[256];
    const tt_coll_t colls[] = {TT_COLL_ALLREDUCE, TT_COLL_BROADCAST, TT_COLL_REDUCE, TT_COLL_ALLGATHER};
    for (int crowded = 0; crowded <= 1; crowded++)
        for (int c = 0; c < 4; c++)
            for (size_t bytes = 10; bytes <= ((size_t)64 << 20); bytes = bytes * 2 - 2) {
                const tt_algorithm_t *first = NULL;
                for (int r = 0; r < 4; r++)
                    for (int in_place = 0; in_place <= 1; in_place++) {
                        tt_algo_policy_t policy;
                        ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_SUCCESS);
                        policy.tuner.model.crowding = crowded ? 2 : 1;
                        tt_coll_args_t a = {.coll = colls[c],
                                            .nranks = 4,
                                            .rank = r,
                                            .count = bytes / 2,
                                            .in_place = in_place};
                        const tt_algorithm_t *got = tt_algo_choose(&policy, &a, bytes, 2).algo;
                        first = first ? first : got;
                        ck_assert_msg(
                            got == first, "%s %zu B crowded %d: rank %d in place %d chose %s, not %s",
                            tt_coll_name(colls[c]), bytes, crowded, r, in_place, got->name, first->name);
                    }
            }
}
END_TEST

START_TEST(tutti_algo_and_per_collective_variables_override_the_tuner)
{
    char err[256];
    tt_algo_policy_t policy;
    setenv("TUTTI_ALGO", "ring", 1);
    ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_SUCCESS);
    ck_assert_ptr_eq(choose(&policy, TT_COLL_ALLREDUCE, 8, 8).algo, &tt_algo_ring);
    /* the ring does not serve broadcast: the tuner still chooses there */
    ck_assert_ptr_eq(choose(&policy, TT_COLL_BROADCAST, 8, 8).algo, &tt_algo_binomial);
    setenv("TUTTI_ALGO_ALLREDUCE", "double_tree", 1);
    ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_SUCCESS);
    ck_assert_ptr_eq(choose(&policy, TT_COLL_ALLREDUCE, 8, 8).algo, &tt_algo_double_tree);
    ck_assert_ptr_eq(choose(&policy, TT_COLL_ALLGATHER, 8, 8).algo, &tt_algo_ring);
    setenv("TUTTI_ALGO_ALLREDUCE", "bruck", 1); /* bruck has no all-reduce */
    ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_ERR_CONFIG);
    ck_assert_msg(strstr(err, "TUTTI_ALGO_ALLREDUCE=bruck") && strstr(err, "does not serve"), "%s", err);
    unsetenv("TUTTI_ALGO_ALLREDUCE");
    setenv("TUTTI_ALGO", "rign", 1);
    ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_ERR_CONFIG);
    ck_assert_msg(strstr(err, "TUTTI_ALGO=rign: no such algorithm"), "%s", err);
    unsetenv("TUTTI_ALGO");
}
END_TEST

START_TEST(deterministic_mode_keeps_to_rank_order_algorithms)
{
    char err[256];
    tt_algo_policy_t policy;
    setenv("TUTTI_DETERMINISTIC", "1", 1);
    setenv("TUTTI_ALGO", "ring", 1);
    ck_assert_int_eq(tt_algo_policy_from_env(&policy, err, sizeof err), TUTTI_SUCCESS);
    for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 32) {
        const tt_algorithm_t *a = choose(&policy, TT_COLL_ALLREDUCE, 8, bytes).algo;
        ck_assert_msg(a == &tt_algo_ordered || a == &tt_algo_direct, "%zu bytes: %s", bytes, a->name);
        ck_assert_ptr_eq(choose(&policy, TT_COLL_REDUCE_SCATTER, 8, bytes).algo, &tt_algo_ordered);
    }
    ck_assert_ptr_eq(choose(&policy, TT_COLL_ALLGATHER, 8, 64).algo, &tt_algo_ring); /* no reduction */
    unsetenv("TUTTI_ALGO");
    unsetenv("TUTTI_DETERMINISTIC");
}
END_TEST

START_TEST(dissemination_barrier_takes_ceil_log2_rounds)
{
    int expect[] = {0, 0, 1, 2, 2, 3, 3, 3, 3, 4};
    for (int p = 1; p <= 9; p++) {
        tt_coll_args_t a = {.coll = TT_COLL_BARRIER, .nranks = p, .rank = 0};
        tt_sched_t s;
        ck_assert_int_eq(tt_sched_build(&tt_algo_dissemination, &a, &s), TUTTI_SUCCESS);
        ck_assert_int_eq(s.nrounds, expect[p]);
        tt_sched_free(&s);
    }
}
END_TEST

/* Two ranks that each send to the other in round 0 and receive in round 1
 * (crossing); with broken set, rank 1 never sends, so rank 0 waits forever. */
static int broken_exchange;
static tutti_status_t exchange_build(const tt_coll_args_t *a, tt_sched_t *s)
{
    int peer = 1 - a->rank;
    tt_region_t all = tt_region(TT_BUF_INPUT, 0, a->count), out = tt_region(TT_BUF_OUTPUT, 0, a->count);
    TT_TRY(tt_sched_round(s));
    if (!(broken_exchange && a->rank == 1))
        TT_TRY(tt_sched_send(s, peer, all));
    TT_TRY(tt_sched_round(s));
    return tt_sched_recv(s, peer, out);
}
static const tt_algorithm_t exchange = {.name = "exchange", .build = {[TT_COLL_ALLTOALL] = exchange_build}};

START_TEST(the_job_walk_matches_messages_and_finds_deadlocks)
{
    tt_coll_args_t a = {.coll = TT_COLL_ALLTOALL, .nranks = 2, .count = 3};
    tt_job_t job;
    broken_exchange = 0;
    ck_assert_int_eq(tt_job_build(&job, &exchange, &a), TUTTI_SUCCESS);
    ck_assert_int_eq(job.match[0][0], 1); /* rank 0's send meets rank 1's receive, its step 1 */
    ck_assert_int_eq(job.match[1][1], 0);
    ck_assert_int_eq(job.round[1][1], 1);
    tt_job_visit_t none = {0};
    tt_job_walk_t eager = {0}, rendezvous = {.rendezvous = 1};
    ck_assert_int_eq(tt_job_walk(&job, &none, &eager), 0);
    /* Each send waits for a receive its peer posts only after its own send. */
    ck_assert_int_eq(tt_job_walk(&job, &none, &rendezvous), 1);
    ck_assert_int_eq(rendezvous.stuck, 2);
    tt_job_free(&job);

    broken_exchange = 1;
    ck_assert_int_eq(tt_job_build(&job, &exchange, &a), TUTTI_SUCCESS);
    ck_assert_int_eq(job.match[0][1], -1);
    ck_assert_int_eq(tt_job_walk(&job, &none, &eager), 1);
    ck_assert_int_eq(eager.stuck, 1);
    tt_job_free(&job);
    float in[2][3] = {{1, 2, 3}, {4, 5, 6}}, out[2][3];
    char *ins[2] = {(char *)in[0], (char *)in[1]}, *outs[2] = {(char *)out[0], (char *)out[1]};
    tt_sim_t sim = {.nranks = 2,
                    .in = ins,
                    .out = outs,
                    .elem = 4,
                    .dtype = TUTTI_FP32,
                    .op = TUTTI_SUM,
                    .nslices = 1,
                    .nlanes = 1,
                    .seed = 1};
    ck_assert_int_eq(tt_sim_run(&sim, &exchange, a), -1);
    ck_assert_msg(strstr(sim.error, "deadlock"), "%s", sim.error);
}
END_TEST

START_TEST(send_recv_pair_in_the_simulator)
{
    /* A send on rank 0 and the matching receive on rank 1 are one schedule
     * each; simulate them as a two-rank "collective". */
    tt_sched_t s0, s1;
    tt_coll_args_t a0 = {.coll = TT_COLL_SEND, .nranks = 2, .rank = 0, .root = 1, .count = 77};
    tt_coll_args_t a1 = {.coll = TT_COLL_RECV, .nranks = 2, .rank = 1, .root = 0, .count = 77};
    ck_assert_int_eq(tt_sched_build(&tt_algo_p2p, &a0, &s0), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_build(&tt_algo_p2p, &a1, &s1), TUTTI_SUCCESS);
    ck_assert_int_eq(s0.steps[0].kind, TT_STEP_SEND);
    ck_assert_int_eq(s1.steps[0].kind, TT_STEP_RECV);
    ck_assert_uint_eq(s0.steps[0].src.count, s1.steps[0].dst.count);
    tt_sched_free(&s0);
    tt_sched_free(&s1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("schedule");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ring_allreduce_structure);
    tcase_add_test(tc, dissemination_barrier_takes_ceil_log2_rounds);
    tcase_add_test(tc, the_tuner_takes_few_rounds_for_small_calls_and_the_ring_for_large);
    tcase_add_test(tc, crowded_cpus_make_the_tuner_trade_messages_for_rounds);
    tcase_add_test(tc, every_rank_gets_the_same_choice_in_place_or_not);
    tcase_add_test(tc, tutti_algo_and_per_collective_variables_override_the_tuner);
    tcase_add_test(tc, deterministic_mode_keeps_to_rank_order_algorithms);
    tcase_add_test(tc, send_recv_pair_in_the_simulator);
    tcase_add_test(tc, the_job_walk_matches_messages_and_finds_deadlocks);
    tcase_add_loop_test(tc, every_algorithm_every_dtype_and_op, 1, 18);
    tcase_add_loop_test(tc, large_counts_with_many_slices, 1, 18);
    tcase_add_test(tc, a_few_million_elements);
    tcase_add_loop_test(tc, hierarchical_on_every_host_layout, 1, 18);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
