/* SPDX-License-Identifier: MIT */
/*
 * The listeners each rank keeps with its communicator for a later
 * shrink (rescue.c).
 */
#ifndef TT_COMM_RESCUE_H
#define TT_COMM_RESCUE_H

#include "comm/comm.h"

/* This rank's listeners for a later shrink (rescue.c): opened before
 * set-up's exchange (the TCP address goes with this rank's record), kept
 * until comm is freed; narrow closes the TCP one once set-up shows every
 * rank on this host reaches this one over its Unix socket. In a forked
 * child (local_only) close leaves the parent's socket file alone. */
tutti_status_t tt_rescue_open(tt_comm_t *comm, tt_sockaddr_t *addr);
void tt_rescue_narrow(tt_comm_t *comm);
void tt_rescue_close(tt_comm_t *comm, int local_only);

#endif
