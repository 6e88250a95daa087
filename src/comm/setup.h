/* SPDX-License-Identifier: MIT */
/*
 * Between the bootstrap and a ready communicator, and back (setup.c,
 * tp_setup.c): records, the transports' listening, start and teardown.
 */
#ifndef TT_COMM_SETUP_H
#define TT_COMM_SETUP_H

#include "comm/comm.h"

/* Between the bootstrap and a ready communicator (setup.c), begun at t0
 * (tt_now_ms, for the log): publishes this rank's endpoint and where it
 * listens, has rank 0 check that every rank steers alike, starts the
 * transports (no pair connects yet, but for transports that cannot
 * connect at first use). */
tutti_status_t tt_comm_setup(tt_comm_t *comm, int node_id, int64_t t0);

/* Its transports' half (tp_setup.c): picks and starts listening on the
 * transports TUTTI_TRANSPORTS lists (offered: bit t, this rank offers t;
 * hash: of the list; blobs: what each listen wrote); then, once
 * comm->tp_all is known, starts them and makes the connections that cannot
 * wait for first use. */
tutti_status_t tt_comm_tp_listen(tt_comm_t *comm, uint32_t *offered, uint64_t *hash,
                                 unsigned char (*blobs)[TT_ADDR_MAX]);
tutti_status_t tt_comm_tp_connect(tt_comm_t *comm, unsigned char (*blobs)[TT_ADDR_MAX]);

/* Closes what tt_comm_setup opened. In a forked child (local_only) it
 * only releases this process's copies: the host transports' descriptors
 * and mappings; the device transport is left alone. keep_host: the host
 * connections and transports stay for the communicators that borrow them
 * (lend.h), for tt_comm_teardown_host once the last of them is freed. */
void tt_comm_teardown(tt_comm_t *comm, int local_only, int keep_host);
void tt_comm_teardown_host(tt_comm_t *comm);

#endif
