/* SPDX-License-Identifier: MIT */
/*
 * Surviving a lost rank: tutti_comm_revoke stops every call on a
 * communicator, on every rank, through the flag abort raises and the star;
 * tutti_comm_shrink makes a communicator of the ranks that remain. Its
 * agreement (shrink_agree.c) needs no working collective on the old
 * communicator; what it agreed becomes a new communicator set up as
 * tutti_comm_init sets one up, over the connections the agreement made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/error.h"
#include "comm/handle.h"
#include "comm/lend.h"
#include "comm/shrink.h"
#include "comm/star.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/mac.h"
#include "core/ranks.h"
#include "core/try.h"

/* Revokes comm (entered by the caller). */
static void revoke_here(tt_comm_t *comm)
{
    int none = -1;
    if (atomic_compare_exchange_strong_explicit(&comm->revoked_by, &none, comm->rank, memory_order_relaxed,
                                                memory_order_relaxed))
        TT_INFO(TT_SUB_INIT, "rank %d revokes its communicator of %d ranks", comm->rank, comm->nranks);
    tt_lend_taint(comm);
    /* The same flag as abort's, so the calls waiting here stop at once;
     * the star tells every rank, whose calls then stop too. */
    tt_comm_interrupt(comm);
    if (comm->bs.star)
        tt_star_revoke(comm->bs.star);
    /* Until the other calls have returned (revokes on other threads wait alike). */
    atomic_fetch_add_explicit(&comm->revoking, 1, memory_order_relaxed);
    tt_comm_wait_idle(comm, &comm->revoking);
    atomic_fetch_sub_explicit(&comm->revoking, 1, memory_order_relaxed);
}

TUTTI_API tutti_status_t tutti_comm_revoke(tutti_comm_t handle)
{
    tt_comm_t *comm;
    TT_TRY(tt_comm_enter(handle, "tutti_comm_revoke", &comm));
    revoke_here(comm);
    tt_comm_leave(comm);
    return TUTTI_SUCCESS;
}

static tutti_status_t check_args(tt_comm_t *comm, const int *exclude, int n, unsigned flags,
                                 unsigned char *excluded)
{
    const unsigned known = TUTTI_SHRINK_ABORT | TUTTI_SHRINK_DEAD | TUTTI_SHRINK_SHARE;
    if (n < 0 || (n > 0 && !exclude))
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "tutti_comm_shrink: exclude %p with n %d",
                             (const void *)exclude, n);
    if (flags & ~known)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "tutti_comm_shrink: unknown flags %#x",
                             flags & ~known);
    for (int i = 0; i < n; i++) {
        if (exclude[i] < 0 || exclude[i] >= comm->nranks)
            return tt_comm_error(
                comm, TUTTI_ERR_INVALID_ARG,
                "tutti_comm_shrink: exclude[%d] = %d is not a rank of this communicator (0..%d)", i,
                exclude[i], comm->nranks - 1);
        if (exclude[i] == comm->rank)
            return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG,
                                 "tutti_comm_shrink: rank %d excludes itself (excluded ranks do not call it)",
                                 comm->rank);
        excluded[exclude[i]] = 1;
    }
    return TUTTI_SUCCESS;
}

/* The new communicator over the connections the agreement made (with
 * TUTTI_SHRINK_SHARE, lent comm's own where it is whole: lend.h). */
static tutti_status_t build(tt_shrink_t *sh, tutti_comm_t *newcomm)
{
    tutti_comm_params_t params = tt_comm_inherited(sh->comm);
    int *rank_of = malloc(sizeof *rank_of * (size_t)sh->n), k = 0;
    for (int r = 0; rank_of && r < sh->n; r++)
        if (sh->member[r])
            rank_of[k++] = r;
    tt_lend_t lend = {sh->comm, rank_of};
    int share = (sh->flags & TUTTI_SHRINK_SHARE) && rank_of && k == sh->d.nmembers;
    tutti_status_t st = tt_comm_create_over(newcomm, sh->d.nmembers, sh->d.newrank, sh->d.key, sh->up_fd,
                                            sh->rank_fds, &params, share ? &lend : NULL);
    sh->up_fd = -1; /* closed by now when it failed */
    sh->rank_fds = NULL;
    free(rank_of);
    return st;
}

/* Agreement, then set-up; with TUTTI_SHRINK_DEAD a set-up that a dying
 * member broke starts over without it (each round loses a rank, so this
 * ends), and without the ranks the last round left out: they were told. */
static tutti_status_t shrink(tt_shrink_t *sh, tutti_comm_t *newcomm)
{
    int64_t start = tt_now_ms();
    for (int round = 0;; round++) {
        sh->admit_until = tt_now_ms() + sh->comm->timeout_ms;
        sh->until = sh->admit_until + sh->comm->timeout_ms;
        TT_TRY(tt_shrink_agree(sh));
        tt_log_fault_mark();
        tutti_status_t st = build(sh, newcomm);
        if (!st) {
            char left[256] = "none";
            int c = 0;
            tt_ranks_str(sh->member, sh->n, left, sizeof left);
            TT_INFO(TT_SUB_INIT, "shrink: rank %d of %d is rank %d of %d (from %s) after %lld ms", sh->me,
                    sh->n, sh->d.newrank, sh->d.nmembers, left, (long long)(tt_now_ms() - start));
            while (!sh->member[c]) /* the coordinator: the lowest member */
                c++;
            snprintf(sh->comm->succeeded, sizeof sh->comm->succeeded,
                     "by its shrink #%u, coordinated by rank %d, into communicator %016llx of %.80s",
                     sh->no + 1, c, (unsigned long long)tt_comm_name(sh->d.key), left);
            return TUTTI_SUCCESS;
        }
        if (st != TUTTI_ERR_PEER_FAILED || !(sh->flags & TUTTI_SHRINK_DEAD) || round >= sh->n)
            return tt_comm_context(NULL, st,
                                   "tutti_comm_shrink: setting up the new communicator of %d ranks failed",
                                   sh->d.nmembers);
        TT_INFO(TT_SUB_INIT, "shrink: a member died while the new communicator was set up; starting over");
        for (int r = 0; r < sh->n; r++)
            if (!sh->member[r] && r != sh->me && !sh->dead[r])
                sh->dead[r] = TT_LEFT_OUT;
    }
}

TUTTI_API tutti_status_t tutti_comm_shrink(tutti_comm_t handle, const int *exclude, int n, unsigned flags,
                                           tutti_comm_t *newcomm)
{
    if (newcomm)
        *newcomm = NULL;
    tt_comm_t *comm;
    TT_TRY(tt_comm_enter(handle, "tutti_comm_shrink", &comm));
    tt_shrink_t sh = {.comm = comm, .n = comm->nranks, .me = comm->rank, .flags = flags};
    sh.excluded = calloc((size_t)sh.n, 1);
    sh.dead = calloc((size_t)sh.n, 1);
    sh.member = calloc((size_t)sh.n, 1);
    sh.joined = calloc((size_t)sh.n, sizeof *sh.joined);
    for (int r = 0; sh.joined && r < sh.n; r++)
        sh.joined[r].fd = -1;
    tutti_status_t st = TUTTI_SUCCESS;
    if (!newcomm)
        st = tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "tutti_comm_shrink: newcomm: NULL output pointer");
    else if (!sh.excluded || !sh.dead || !sh.member || !sh.joined)
        st = tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory for %d ranks", sh.n);
    else
        st = check_args(comm, exclude, n, flags, sh.excluded);
    if (!st && comm->shrunk_out_by >= 0)
        st = tt_comm_error(
            comm, TUTTI_ERR_REVOKED,
            "tutti_comm_shrink: rank %d was excluded by the survivors: rank %d coordinated this "
            "communicator's shrink #%u without it",
            comm->rank, comm->shrunk_out_by, comm->shrunk_out_no + 1);
    if (!st) {
        sh.exclude_hash = tt_hash(sh.excluded, (size_t)sh.n, TT_HASH_SEED);
        tt_rescue_key(comm, sh.key);
        sh.no = comm->nshrinks++;
        if (flags & TUTTI_SHRINK_ABORT)
            revoke_here(comm);
        st = shrink(&sh, newcomm);
        if (st) /* said where it was found; comm's last error says it too */
            tt_comm_error_logged(comm, st, "%s", tutti_comm_last_error(NULL));
    }
    free(sh.excluded);
    free(sh.dead);
    free(sh.member);
    free(sh.joined);
    tt_comm_leave(comm);
    return st;
}
