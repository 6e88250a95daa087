/* SPDX-License-Identifier: MIT */
/*
 * Host connections made at first use (connect.c), and a pair's link class
 * from its endpoints.
 */
#ifndef TT_COMM_CONNECT_H
#define TT_COMM_CONNECT_H

#include "comm/comm.h"

/* The class of the host link between ranks a and b (a != b): that of the
 * first transport every rank offers that reaches b from a, from their
 * endpoints alone (no table of every pair is kept). */
tt_link_t tt_comm_link(tt_comm_t *comm, int a, int b);

/* Whether transport t reaches b from a (any rank can tell for any pair). */
int tt_comm_reaches(tt_comm_t *comm, int t, int a, int b);

/* The first host transport from index `from` on that every rank offers
 * and that reaches q from this rank; -1: none. */
int tt_comm_host_tp(tt_comm_t *comm, int q, int from);

/*
 * Connections at first use (connect.c). Makes sure this rank has a host
 * connection to each of peers[0..n) (ranks of comm, this one skipped),
 * making the missing ones: each with a peer that takes part, as a
 * collective's schedule or the matching send or receive does. Fails
 * (recorded) when a peer dies, or gives up in collective seq or before it
 * (seq: the earliest call the connections serve; UINT64_MAX for sends and
 * receives, which any give-up ends), at the timeout, or when no transport
 * can serve a pair. A peer's own requests are answered by its bootstrap
 * thread, so the rank that asks never waits for the other's main thread.
 */
tutti_status_t tt_comm_connect(tt_comm_t *comm, const int *peers, int n, uint64_t seq);

/* Completes the connections other ranks asked this one for (a receive
 * from any source must see their messages); cheap when there are none. */
tutti_status_t tt_comm_connect_asked(tt_comm_t *comm);

/* Set-up and teardown of what connect.c keeps (local_only: in a forked
 * child, as tt_comm_teardown). */
tutti_status_t tt_comm_pairs_init(tt_comm_t *comm);
void tt_comm_pairs_free(tt_comm_t *comm, int local_only);

#endif
