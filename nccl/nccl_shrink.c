/* SPDX-License-Identifier: MIT */
/*
 * Surviving a lost rank through NCCL's API: ncclCommRevoke, ncclCommShrink
 * (NCCL 2.28: the default and abort flags, a config or the parent's, and
 * non-blocking like any init) and ncclCommGrow with ncclCommGetUniqueId
 * (NCCL 2.29), over tutti_comm_revoke, tutti_comm_shrink and
 * tutti_comm_grow.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "nccl/nccl_int.h"

/* As NCCL: flags other than NCCL_REVOKE_DEFAULT, a revoked or finalized
 * communicator are errors. tutti's revocation also reaches the other ranks
 * at once (their calls end with ncclInvalidUsage); it is done, so the
 * communicator is quiescent, when this returns, in either mode. */
TT_NCCL_EXPORT ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    if (!comm)
        return ncclSuccess;
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommRevoke");
    if (res)
        return res;
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
        res = tt_nccl_error(comm, ncclInvalidArgument,
                            "ncclCommRevoke: revokeFlags %d: only NCCL_REVOKE_DEFAULT (0)", revokeFlags);
    else if (comm->revoked)
        res =
            tt_nccl_error(comm, ncclInvalidArgument, "ncclCommRevoke: the communicator was revoked already");
    if (!res) {
        comm->revoked = 1;
        tutti_status_t st = tutti_comm_revoke(tt_nccl_tc(comm));
        res = st ? tt_nccl_failed(comm, st) : ncclSuccess;
    }
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclCommRevoke)

/* The exclude list, checked as NCCL checks it (non-empty, this rank not in
 * it), copied for the background init. */
static ncclResult_t take_list(ncclComm_t comm, ncclComm_t child, const int *list, int n)
{
    if (!list || n <= 0)
        return tt_nccl_error(
            comm, ncclInvalidArgument,
            "ncclCommShrink: excludeRanksList %p, excludeRanksCount %d: name at least one rank",
            (const void *)list, n);
    for (int i = 0; i < n; i++)
        if (list[i] == comm->rank)
            return tt_nccl_error(
                comm, ncclInvalidArgument,
                "ncclCommShrink: rank %d is in excludeRanksList (excluded ranks do not call it)", comm->rank);
    child->init.exclude = malloc(sizeof(int) * (size_t)n);
    if (!child->init.exclude)
        return tt_nccl_error(comm, ncclSystemError, "ncclCommShrink: no memory");
    memcpy(child->init.exclude, list, sizeof(int) * (size_t)n);
    child->init.nexclude = n;
    return ncclSuccess;
}

/* A rank that was to remain and dies fails the shrink on every survivor
 * (ncclRemoteError), as the exclude list is taken as given. */
TT_NCCL_EXPORT ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                            ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    if (newcomm)
        *newcomm = NULL;
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommShrink");
    if (res)
        return res;
    int blocking = comm->blocking;
    if (!newcomm)
        res = tt_nccl_error(comm, ncclInvalidArgument, "ncclCommShrink: newcomm: NULL pointer");
    else if (shrinkFlags & ~NCCL_SHRINK_ABORT)
        res = tt_nccl_error(comm, ncclInvalidArgument,
                            "ncclCommShrink: shrinkFlags %#x: NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT",
                            shrinkFlags);
    if (!res)
        res = tt_nccl_config(config, comm->blocking, &blocking, "ncclCommShrink");
    ncclComm_t child = res ? NULL : tt_nccl_child(comm, blocking);
    if (!res && !child)
        res = tt_nccl_error(comm, ncclSystemError, "ncclCommShrink: no memory for a communicator");
    if (!res)
        res = take_list(comm, child, excludeRanksList, excludeRanksCount);
    if (child && res) {
        tt_nccl_leave(comm); /* the child's hold */
        tt_nccl_free(child);
    }
    if (!res) {
        child->init.how = TT_NCCL_SHRINK;
        child->init.flags = shrinkFlags & NCCL_SHRINK_ABORT ? TUTTI_SHRINK_ABORT : TUTTI_SHRINK_DEFAULT;
        if (tt_nccl_config_share(config, offsetof(ncclConfig_t, shrinkShare),
                                 "NCCL_COMM_SHRINK_SHARE_RESOURCES"))
            child->init.flags |= TUTTI_SHRINK_SHARE; /* tutti shares nothing of a revoked one */
        res = tt_nccl_launch(child, newcomm);
    }
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclCommShrink)

/* tutti's id serves the rendezvous, so only rank 0's process can make it
 * (it listens for the newcomers there). */
TT_NCCL_EXPORT ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId)
{
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommGetUniqueId");
    if (res)
        return res;
    if (!uniqueId)
        res = tt_nccl_error(comm, ncclInvalidArgument, "ncclCommGetUniqueId: uniqueId: NULL pointer");
    else if (comm->rank != 0)
        res = tt_nccl_error(
            comm, ncclInvalidUsage,
            "ncclCommGetUniqueId: call it on rank 0, whose process serves the newcomers' rendezvous");
    else
        res = pncclGetUniqueId(uniqueId);
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclCommGetUniqueId)

/* NCCL 2.29's three roles: a newcomer (comm NULL, its rank), rank 0 of comm
 * (the id), the other ranks of comm (id NULL, rank -1). */
TT_NCCL_EXPORT ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
                                          ncclComm_t *newcomm, ncclConfig_t *config)
{
    if (!comm) {
        if (!uniqueId)
            return tt_nccl_error(NULL, ncclInvalidArgument,
                                 "ncclCommGrow: a newcomer (comm NULL) needs the id");
        return pncclCommInitRankConfig(newcomm, nRanks, *uniqueId, rank, config);
    }
    if (newcomm)
        *newcomm = NULL;
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommGrow");
    if (res)
        return res;
    int blocking = comm->blocking;
    if (!newcomm || rank != -1 || (comm->rank == 0) != (uniqueId != NULL))
        res =
            tt_nccl_error(comm, ncclInvalidArgument,
                          "ncclCommGrow: a rank of comm passes newcomm, rank -1, and the id on rank 0 only");
    if (!res)
        res = tt_nccl_config(config, comm->blocking, &blocking, "ncclCommGrow");
    ncclComm_t child = res ? NULL : tt_nccl_child(comm, blocking);
    if (!res && !child)
        res = tt_nccl_error(comm, ncclSystemError, "ncclCommGrow: no memory for a communicator");
    if (!res) {
        child->init.how = TT_NCCL_GROW;
        child->init.nranks = nRanks;
        child->init.has_id = uniqueId != NULL;
        if (uniqueId)
            memcpy(child->init.id.internal, uniqueId->internal, sizeof child->init.id.internal);
        res = tt_nccl_launch(child, newcomm);
    }
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclCommGrow)
