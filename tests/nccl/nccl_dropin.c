/* SPDX-License-Identifier: MIT */
/*
 * An NCCL program as users have them: built with nccl.h and linked with
 * NVIDIA's libnccl.so.2. test-nccl-abi.sh runs it with tutti's library
 * preloaded (LD_PRELOAD), which must then serve every call: two forked
 * ranks all-reduce host buffers, and the program prints which file
 * answered ncclAllReduce.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int rank_main(int rank, ncclUniqueId id)
{
    ncclComm_t comm;
    float x[3] = {1.0f + (float)rank, 2.0f, 3.0f};
    ncclResult_t res = ncclCommInitRank(&comm, 2, id, rank);
    if (res == ncclSuccess)
        res = ncclAllReduce(x, x, 3, ncclFloat32, ncclSum, comm, NULL);
    if (res == ncclSuccess)
        res = ncclCommDestroy(comm);
    if (res != ncclSuccess) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, ncclGetErrorString(res), ncclGetLastError(NULL));
        return 1;
    }
    return x[0] == 3.0f && x[1] == 4.0f && x[2] == 6.0f ? 0 : 2;
}

int main(void)
{
    Dl_info info;
    if (!dladdr((void *)ncclAllReduce, &info) || !info.dli_fname)
        return 3;
    printf("ncclAllReduce from %s\n", info.dli_fname);
    fflush(stdout);
    ncclUniqueId id;
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess) {
        fprintf(stderr, "ncclGetUniqueId: %s: %s\n", ncclGetErrorString(res), ncclGetLastError(NULL));
        return 1;
    }
    pid_t pids[2];
    for (int r = 0; r < 2; r++)
        if ((pids[r] = fork()) == 0)
            _exit(rank_main(r, id));
    int ok = 1;
    for (int r = 0; r < 2; r++) {
        int status;
        waitpid(pids[r], &status, 0);
        ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    printf("all-reduce on 2 ranks: %s\n", ok ? "correct" : "failed");
    return ok ? 0 : 1;
}
