/* SPDX-License-Identifier: MIT */
/*
 * The NCCL calls tutti has no equivalent for: each exists, so that every
 * program built against nccl.h loads, and returns ncclInvalidUsage with
 * ncclGetLastError saying why. The device API's team queries answer for
 * what tutti has: every rank is its own load/store team.
 */
#include "nccl/nccl_int.h"

static ncclResult_t refuse(const char *call, const char *why)
{
    tt_nccl_once();
    return tt_nccl_error(NULL, ncclInvalidUsage, "%s is not offered by tutti: %s", call, why);
}

#define NO_SYMMETRIC "tutti has no symmetric memory windows (device-initiated communication)"
#define NO_DEVICE_API "tutti has no device-side API: collectives are called from the host"

TT_NCCL_EXPORT ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags)
{
    (void)comm, (void)flags;
    return refuse("ncclCommSuspend", "tutti keeps no GPU memory that could be released and restored");
}
TT_NCCL_ALIAS(ncclCommSuspend)

TT_NCCL_EXPORT ncclResult_t pncclCommResume(ncclComm_t comm)
{
    (void)comm;
    return refuse("ncclCommResume", "tutti communicators are never suspended");
}
TT_NCCL_ALIAS(ncclCommResume)

TT_NCCL_EXPORT ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    (void)comm, (void)stat, (void)value;
    return refuse("ncclCommMemStats", "tutti does not account its GPU memory per communicator");
}
TT_NCCL_ALIAS(ncclCommMemStats)

TT_NCCL_EXPORT ncclResult_t pncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t *props)
{
    (void)comm, (void)props;
    return refuse("ncclCommQueryProperties", "its properties describe NCCL's device API");
}
TT_NCCL_ALIAS(ncclCommQueryProperties)

TT_NCCL_EXPORT ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                                    ncclWindow_t *win, int winFlags)
{
    (void)comm, (void)buff, (void)size, (void)winFlags;
    if (win)
        *win = NULL;
    return refuse("ncclCommWindowRegister", NO_SYMMETRIC);
}
TT_NCCL_ALIAS(ncclCommWindowRegister)

TT_NCCL_EXPORT ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    (void)comm, (void)win;
    return refuse("ncclCommWindowDeregister", NO_SYMMETRIC);
}
TT_NCCL_ALIAS(ncclCommWindowDeregister)

TT_NCCL_EXPORT ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
    (void)comm, (void)win, (void)outUserPtr;
    return refuse("ncclWinGetUserPtr", NO_SYMMETRIC);
}
TT_NCCL_ALIAS(ncclWinGetUserPtr)

TT_NCCL_EXPORT ncclResult_t pncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype,
                                           int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx,
                                           int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream)
{
    (void)localbuff, (void)count, (void)datatype, (void)peer, (void)peerWin, (void)peerWinOffset;
    (void)sigIdx, (void)ctx, (void)flags, (void)comm, (void)stream;
    return refuse("ncclPutSignal", NO_SYMMETRIC);
}
TT_NCCL_ALIAS(ncclPutSignal)

TT_NCCL_EXPORT ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                        cudaStream_t stream)
{
    (void)peer, (void)sigIdx, (void)ctx, (void)flags, (void)comm, (void)stream;
    return refuse("ncclSignal", NO_SYMMETRIC);
}
TT_NCCL_ALIAS(ncclSignal)

TT_NCCL_EXPORT ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                                            cudaStream_t stream)
{
    (void)nDesc, (void)signalDescs, (void)comm, (void)stream;
    return refuse("ncclWaitSignal", NO_SYMMETRIC);
}
TT_NCCL_ALIAS(ncclWaitSignal)

TT_NCCL_EXPORT ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t *reqs,
                                               ncclDevComm_t *outDevComm)
{
    (void)comm, (void)reqs, (void)outDevComm;
    return refuse("ncclDevCommCreate", NO_DEVICE_API);
}
TT_NCCL_ALIAS(ncclDevCommCreate)

TT_NCCL_EXPORT ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t *devComm)
{
    (void)comm, (void)devComm;
    return refuse("ncclDevCommDestroy", NO_DEVICE_API);
}
TT_NCCL_ALIAS(ncclDevCommDestroy)

TT_NCCL_EXPORT ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                                             ncclGinBarrierHandle_t *outHandle,
                                                             ncclDevResourceRequirements_t *outReq)
{
    (void)comm, (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return refuse("ncclGinBarrierCreateRequirement", NO_DEVICE_API);
}
TT_NCCL_ALIAS(ncclGinBarrierCreateRequirement)

TT_NCCL_EXPORT ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                                             ncclLsaBarrierHandle_t *outHandle,
                                                             ncclDevResourceRequirements_t *outReq)
{
    (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return refuse("ncclLsaBarrierCreateRequirement", NO_DEVICE_API);
}
TT_NCCL_ALIAS(ncclLsaBarrierCreateRequirement)

TT_NCCL_EXPORT ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                                                        ncclDevResourceRequirements_t *outReq)
{
    (void)nBlocks, (void)nSlots, (void)outHandle, (void)outReq;
    return refuse("ncclLLA2ACreateRequirement", NO_DEVICE_API);
}
TT_NCCL_ALIAS(ncclLLA2ACreateRequirement)

/* No device all-to-all, so no slots for one. */
TT_NCCL_EXPORT int pncclLLA2ACalcSlots(int maxElts, int maxEltSize)
{
    (void)maxElts, (void)maxEltSize;
    refuse("ncclLLA2ACalcSlots", NO_DEVICE_API);
    return 0;
}
TT_NCCL_ALIAS(ncclLLA2ACalcSlots)

/* Teams of a communicator: the world, and load/store teams of one rank
 * each (tutti gives kernels no access to peers' memory); the rail team
 * is then the world. A team is (nRanks, rank, stride) over world ranks. */
static ncclTeam_t team(ncclComm_t comm, int lsa)
{
    int nranks = 1, rank = 0;
    if (tt_nccl_snapshot(comm, &(ncclResult_t){0}, &nranks, &rank, &(int){0}) && nranks > 0 && !lsa)
        return (ncclTeam_t){nranks, rank, 1};
    return (ncclTeam_t){1, 0, 1};
}

TT_NCCL_EXPORT ncclTeam_t pncclTeamWorld(ncclComm_t comm)
{
    return team(comm, 0);
}
TT_NCCL_ALIAS(ncclTeamWorld)

TT_NCCL_EXPORT ncclTeam_t pncclTeamLsa(ncclComm_t comm)
{
    return team(comm, 1);
}
TT_NCCL_ALIAS(ncclTeamLsa)

TT_NCCL_EXPORT ncclTeam_t pncclTeamRail(ncclComm_t comm)
{
    return team(comm, 0);
}
TT_NCCL_ALIAS(ncclTeamRail)

/* Rank r of team t as a world rank: t holds this rank at t.rank, and its
 * members are t.stride world ranks apart. */
static int to_world(ncclComm_t comm, ncclTeam_t t, int rank)
{
    return team(comm, 0).rank + (rank - t.rank) * t.stride;
}

TT_NCCL_EXPORT int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t t, int rank)
{
    return to_world(comm, t, rank);
}
TT_NCCL_ALIAS(ncclTeamRankToWorld)

/* ... and as a rank of this rank's load/store team: 0 for itself, out of
 * 0..0 for any other. */
TT_NCCL_EXPORT int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t t, int rank)
{
    return to_world(comm, t, rank) - team(comm, 0).rank;
}
TT_NCCL_ALIAS(ncclTeamRankToLsa)
