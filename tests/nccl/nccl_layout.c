/* SPDX-License-Identifier: MIT */
/*
 * Prints the values and layouts of NCCL's ABI as the nccl.h it is built
 * with declares them. test-nccl-abi.sh builds it with NVIDIA's nccl.h and
 * with tutti's nccl_abi.h (through nccl/compat/nccl.h) and compares.
 */
#include <nccl.h>
#include <stddef.h>
#include <stdio.h>

#define SHOW(x) printf("%s = %lld\n", #x, (long long)(x))

int main(void)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    SHOW(NCCL_VERSION_CODE);
    SHOW(NCCL_UNIQUE_ID_BYTES);
    SHOW(sizeof(ncclUniqueId));
    SHOW(NCCL_CONFIG_UNDEF_INT);
    SHOW(NCCL_SPLIT_NOCOLOR);
    SHOW(sizeof(ncclResult_t));
    SHOW(sizeof(ncclDataType_t));
    SHOW(sizeof(ncclRedOp_t));
    SHOW(ncclSuccess), SHOW(ncclUnhandledCudaError), SHOW(ncclSystemError), SHOW(ncclInternalError);
    SHOW(ncclInvalidArgument), SHOW(ncclInvalidUsage), SHOW(ncclRemoteError), SHOW(ncclInProgress);
    SHOW(ncclNumResults);
    SHOW(ncclInt8), SHOW(ncclChar), SHOW(ncclUint8), SHOW(ncclInt32), SHOW(ncclInt), SHOW(ncclUint32);
    SHOW(ncclInt64), SHOW(ncclUint64), SHOW(ncclFloat16), SHOW(ncclHalf), SHOW(ncclFloat32), SHOW(ncclFloat);
    SHOW(ncclFloat64), SHOW(ncclDouble), SHOW(ncclBfloat16), SHOW(ncclFloat8e4m3), SHOW(ncclFloat8e5m2);
    SHOW(ncclNumTypes);
    SHOW(ncclSum), SHOW(ncclProd), SHOW(ncclMax), SHOW(ncclMin), SHOW(ncclAvg), SHOW(ncclNumOps);
    SHOW(ncclMaxRedOp);
    SHOW(ncclScalarDevice), SHOW(ncclScalarHostImmediate);
    SHOW(sizeof(ncclConfig_t));
    SHOW(offsetof(ncclConfig_t, size)), SHOW(offsetof(ncclConfig_t, magic)),
        SHOW(offsetof(ncclConfig_t, version));
    SHOW(offsetof(ncclConfig_t, blocking)), SHOW(offsetof(ncclConfig_t, cgaClusterSize));
    SHOW(offsetof(ncclConfig_t, minCTAs)), SHOW(offsetof(ncclConfig_t, maxCTAs));
    SHOW(offsetof(ncclConfig_t, netName)), SHOW(offsetof(ncclConfig_t, splitShare));
    SHOW(offsetof(ncclConfig_t, trafficClass)), SHOW(offsetof(ncclConfig_t, commName));
    SHOW(offsetof(ncclConfig_t, collnetEnable)), SHOW(offsetof(ncclConfig_t, CTAPolicy));
    SHOW(offsetof(ncclConfig_t, shrinkShare)), SHOW(offsetof(ncclConfig_t, nvlsCTAs));
    SHOW(offsetof(ncclConfig_t, nChannelsPerNetPeer)), SHOW(offsetof(ncclConfig_t, nvlinkCentricSched));
    SHOW(config.size), SHOW(config.magic), SHOW(config.version), SHOW(config.blocking);
    SHOW(sizeof(ncclSimInfo_t)), SHOW(offsetof(ncclSimInfo_t, estimatedTime));
    return 0;
}
