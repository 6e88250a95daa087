/* SPDX-License-Identifier: MIT */
/*
 * tutti_comm_grow: newcomers join the ranks of a communicator. Rank 0's
 * rendezvous id (made with tutti_get_unique_id and handed to the
 * newcomers) and every rank's size are all-gathered over comm; then every
 * rank joins the larger communicator as tutti_comm_init does, the ranks of
 * comm keeping their ranks, with comm's timeout and host.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "core/log.h"
#include "core/try.h"

/* What each rank brings to the all-gather: the size it asked for; rank 0
 * also whether its arguments hold, and the id. */
typedef struct {
    int32_t ok;
    int32_t nranks;
    tutti_unique_id_t id;
} grow_t;

/* Every rank reads the same gathered entries, so every rank reaches the
 * same verdict at once: a rank that passed another size fails them all
 * with TUTTI_ERR_MISMATCH instead of leaving the others waiting for it in
 * the larger communicator's set-up. */
static tutti_status_t agree(tt_comm_t *comm, const grow_t *all)
{
    if (!all[0].ok)
        return tt_comm_error(
            comm, TUTTI_ERR_INVALID_ARG,
            "tutti_comm_grow: rank 0 passed %s (nranks must be above this communicator's %d)",
            all[0].nranks ? "an invalid size" : "no id", comm->nranks);
    for (int r = 1; r < comm->nranks; r++)
        if (all[r].nranks != all[0].nranks)
            return tt_comm_error(comm, TUTTI_ERR_MISMATCH,
                                 "tutti_comm_grow: rank 0 grows to %d ranks, rank %d to %d", all[0].nranks, r,
                                 all[r].nranks);
    return TUTTI_SUCCESS;
}

static tutti_status_t grow(tt_comm_t *comm, tutti_comm_t handle, int nranks, const tutti_unique_id_t *id,
                           tutti_comm_t *newcomm)
{
    grow_t mine, *all = calloc((size_t)comm->nranks, sizeof *all);
    if (!all)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "tutti_comm_grow: no memory for %d ranks",
                             comm->nranks);
    memset(&mine, 0, sizeof mine);
    mine.nranks = nranks;
    if (comm->rank == 0 && id && nranks > comm->nranks) {
        mine.ok = 1;
        mine.id = *id;
    } else if (comm->rank == 0 && !id) {
        mine.nranks = 0; /* says "no id" to the others */
    }
    /* Even a rank 0 with bad arguments takes part, so the others do not wait for it. */
    tutti_status_t st = tutti_allgather(&mine, all, sizeof mine, TUTTI_UINT8, handle, NULL);
    if (!st)
        st = agree(comm, all);
    tutti_unique_id_t root_id = all[0].id;
    free(all);
    if (st)
        return st;
    tutti_comm_params_t params = tt_comm_inherited(comm);
    st = tutti_comm_init(newcomm, nranks, comm->rank, &root_id, &params);
    if (st)
        return tt_comm_error(comm, st, "tutti_comm_grow: rank %d joining %d ranks failed: %s", comm->rank,
                             nranks, tutti_comm_last_error(NULL));
    TT_INFO(TT_SUB_INIT, "grow: rank %d of %d is rank %d of %d", comm->rank, comm->nranks, comm->rank,
            nranks);
    /* A rank whose part failed may shrink comm later: it must hear of this one, by its name. */
    uint64_t name = 0;
    tutti_comm_id(*newcomm, &name);
    snprintf(comm->succeeded, sizeof comm->succeeded,
             "by rank 0's grow into communicator %016llx of %d ranks", (unsigned long long)name, nranks);
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_comm_grow(tutti_comm_t handle, int nranks, const tutti_unique_id_t *id,
                                         tutti_comm_t *newcomm)
{
    if (newcomm)
        *newcomm = NULL;
    tt_comm_t *comm;
    TT_TRY(tt_comm_enter(handle, "tutti_comm_grow", &comm));
    tutti_status_t st =
        newcomm ? grow(comm, handle, nranks, id, newcomm)
                : tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "tutti_comm_grow: newcomm: NULL output pointer");
    tt_comm_leave(comm);
    return st;
}
