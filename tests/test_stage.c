/* SPDX-License-Identifier: MIT */
/*
 * Slice-by-slice staging (the device proxy's overlap of its copies with the
 * engine), without a GPU: "device" buffers are separate host memory, the
 * host stand-ins start poisoned, fetches land only when the engine polls a
 * second time (in slice order, as on a stream), and delivered pieces are
 * poisoned again once copied out. Every collective under every algorithm
 * must still give the unstaged results, so every byte a slice reads was
 * fetched before it ran and every byte it writes was final when delivered.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/registry.h"
#include "call_place.h"
#include "coll/coll.h"
#include "harness.h"
#include "sched/stage.h"

#define MAX_SLICES 4096
#define POISON 0xA5

START_TEST(pieces_merge_and_follow_the_slice)
{
    tt_sched_t s;
    tt_sched_init(&s);
    ck_assert_int_eq(tt_sched_round(&s), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_send(&s, 1, tt_region(TT_BUF_INPUT, 0, 100)), TUTTI_SUCCESS);
    ck_assert_int_eq(
        tt_sched_recv_reduce(&s, 1, tt_region(TT_BUF_OUTPUT, 100, 100), tt_region(TT_BUF_INPUT, 100, 100)),
        TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_copy(&s, tt_region(TT_BUF_SCRATCH, 0, 100), tt_region(TT_BUF_INPUT, 300, 100)),
                     TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sched_recv(&s, 1, tt_region(TT_BUF_OUTPUT, 0, 100)), TUTTI_SUCCESS);
    tt_piece_t p[8];
    /* Slice 1 of 4 (25 elements from 25) of each region read: inputs 0..100
     * and 100..200 touch only through their slices, which do not meet. */
    int n = tt_stage_pieces(&s, 4, 4, 1, 1u << TT_BUF_INPUT, 0, p);
    ck_assert_int_eq(n, 3);
    ck_assert(p[0].buf == TT_BUF_INPUT && p[0].off == 25 * 4 && p[0].bytes == 25 * 4);
    ck_assert(p[1].off == 125 * 4 && p[2].off == 325 * 4);
    /* One slice covering everything: 0..200 merge, 300..400 stays apart. */
    n = tt_stage_pieces(&s, 4, 1, 0, 1u << TT_BUF_INPUT, 0, p);
    ck_assert_int_eq(n, 2);
    ck_assert(p[0].off == 0 && p[0].bytes == 200 * 4 && p[1].off == 300 * 4 && p[1].bytes == 100 * 4);
    /* Writes: both output regions, merged; scratch left out by the mask. */
    n = tt_stage_pieces(&s, 4, 1, 0, 1u << TT_BUF_OUTPUT, 1, p);
    ck_assert_int_eq(n, 1);
    ck_assert(p[0].buf == TT_BUF_OUTPUT && p[0].off == 0 && p[0].bytes == 200 * 4);
    tt_sched_free(&s);
}
END_TEST

/* The fake proxy: what fetch was asked for, per slice, lands in order. */
typedef struct {
    const tt_call_t *dev, *host;
    tt_piece_t *pending[MAX_SLICES];
    int npending[MAX_SLICES];
    int landed;             /* slices whose fetches landed */
    int polled[MAX_SLICES]; /* fetched() calls per slice */
    int slices, waits, deliveries;
} fake_t;

static char *at(const tt_call_t *c, tt_piece_t p)
{
    return (char *)(p.buf == TT_BUF_INPUT ? c->send : c->recv) + p.off;
}

static void fake_fetch(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    fake_t *f = arg;
    ck_assert_int_eq(slice, f->slices); /* every slice, in order */
    ck_assert_int_lt(slice, MAX_SLICES);
    f->pending[slice] = malloc((size_t)(n ? n : 1) * sizeof *pieces);
    memcpy(f->pending[slice], pieces, (size_t)n * sizeof *pieces);
    f->npending[slice] = n;
    f->slices++;
}

static int fake_fetched(void *arg, int slice)
{
    fake_t *f = arg;
    if (f->polled[slice]++ == 0 && f->landed <= slice) {
        f->waits++;
        return 0; /* not yet: the engine must come back */
    }
    for (; f->landed <= slice; f->landed++)
        for (int i = 0; i < f->npending[f->landed]; i++) {
            tt_piece_t p = f->pending[f->landed][i];
            memcpy(at(f->host, p), at(f->dev, p), p.bytes);
        }
    return 1;
}

static void fake_deliver(void *arg, int slice, const tt_piece_t *pieces, int n)
{
    fake_t *f = arg;
    ck_assert_int_lt(slice, f->slices);
    for (int i = 0; i < n; i++) {
        memcpy(at(f->dev, pieces[i]), at(f->host, pieces[i]), pieces[i].bytes);
        memset(at(f->host, pieces[i]), POISON, pieces[i].bytes); /* no later slice may need it */
    }
    f->deliveries++;
}

static int staged_collectives(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    static const tt_coll_t colls[] = {TT_COLL_ALLREDUCE, TT_COLL_REDUCE_SCATTER, TT_COLL_ALLGATHER,
                                      TT_COLL_BROADCAST, TT_COLL_REDUCE,         TT_COLL_ALLTOALL};
    static const struct {
        tutti_dtype_t t;
        tutti_op_t op;
    } kinds[] = {{TUTTI_FP32, TUTTI_SUM}, {TUTTI_INT32, TUTTI_MAX}, {TUTTI_FP16, TUTTI_AVG}};
    static const size_t counts[] = {1, 3001};
    size_t span_bytes = 2 * 3001 * (size_t)p * 4 + 64;
    char *ref = malloc(span_bytes), *dev = malloc(span_bytes), *host = malloc(span_bytes);
    TT_FAIL_IF(!ref || !dev || !host, "no memory");
    for (size_t ci = 0; ci < 6; ci++)
        for (size_t ki = 0; ki < 3; ki++)
            for (size_t ni = 0; ni < 2; ni++)
                for (int ip = 0; ip < 2; ip++) {
                    tt_coll_t coll = colls[ci];
                    size_t n = counts[ni], e = tutti_dtype_size(kinds[ki].t);
                    if (ip && coll == TT_COLL_ALLTOALL)
                        continue; /* no in-place form */
                    tt_call_t c = {.coll = coll,
                                   .count = n,
                                   .dtype = kinds[ki].t,
                                   .op = kinds[ki].op,
                                   .root = (int)(ni % (size_t)p)};
                    for (size_t i = 0; i < span_bytes / e; i++)
                        tt_test_value(c.dtype, c.op, ref, i, r, i);
                    memcpy(dev, ref, span_bytes);
                    memset(host, POISON, span_bytes);
                    tt_test_place(&c, coll, ref, n, e, r, p, ip);
                    tt_call_t want = c;
                    TT_FAIL_IF(tt_test_run_host(comm, &want), "%s: %s", tt_coll_name(coll),
                               tutti_comm_last_error(comm));

                    tt_call_t d = c, h = c;
                    tt_test_place(&d, coll, dev, n, e, r, p, ip);
                    tt_test_place(&h, coll, host, n, e, r, p, ip);
                    TT_FAIL_IF(tt_coll_validate(comm, &d, "test"), "prepare: %s",
                               tutti_comm_last_error(comm));
                    int divides = c.op == TUTTI_AVG && d.out_bytes && coll != TT_COLL_BROADCAST;
                    fake_t *f = calloc(1, sizeof *f);
                    f->dev = &d;
                    f->host = &h;
                    tt_stage_hooks_t hooks = {.fetch_bufs =
                                                  1u << TT_BUF_INPUT | (ip ? 1u << TT_BUF_OUTPUT : 0),
                                              .deliver_bufs = divides ? 0 : 1u << TT_BUF_OUTPUT,
                                              .fetch = fake_fetch,
                                              .fetched = fake_fetched,
                                              .deliver = fake_deliver,
                                              .arg = f};
                    h.stage = &hooks;
                    TT_FAIL_IF(tt_test_run_host(comm, &h), "staged %s: %s", tt_coll_name(coll),
                               tutti_comm_last_error(comm));
                    if (divides) /* as the proxy: results back whole */
                        memcpy((char *)d.recv, h.recv, d.out_bytes);
                    TT_FAIL_IF(memcmp(d.recv, want.recv, d.out_bytes),
                               "%s %s %s n=%zu in_place=%d: staged results differ (%d slices)",
                               tt_coll_name(coll), tutti_dtype_name(c.dtype), tutti_op_name(c.op), n, ip,
                               f->slices);
                    TT_FAIL_IF(n > 1000 && d.in_bytes && f->slices < 2, "%s: only %d slice",
                               tt_coll_name(coll), f->slices);
                    TT_FAIL_IF(f->slices && !f->waits, "%s: the engine never waited", tt_coll_name(coll));
                    for (int k = 0; k < f->slices; k++)
                        free(f->pending[k]);
                    free(f);
                }
    free(ref);
    free(dev);
    free(host);
    return 0;
}

/* _i picks the algorithm: every one that serves a collective staged. */
START_TEST(staged_slices_give_the_unstaged_results)
{
    const tt_algorithm_t *a = tt_algorithms[_i];
    int serves = 0;
    for (int c = TT_COLL_ALLREDUCE; c <= TT_COLL_ALLTOALL; c++)
        serves |= a->build[c] != NULL;
    if (!serves)
        return;
    int p = strcmp(a->name, "hierarchical") == 0 ? 4 : 2 + _i % 3;
    setenv("TUTTI_ALGO", a->name, 1);
    setenv("TUTTI_SLICE_BYTES", "1K", 1);
    tt_set_ranks_per_node(strcmp(a->name, "hierarchical") == 0 ? 2 : 0);
    tt_run_ranks(p, staged_collectives, NULL, 120);
    tt_set_ranks_per_node(0);
    unsetenv("TUTTI_ALGO");
    unsetenv("TUTTI_SLICE_BYTES");
}
END_TEST

static Suite *stage_suite(void)
{
    Suite *s = suite_create("stage");
    TCase *tc = tcase_create("stage");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, pieces_merge_and_follow_the_slice);
    tcase_add_loop_test(tc, staged_slices_give_the_unstaged_results, 0, tt_num_algorithms);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tt_run_suite(stage_suite());
}
