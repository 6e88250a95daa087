/* SPDX-License-Identifier: MIT */
/*
 * tutti_comm_grow: newcomers join the ranks of a communicator. Rank 0's
 * rendezvous id (made with tutti_get_unique_id and handed to the
 * newcomers) is broadcast over comm, with the size rank 0 asked for; then
 * every rank joins the larger communicator as tutti_comm_init does, the
 * ranks of comm keeping their ranks, with comm's timeout and host.
 */
#include <string.h>

#include "comm/comm.h"
#include "core/log.h"
#include "core/try.h"

/* What rank 0 broadcasts: whether its arguments hold, the size, the id. */
typedef struct {
    int32_t ok;
    int32_t nranks;
    tutti_unique_id_t id;
} grow_t;

static tutti_status_t grow(tutti_comm_t comm, tutti_comm_t handle, int nranks, const tutti_unique_id_t *id,
                           tutti_comm_t *newcomm)
{
    grow_t g;
    memset(&g, 0, sizeof g);
    if (comm->rank == 0 && id && nranks > comm->nranks) {
        g.ok = 1;
        g.nranks = nranks;
        g.id = *id;
    }
    /* Even a rank 0 with bad arguments broadcasts, so the others do not wait for it. */
    TT_TRY(tutti_broadcast(&g, &g, sizeof g, TUTTI_UINT8, 0, handle, NULL));
    if (!g.ok)
        return tt_comm_error(
            comm, TUTTI_ERR_INVALID_ARG,
            "tutti_comm_grow: rank 0 passed %s (nranks must be above this communicator's %d)",
            comm->rank == 0 && !id ? "no id" : "an invalid id or size", comm->nranks);
    if (g.nranks != nranks)
        return tt_comm_error(comm, TUTTI_ERR_MISMATCH,
                             "tutti_comm_grow: rank 0 grows to %d ranks, rank %d to %d", g.nranks, comm->rank,
                             nranks);
    tutti_comm_params_t params = tt_comm_inherited(comm);
    tutti_status_t st = tutti_comm_init(newcomm, nranks, comm->rank, &g.id, &params);
    if (st)
        return tt_comm_error(comm, st, "tutti_comm_grow: rank %d joining %d ranks failed: %s", comm->rank,
                             nranks, tutti_comm_last_error(NULL));
    TT_INFO(TT_SUB_INIT, "grow: rank %d of %d is rank %d of %d", comm->rank, comm->nranks, comm->rank,
            nranks);
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_comm_grow(tutti_comm_t handle, int nranks, const tutti_unique_id_t *id,
                                         tutti_comm_t *newcomm)
{
    if (newcomm)
        *newcomm = NULL;
    tutti_comm_t comm;
    TT_TRY(tt_comm_enter(handle, "tutti_comm_grow", &comm));
    tutti_status_t st =
        newcomm ? grow(comm, handle, nranks, id, newcomm)
                : tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "tutti_comm_grow: newcomm: NULL output pointer");
    tt_comm_leave(comm);
    return st;
}
