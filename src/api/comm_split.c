/* SPDX-License-Identifier: MIT */
/*
 * tutti_comm_split: MPI_Comm_split over the public calls. The parent
 * all-gathers every rank's (color, key); the first rank of each color makes a
 * unique id, a second all-gather hands it to the rest of the color, and each
 * color joins its own communicator with the parent's timeout and host (and,
 * with TUTTI_SPLIT_SHARE, the parent's connections to lend, comm/lend.h).
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "comm/lend.h"
#include "core/log.h"
#include "core/try.h"

typedef struct {
    int32_t color, key;
} split_entry_t;

/* What a color's leader hands its members: whether it made an id, and the id. */
typedef struct {
    int32_t made;
    int32_t pad;
    tutti_unique_id_t id;
} split_id_t;

/* Places the ranks of one color in key order, ties by parent rank: members
 * gets their parent ranks; returns how many there are. */
static int color_members(const split_entry_t *all, int nranks, int color, int *members)
{
    int n = 0;
    for (int r = 0; r < nranks; r++) {
        if (all[r].color != color)
            continue;
        int at = n++;
        /* Insertion keeps ties in rank order since r grows. */
        while (at > 0 && all[members[at - 1]].key > all[r].key) {
            members[at] = members[at - 1];
            at--;
        }
        members[at] = r;
    }
    return n;
}

/* All-gathers this rank's leader record and joins the color's communicator
 * (comm is the parent itself, handle what its caller holds). */
static tutti_status_t join_color(tt_comm_t *comm, tutti_comm_t handle, int color, const int *members, int n,
                                 int newrank, unsigned flags, split_id_t *ids, tutti_comm_t *newcomm)
{
    split_id_t mine;
    memset(&mine, 0, sizeof mine);
    tutti_status_t made = TUTTI_SUCCESS;
    if (color >= 0 && newrank == 0) {
        made = tutti_get_unique_id(&mine.id);
        mine.made = made == TUTTI_SUCCESS;
    }
    tutti_status_t st = tutti_allgather(&mine, ids, sizeof mine, TUTTI_UINT8, handle, NULL);
    if (st)
        return st; /* the all-gather recorded its error on comm */
    if (made)
        return tt_comm_error(comm, made, "tutti_comm_split: rank %d could not make the id of color %d: %s",
                             comm->rank, color, tutti_comm_last_error(NULL));
    if (color < 0)
        return TUTTI_SUCCESS;
    if (!ids[members[0]].made)
        return tt_comm_error(comm, TUTTI_ERR_PEER_FAILED,
                             "tutti_comm_split: rank %d, first of color %d, could not make its id",
                             members[0], color);
    tutti_comm_params_t params = tt_comm_inherited(comm);
    tt_lend_t lend = {comm, members};
    tt_id_t id;
    if (tt_id_decode(ids[members[0]].id.internal, &id))
        return tt_comm_error(comm, TUTTI_ERR_INTERNAL,
                             "tutti_comm_split: rank %d's id of color %d is garbled", members[0], color);
    st = tt_comm_create(newcomm, n, newrank, &id, 1, &params, flags & TUTTI_SPLIT_SHARE ? &lend : NULL);
    if (st)
        return tt_comm_error(comm, st,
                             "tutti_comm_split: rank %d joining color %d as rank %d of %d failed: %s",
                             comm->rank, color, newrank, n, tutti_comm_last_error(NULL));
    TT_INFO(TT_SUB_INIT, "split: rank %d is rank %d of %d in color %d", comm->rank, newrank, n, color);
    return TUTTI_SUCCESS;
}

/* The split, inside enter/leave: comm is the parent itself. */
static tutti_status_t split(tt_comm_t *comm, tutti_comm_t handle, int color, int key, unsigned flags,
                            tutti_comm_t *newcomm)
{
    if (!newcomm)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "newcomm: NULL output pointer");
    if (flags & ~(unsigned)TUTTI_SPLIT_SHARE)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "tutti_comm_split_flags: unknown flags %#x",
                             flags & ~(unsigned)TUTTI_SPLIT_SHARE);
    *newcomm = NULL;
    if (color < 0)
        color = TUTTI_SPLIT_NOCOLOR;
    int p = comm->nranks;
    split_entry_t *all = malloc(sizeof *all * (size_t)p);
    int *members = malloc(sizeof *members * (size_t)p);
    split_id_t *ids = malloc(sizeof *ids * (size_t)p);
    if (!all || !members || !ids) {
        free(all);
        free(members);
        free(ids);
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "tutti_comm_split: no memory for %d ranks' records",
                             p);
    }
    split_entry_t me = {color, key};
    tutti_status_t st = tutti_allgather(&me, all, 2, TUTTI_INT32, handle, NULL);
    int n = 0, newrank = -1;
    if (!st && color >= 0) {
        n = color_members(all, p, color, members);
        for (int i = 0; i < n; i++)
            if (members[i] == comm->rank)
                newrank = i;
    }
    if (!st)
        st = join_color(comm, handle, color, members, n, newrank, flags, ids, newcomm);
    free(all);
    free(members);
    free(ids);
    return st;
}

/* The parent's handle gives the communicator (live, made by this process),
 * and an abort of the parent from another thread waits for the split. */
TUTTI_API tutti_status_t tutti_comm_split_flags(tutti_comm_t handle, int color, int key, unsigned flags,
                                                tutti_comm_t *newcomm)
{
    tt_comm_t *comm;
    if (newcomm)
        *newcomm = NULL;
    TT_TRY(tt_comm_enter(handle, "tutti_comm_split", &comm));
    tutti_status_t st = split(comm, handle, color, key, flags, newcomm);
    tt_comm_leave(comm);
    return st;
}

TUTTI_API tutti_status_t tutti_comm_split(tutti_comm_t handle, int color, int key, tutti_comm_t *newcomm)
{
    return tutti_comm_split_flags(handle, color, key, 0, newcomm);
}
