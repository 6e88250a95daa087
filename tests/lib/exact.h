/* SPDX-License-Identifier: MIT */
/*
 * Exact results for multi-rank tests: the small numbers each rank holds, the
 * reduction every dtype and op must give from them, one round of every
 * collective checked against them, and whether a rank is on the transport
 * it should be. No Check framework here, so that rank programs run on
 * machines without it (the guests of .ci/rxe).
 */
#ifndef TT_TEST_EXACT_H
#define TT_TEST_EXACT_H

#include <stddef.h>
#include <stdio.h>

#include "transports/transport.h"
#include "tutti.h"

/* In a rank body: prints the message and returns 1 (failure) when cond holds. */
#define TT_FAIL_IF(cond, ...)                                                                                \
    do {                                                                                                     \
        if (cond) {                                                                                          \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            return 1;                                                                                        \
        }                                                                                                    \
    } while (0)

/*
 * Writes element i of buf as the exact small number that rank holds at
 * global index: every dtype and op then has an exact, order-free result
 * (prod uses only 1 and 2; for fp8, on up to 32 ranks).
 */
void tt_test_value(tutti_dtype_t t, tutti_op_t op, void *buf, size_t i, int rank, size_t index);

/* Expected op over p ranks of tt_test_value at global indices [base,
 * base + n), into want; term is scratch of n elements. */
void tt_expect_reduced(char *want, char *term, size_t n, size_t base, int p, tutti_dtype_t t, tutti_op_t op);

/* Buffers for tt_check_round: each of at least count * nranks elements of 8 bytes. */
typedef struct {
    char *in, *out, *want, *term;
} tt_round_bufs_t;

/*
 * Every collective once at count n (all-reduce, reduce-scatter, all-gather,
 * broadcast, reduce, all-to-all, a ring of send/recv, barrier) on rank r of
 * p, in place where ip is set; 0 when every result is exact, else 1 after
 * printing what differed.
 */
int tt_check_round(tutti_comm_t comm, int r, int p, size_t n, tutti_dtype_t t, tutti_op_t op, int ip,
                   const tt_round_bufs_t *b);

/* tt_check_round of fp32 sums at count 257 on comm, with buffers of its
 * own: 0 when every result is exact. */
int tt_round_ok(tutti_comm_t comm);

/* Whether every peer on another host that the rank has connected to so
 * far (pairs connect at first use) is on the transport ops, not a
 * fallback, and there is at least one such peer (white box: its
 * connections; run it after the calls). */
int tt_test_on_transport(tutti_comm_t handle, const tt_transport_ops_t *ops);

#endif
