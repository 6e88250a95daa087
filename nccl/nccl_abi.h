/* SPDX-License-Identifier: MIT */
/*
 * The binary interface of NCCL 2.28 (and the calls NCCL 2.29/2.30 added),
 * as libnccl.so.2 from tutti offers it: type layouts, enum values and
 * function signatures are NCCL's, so programs built with NVIDIA's nccl.h
 * run on this library unchanged. This header is tutti's own; programs
 * keep using nccl.h. Every function exists twice, pncclX (the definition)
 * and ncclX (a weak alias of it), for profilers that interpose ncclX.
 */
#ifndef TT_NCCL_ABI_H
#define TT_NCCL_ABI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The NCCL API level implemented: 2.28.9 (NCCL_VERSION(2, 28, 9)). */
#define TT_NCCL_MAJOR 2
#define TT_NCCL_MINOR 28
#define TT_NCCL_PATCH 9
#define TT_NCCL_VERSION_CODE (TT_NCCL_MAJOR * 10000 + TT_NCCL_MINOR * 100 + TT_NCCL_PATCH)

/* CUDA's stream handle, spelled as the CUDA runtime spells it. */
typedef struct CUstream_st *cudaStream_t;

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_SHRINK_DEFAULT 0x00 /* shrink the parent communicator */
#define NCCL_SHRINK_ABORT 0x01   /* first stop the parent's calls in progress, then shrink */
#define NCCL_REVOKE_DEFAULT 0x00 /* the only ncclCommRevoke flag */
#define NCCL_CONFIG_MAGIC 0xcafebeefu

/* ncclConfig_t as NCCL 2.28 lays it out; later versions append fields,
 * which size tells apart. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5, /* the first operator ncclRedOpCreate* hands out */
    ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* The device API's host-side types (nccl_device/core.h). */
typedef struct {
    int nRanks, rank, stride;
} ncclTeam_t;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

/* NCCL 2.29/2.30 additions. */
typedef enum {
    ncclStatGpuMemSuspend = 0,
    ncclStatGpuMemSuspended = 1,
    ncclStatGpuMemPersist = 2,
    ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;
typedef struct {
    int opCnt, peer, sigIdx, ctx;
} ncclWaitSignalDesc_t;
typedef struct ncclCommProperties ncclCommProperties_t;

#define TT_NCCL_EXPORT __attribute__((visibility("default")))
/* Declares pncclX and ncclX with one signature. */
#define TT_NCCL_DECLARE(ret, name, params)                                                                   \
    TT_NCCL_EXPORT ret name params;                                                                          \
    TT_NCCL_EXPORT ret p##name params;

/* Memory, version, ids. */
TT_NCCL_DECLARE(ncclResult_t, ncclMemAlloc, (void **ptr, size_t size))
TT_NCCL_DECLARE(ncclResult_t, ncclMemFree, (void *ptr))
TT_NCCL_DECLARE(ncclResult_t, ncclGetVersion, (int *version))
TT_NCCL_DECLARE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId))

/* Communicators. */
TT_NCCL_DECLARE(ncclResult_t, ncclCommInitRankConfig,
                (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config))
TT_NCCL_DECLARE(ncclResult_t, ncclCommInitRank,
                (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))
TT_NCCL_DECLARE(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int *devlist))
TT_NCCL_DECLARE(ncclResult_t, ncclCommInitRankScalable,
                (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                 ncclConfig_t *config))
TT_NCCL_DECLARE(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))
TT_NCCL_DECLARE(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
TT_NCCL_DECLARE(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
TT_NCCL_DECLARE(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))
TT_NCCL_DECLARE(ncclResult_t, ncclCommSplit,
                (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config))
TT_NCCL_DECLARE(ncclResult_t, ncclCommShrink,
                (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                 ncclConfig_t *config, int shrinkFlags))
TT_NCCL_DECLARE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError))
TT_NCCL_DECLARE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int *count))
TT_NCCL_DECLARE(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int *device))
TT_NCCL_DECLARE(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int *rank))
TT_NCCL_DECLARE(ncclResult_t, ncclCommRegister,
                (const ncclComm_t comm, void *buff, size_t size, void **handle))
TT_NCCL_DECLARE(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void *handle))
TT_NCCL_DECLARE(ncclResult_t, ncclCommWindowRegister,
                (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags))
TT_NCCL_DECLARE(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))

/* Errors and logging. */
TT_NCCL_DECLARE(const char *, ncclGetErrorString, (ncclResult_t result))
TT_NCCL_DECLARE(const char *, ncclGetLastError, (ncclComm_t comm))
TT_NCCL_DECLARE(void, ncclResetDebugInit, (void))
TT_NCCL_DECLARE(void, ncclResetDebugInitInternal, (void))

/* Reduction operators. */
TT_NCCL_DECLARE(ncclResult_t, ncclRedOpCreatePreMulSum,
                (ncclRedOp_t * op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                 ncclComm_t comm))
TT_NCCL_DECLARE(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))

/* Collectives and point-to-point. */
TT_NCCL_DECLARE(ncclResult_t, ncclReduce,
                (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                 int root, ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclBcast,
                (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                 cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclBroadcast,
                (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                 ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclAllReduce,
                (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                 ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclReduceScatter,
                (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclAllGather,
                (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                 ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclAlltoAll,
                (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                 cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclGather,
                (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                 ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclScatter,
                (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                 ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclSend,
                (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                 cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclRecv,
                (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                 cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclGroupStart, (void))
TT_NCCL_DECLARE(ncclResult_t, ncclGroupEnd, (void))
TT_NCCL_DECLARE(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))

/* The device API's host calls (nccl_device/). */
TT_NCCL_DECLARE(ncclResult_t, ncclDevCommCreate,
                (ncclComm_t comm, const ncclDevCommRequirements_t *reqs, ncclDevComm_t *outDevComm))
TT_NCCL_DECLARE(ncclResult_t, ncclDevCommDestroy, (ncclComm_t comm, const ncclDevComm_t *devComm))
TT_NCCL_DECLARE(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm))
TT_NCCL_DECLARE(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm))
TT_NCCL_DECLARE(ncclTeam_t, ncclTeamRail, (ncclComm_t comm))
TT_NCCL_DECLARE(int, ncclTeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank))
TT_NCCL_DECLARE(int, ncclTeamRankToLsa, (ncclComm_t comm, ncclTeam_t team, int rank))
TT_NCCL_DECLARE(ncclResult_t, ncclGinBarrierCreateRequirement,
                (ncclComm_t comm, ncclTeam_t team, int nBarriers, ncclGinBarrierHandle_t *outHandle,
                 ncclDevResourceRequirements_t *outReq))
TT_NCCL_DECLARE(ncclResult_t, ncclLsaBarrierCreateRequirement,
                (ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t *outHandle,
                 ncclDevResourceRequirements_t *outReq))
TT_NCCL_DECLARE(int, ncclLLA2ACalcSlots, (int maxElts, int maxEltSize))
TT_NCCL_DECLARE(ncclResult_t, ncclLLA2ACreateRequirement,
                (int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                 ncclDevResourceRequirements_t *outReq))

/* NCCL 2.29/2.30 calls. */
TT_NCCL_DECLARE(ncclResult_t, ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId *uniqueId))
TT_NCCL_DECLARE(ncclResult_t, ncclCommGrow,
                (ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                 ncclConfig_t *config))
TT_NCCL_DECLARE(ncclResult_t, ncclCommSuspend, (ncclComm_t comm, int flags))
TT_NCCL_DECLARE(ncclResult_t, ncclCommResume, (ncclComm_t comm))
TT_NCCL_DECLARE(ncclResult_t, ncclCommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value))
TT_NCCL_DECLARE(ncclResult_t, ncclWinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void **outUserPtr))
TT_NCCL_DECLARE(ncclResult_t, ncclPutSignal,
                (const void *localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                 size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                 cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclSignal,
                (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclWaitSignal,
                (int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream))
TT_NCCL_DECLARE(ncclResult_t, ncclCommQueryProperties, (ncclComm_t comm, ncclCommProperties_t *props))

/* After the definition of pncclX: makes ncclX its weak alias. */
#define TT_NCCL_ALIAS(name) extern __typeof__(p##name) name __attribute__((weak, alias("p" #name)));

#ifdef __cplusplus
}
#endif

#endif
