/* SPDX-License-Identifier: MIT */
/*
 * What the star's news means for a call: a revoked communicator ends
 * every call with TUTTI_ERR_REVOKED, a rank that gave up ends its
 * collective and the later ones, and sends and receives, with its reason
 * (a mismatch stays a mismatch, a timeout a timeout; an earlier
 * collective, which it finished, ends on its own),
 * a rank that died with TUTTI_ERR_PEER_FAILED, a rank in destroy ends the
 * collectives it will never make (not sends and receives: what it sent
 * before it left is still to be received), and a who-is-stuck report ends the call that
 * waits with the report. Also this rank's side of the report.
 */
#include <stdio.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "comm/news.h"
#include "comm/star.h"
#include "core/log.h"
#include "core/try.h"

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

int tt_comm_has_news(tt_comm_t *comm)
{
    return tt_star_has_news(comm->bs.star) ||
           atomic_load_explicit(&comm->revoked_by, memory_order_relaxed) >= 0;
}

tutti_status_t tt_comm_revoked(tt_comm_t *comm, const char *call)
{
    int by = atomic_load_explicit(&comm->revoked_by, memory_order_relaxed);
    if (by < 0)
        return TUTTI_SUCCESS;
    return by == comm->rank
               ? tt_comm_error(comm, TUTTI_ERR_REVOKED, "%s: this rank revoked the communicator", call)
               : tt_comm_error(comm, TUTTI_ERR_REVOKED, "%s: rank %d revoked the communicator", call, by);
}

tutti_status_t tt_comm_usable(tt_comm_t *comm, const char *call)
{
    TT_TRY(tt_comm_revoked(comm, call));
    if (comm->failed)
        return tt_comm_error(
            comm, TUTTI_ERR_ABORTED,
            "%s: this communicator failed earlier (%s); abort it, or shrink it (tutti_comm(3))", call,
            tutti_strerror(comm->failed));
    return TUTTI_SUCCESS;
}

tutti_status_t tt_comm_news(tt_comm_t *comm, const char *call, uint64_t seq)
{
    /* A revoked communicator ends every call alike, whatever else happened. */
    TT_TRY(tt_comm_revoked(comm, call));
    tt_star_t *star = comm->bs.star;
    if (!tt_star_has_news(star))
        return TUTTI_SUCCESS;
    static _Thread_local tt_star_news_t n; /* too large for the engine's stack frame */
    tt_star_news(star, &n);
    if (n.died_rank >= 0)
        return tt_comm_error(comm, TUTTI_ERR_PEER_FAILED, "%s: rank %d died or lost its connection", call,
                             n.died_rank);
    if (n.failed_rank >= 0 && seq >= n.failed_from) {
        /* A peer that gave up because the communicator was revoked tells of
         * the revocation, which may reach this rank a moment after it. */
        tutti_status_t st = n.failed_status == TUTTI_ERR_MISMATCH || n.failed_status == TUTTI_ERR_TIMEOUT ||
                                    n.failed_status == TUTTI_ERR_REVOKED
                                ? n.failed_status
                                : TUTTI_ERR_PEER_FAILED;
        return tt_comm_error(comm, st, "%s: rank %d gave up (%s): %s", call, n.failed_rank,
                             tutti_status_name(n.failed_status), n.failed_text);
    }
    if (n.have_report)
        return tt_comm_error(comm, TUTTI_ERR_TIMEOUT, "%s: a rank reached its timeout (TUTTI_TIMEOUT); %s",
                             call, n.report);
    /* A send or receive (seq UINT64_MAX) is not ended by a peer in
     * destroy: what it sent before it left is still there to be received. */
    if (n.left_rank >= 0 && seq != UINT64_MAX && seq >= n.left_after)
        return tt_comm_error(
            comm, TUTTI_ERR_MISMATCH,
            "%s: rank %d called tutti_comm_destroy after %llu collective%s, before making this call", call,
            n.left_rank, (unsigned long long)n.left_after, plural(n.left_after));
    return TUTTI_SUCCESS;
}

void tt_comm_who_is_stuck(tt_comm_t *comm, char *out, size_t len)
{
    out[0] = '\0';
    if (!comm->bs.star)
        return;
    tt_stuck_state_t mine;
    tt_progress_read(&comm->progress, &mine);
    tt_star_who_is_stuck(comm->bs.star, &mine, out, len);
}
