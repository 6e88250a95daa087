/* SPDX-License-Identifier: MIT */
/*
 * Lending a communicator's host connections to those made from it
 * (lend.h). One lock guards every lender's count of borrowers and whether
 * it was freed: a borrower's bootstrap thread asks about a pair while the
 * lender's main thread may be destroying it. The pair's own state is read
 * through its joined flag, published after the connection, never under
 * the lender's pair lock (the lender may itself borrow, and take this lock
 * under its own).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/lend.h"

static pthread_mutex_t lend_lock = PTHREAD_MUTEX_INITIALIZER;

tutti_status_t tt_lend_take(tt_comm_t *comm, const tt_lend_t *lend)
{
    if (!lend)
        return TUTTI_SUCCESS;
    comm->lender_rank = malloc(sizeof *comm->lender_rank * (size_t)comm->nranks);
    comm->borrowed = calloc((size_t)comm->nranks, 1);
    if (!comm->lender_rank || !comm->borrowed)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for the parent's ranks",
                             comm->rank);
    memcpy(comm->lender_rank, lend->rank_of, sizeof *comm->lender_rank * (size_t)comm->nranks);
    pthread_mutex_lock(&lend_lock);
    lend->from->borrowers++;
    comm->lender = lend->from;
    pthread_mutex_unlock(&lend_lock);
    return TUTTI_SUCCESS;
}

/* Whether comm's connections hold no broken call's messages: neither it
 * nor any communicator it borrows from failed or was revoked, nor one that
 * borrowed from them. Under the lock. */
static int sound(tt_comm_t *comm)
{
    for (tt_comm_t *c = comm; c; c = c->lender)
        if (c->failed || atomic_load(&c->revoked_by) >= 0 || atomic_load(&c->aborting) ||
            atomic_load(&c->tainted))
            return 0;
    return 1;
}

int tt_lend_offers(tt_comm_t *comm, int q, tt_peer_t *peer)
{
    tt_comm_t *from = comm->lender;
    if (!from)
        return 0;
    int lq = comm->lender_rank[q], ok = 0;
    pthread_mutex_lock(&lend_lock);
    /* A communicator of more channels would use ones the parent's
     * connections lack; one its peer gave up on is no use. */
    if (!from->lent_out && sound(from) && from->joined && comm->nchannels <= from->nchannels &&
        atomic_load_explicit(&from->joined[lq], memory_order_acquire)) {
        *peer = from->peers[lq];
        ok = peer->ops->alive(peer->conn) == TUTTI_SUCCESS;
    }
    pthread_mutex_unlock(&lend_lock);
    return ok;
}

void tt_lend_taint(tt_comm_t *comm)
{
    pthread_mutex_lock(&lend_lock);
    for (tt_comm_t *c = comm->lender; c; c = c->lender)
        atomic_store(&c->tainted, 1);
    pthread_mutex_unlock(&lend_lock);
}

void tt_lend_names(tt_comm_t *comm, int q, uint64_t *tag, int *mine, int *theirs)
{
    *tag = comm->lender ? comm->lender->env.key_tag : 0;
    *mine = comm->lender ? comm->lender_rank[comm->rank] : -1;
    *theirs = comm->lender ? comm->lender_rank[q] : -1;
}

int tt_lend_kept(tt_comm_t *comm)
{
    pthread_mutex_lock(&lend_lock);
    comm->lent_out = comm->borrowers > 0;
    int kept = comm->lent_out;
    pthread_mutex_unlock(&lend_lock);
    return kept;
}

tt_comm_t *tt_lend_give_back(tt_comm_t *comm)
{
    tt_comm_t *from = comm->lender;
    if (!from)
        return NULL;
    pthread_mutex_lock(&lend_lock);
    int last = --from->borrowers == 0 && from->lent_out;
    comm->lender = NULL;
    pthread_mutex_unlock(&lend_lock);
    return last ? from : NULL;
}
