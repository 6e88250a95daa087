/* SPDX-License-Identifier: MIT */
/*
 * Connections a communicator lends to those made from it by a split or a
 * shrink that asked to share them (TUTTI_SPLIT_SHARE, TUTTI_SHRINK_SHARE).
 * A pair of the new communicator whose two ranks both hold their parent's
 * connection takes it instead of making its own (connect.c asks here, the
 * two ranks agree as for any transport); the parent's host connections
 * then stay until the last communicator using them is freed, whichever of
 * them goes first. The user's side of the bargain: calls on communicators
 * that share connections never overlap (a message of one at the head of a
 * connection would block the other's, or be taken for it); the headers
 * name the communicator, so an overlap is a mismatch, never a wrong result.
 */
#ifndef TT_LEND_H
#define TT_LEND_H

#include "comm/comm.h"

struct tt_lend {
    tt_comm_t *from;    /* the parent, entered by the caller */
    const int *rank_of; /* the parent's rank of each rank of the new communicator */
};

/* Before the new communicator answers any pair: it holds the parent, whose
 * connections it may take (lend NULL: none). */
tutti_status_t tt_lend_take(tt_comm_t *comm, const tt_lend_t *lend);
/* Whether comm may take the parent's connection to its rank q (the parent
 * is live, has not failed or been revoked, and that pair is whole): 1 and
 * the connection in *peer, else 0. */
int tt_lend_offers(tt_comm_t *comm, int q, tt_peer_t *peer);
/* comm failed or was revoked: the connections it shares with the
 * communicators it borrowed from may hold its broken call's messages, so
 * they lend them no more (nor do their own lenders). */
void tt_lend_taint(tt_comm_t *comm);
/* The parent's tag and the parent's ranks of this rank and of q, which an
 * offer to borrow carries so that both ranks mean the same pair. */
void tt_lend_names(tt_comm_t *comm, int q, uint64_t *tag, int *mine, int *theirs);
/* comm is being freed: 1 when communicators made from it still use its
 * host connections, which then stay (the last of them frees comm). */
int tt_lend_kept(tt_comm_t *comm);
/* comm was freed: lets go of its parent, and returns it when that was the
 * last use of a parent freed already (the caller finishes freeing it). */
tt_comm_t *tt_lend_give_back(tt_comm_t *comm);

#endif
