/* SPDX-License-Identifier: MIT */
/*
 * The message-by-message agreement of sends and receives on the device
 * transport (pair.c).
 */
#ifndef TT_COMM_PAIR_H
#define TT_COMM_PAIR_H

#include "comm/comm.h"

/*
 * Point-to-point agreement through the device transport (src/comm/pair.c),
 * per pair and direction, message by message (k: the message's number in
 * its direction, as send_seq and recv_seq count them), so that both sides
 * of every message agree whether it runs directly. Every send and receive
 * takes part, on host buffers too (one or two stores). The receiver leads:
 * tt_comm_pair_offer says whether it could receive k directly (sig: the
 * message's signature), then tt_comm_pair_read_decision reads the
 * sender's decision (waiting for it only when it offered, *direct, and for at most
 * TT_PAIR_RECEIVE_WAIT_NS: then it withdraws the offer, and k stages unless
 * the sender took it first) and lets the sender reuse its place. The
 * sender never waits for the receiver, but for up to wait_ns for its
 * offer: tt_comm_pair_decide makes k direct when it takes the receiver's
 * offer, of the same signature, and this rank is capable. Without a device
 * transport nothing is stored and nothing is direct.
 */
#define TT_PAIR_RECEIVE_WAIT_NS 2000000

/* Tests that need every message direct on a loaded machine wait longer. */
void tt_comm_pair_set_receive_wait(int64_t ns);
tutti_status_t tt_comm_pair_offer(tt_comm_t *comm, int sender, uint64_t k, int capable, uint64_t sig);
tutti_status_t tt_comm_pair_decide(tt_comm_t *comm, int receiver, uint64_t k, int capable, uint64_t sig,
                                   int64_t wait_ns, int *direct);
tutti_status_t tt_comm_pair_read_decision(tt_comm_t *comm, int sender, uint64_t k, int offered, int *direct);

#endif
