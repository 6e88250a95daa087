/* SPDX-License-Identifier: MIT */
/*
 * libnccl.so.2's communicators through an NCCL program's eyes (built with
 * nccl.h, linked with libnccl.so.2 alone): which library answers, errors
 * and their texts, the calls tutti does not offer, non-blocking init,
 * ncclCommAbort from another thread while a collective waits, a dead peer,
 * finalize, memory and registration, NCCL_DEBUG; destroyed handles
 * that stay dead, and a forked child that cannot act for its parent.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/nccl/nccl_ranks.h"

START_TEST(the_library_is_tuttis_and_speaks_nccl_2_28)
{
    int v = 0;
    ck_assert_int_eq(ncclGetVersion(&v), ncclSuccess);
    ck_assert_int_eq(v, NCCL_VERSION_CODE); /* the header this test was built with */
    ck_assert_int_eq(v, 22809);
    Dl_info info;
    ck_assert(dladdr((void *)ncclAllReduce, &info) && info.dli_fname);
    ck_assert_msg(strstr(info.dli_fname, "libnccl.so.2") && !strstr(info.dli_fname, "/cuda"),
                  "ncclAllReduce comes from %s", info.dli_fname);
    void *weak = dlsym(RTLD_DEFAULT, "ncclAllReduce"), *real = dlsym(RTLD_DEFAULT, "pncclAllReduce");
    ck_assert_ptr_nonnull(real);
    ck_assert_ptr_eq(weak, real);
    const char *texts[ncclNumResults];
    for (int r = 0; r < ncclNumResults; r++) {
        texts[r] = ncclGetErrorString((ncclResult_t)r);
        ck_assert(texts[r] && *texts[r]);
        for (int q = 0; q < r; q++)
            ck_assert_str_ne(texts[q], texts[r]);
    }
    ck_assert_ptr_nonnull(strstr(ncclGetErrorString((ncclResult_t)99), "unknown"));
}
END_TEST

static int bad_arguments(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm;
    float x[4] = {0};
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    NCCL_FAILS(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, NULL, NULL), ncclInvalidArgument, "comm");
    NCCL_FAILS(ncclAllReduce(x, x, 4, (ncclDataType_t)99, ncclSum, comm, NULL), ncclInvalidArgument,
               "datatype");
    NCCL_FAILS(ncclAllReduce(x, x, 4, ncclFloat32, (ncclRedOp_t)77, comm, NULL), ncclInvalidArgument, "op");
    NCCL_FAILS(ncclBroadcast(x, x, 4, ncclFloat32, nranks, comm, NULL), ncclInvalidArgument, "root");
    NCCL_FAILS(ncclAllReduce(NULL, x, 4, ncclFloat32, ncclSum, comm, NULL), ncclInvalidArgument, "sendbuf");
    NCCL_FAILS(ncclSend(x, 4, ncclFloat32, nranks + 3, comm, NULL), ncclInvalidArgument, "peer");
    NCCL_FAILS(ncclRecv(x, 4, ncclFloat32, -1, comm, NULL), ncclInvalidArgument, "peer");
    NCCL_OK(ncclGroupStart()); /* the batch path checks each call too */
    NCCL_FAIL_IF(ncclRecv(x, 4, ncclFloat32, -1, comm, NULL) != ncclSuccess, "a grouped ncclRecv ran early");
    NCCL_FAILS(ncclGroupEnd(), ncclInvalidArgument, "peer");
    NCCL_FAILS(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupStart");
    NCCL_FAILS(ncclCommInitRank(&(ncclComm_t){NULL}, 2, *id, 5), ncclInvalidArgument, "rank");
    /* A failed call inside a group fails its end, which runs nothing. */
    NCCL_OK(ncclGroupStart());
    NCCL_FAIL_IF(ncclAllReduce(x, x, 4, (ncclDataType_t)42, ncclSum, comm, NULL) != ncclInvalidArgument,
                 "bad datatype in a group accepted");
    NCCL_FAIL_IF(ncclGroupEnd() != ncclInvalidArgument, "the group's end hid the failure");
    NCCL_OK(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL)); /* still in step */
    NCCL_OK(ncclCommDestroy(comm));
    NCCL_FAILS(ncclCommCount(comm, &(int){0}), ncclInvalidArgument, "not a live communicator");
    NCCL_OK(ncclCommDestroy(NULL));
    return 0;
}

START_TEST(bad_arguments_are_refused_and_named)
{
    nccl_run(2, bad_arguments, NULL, 60);
}
END_TEST

typedef ncclResult_t (*two_ptrs_t)(void *, void *);
typedef ncclResult_t (*ptr_int_t)(void *, int);
typedef ncclResult_t (*ptr_t)(void *);

/* The calls tutti does not offer exist, fail with ncclInvalidUsage and
 * say why; the team queries answer for what tutti has. */
static int unsupported(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm, out = (ncclComm_t)&out;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    NCCL_FAILS(ncclCommWindowRegister(comm, &out, 8, &(ncclWindow_t){0}, 0), ncclInvalidUsage, "window");
    NCCL_FAILS(ncclCommWindowDeregister(comm, NULL), ncclInvalidUsage, "window");
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    NCCL_OK(ncclGroupStart());
    NCCL_FAILS(ncclGroupSimulateEnd(&sim), ncclInvalidUsage, "simulate");
    static const char *const by_two[] = {"ncclWinGetUserPtr", "ncclCommQueryProperties", "ncclDevCommCreate",
                                         "ncclDevCommDestroy"};
    for (size_t i = 0; i < sizeof by_two / sizeof by_two[0]; i++) {
        two_ptrs_t f = (two_ptrs_t)dlsym(RTLD_DEFAULT, by_two[i]);
        NCCL_FAIL_IF(!f, "%s is missing", by_two[i]);
        NCCL_FAILS(f(comm, &out), ncclInvalidUsage, by_two[i]);
    }
    ncclResult_t (*grow)(ncclComm_t, int, const ncclUniqueId *, int, ncclComm_t *, ncclConfig_t *) =
        (ncclResult_t(*)(ncclComm_t, int, const ncclUniqueId *, int, ncclComm_t *, ncclConfig_t *))dlsym(
            RTLD_DEFAULT, "ncclCommGrow");
    ncclResult_t (*stats)(ncclComm_t, int, uint64_t *) =
        (ncclResult_t(*)(ncclComm_t, int, uint64_t *))dlsym(RTLD_DEFAULT, "ncclCommMemStats");
    ncclResult_t (*signal)(int, int, int, unsigned, ncclComm_t, cudaStream_t) =
        (ncclResult_t(*)(int, int, int, unsigned, ncclComm_t, cudaStream_t))dlsym(RTLD_DEFAULT, "ncclSignal");
    ncclResult_t (*wait)(int, void *, ncclComm_t, cudaStream_t) =
        (ncclResult_t(*)(int, void *, ncclComm_t, cudaStream_t))dlsym(RTLD_DEFAULT, "ncclWaitSignal");
    ncclResult_t (*put)(const void *, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int, unsigned,
                        ncclComm_t, cudaStream_t) =
        (ncclResult_t(*)(const void *, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int, unsigned,
                         ncclComm_t, cudaStream_t))dlsym(RTLD_DEFAULT, "ncclPutSignal");
    int (*slots)(int, int) = (int (*)(int, int))dlsym(RTLD_DEFAULT, "ncclLLA2ACalcSlots");
    NCCL_FAIL_IF(!grow || !stats || !signal || !wait || !put || !slots,
                 "a 2.29/2.30 or device call is missing");
    NCCL_FAILS(stats(comm, 3, &(uint64_t){0}), ncclInvalidUsage, "ncclCommMemStats");
    NCCL_FAILS(signal(0, 0, 0, 0, comm, NULL), ncclInvalidUsage, "ncclSignal");
    NCCL_FAILS(wait(0, NULL, comm, NULL), ncclInvalidUsage, "ncclWaitSignal");
    NCCL_FAILS(put(&out, 1, ncclInt8, 0, NULL, 0, 0, 0, 0, comm, NULL), ncclInvalidUsage, "ncclPutSignal");
    NCCL_FAIL_IF(slots(64, 8) != 0, "ncclLLA2ACalcSlots gave slots for a device all-to-all tutti lacks");
    static const char *const requirements[] = {
        "ncclGinBarrierCreateRequirement", "ncclLsaBarrierCreateRequirement", "ncclLLA2ACreateRequirement"};
    for (size_t i = 0; i < sizeof requirements / sizeof requirements[0]; i++)
        NCCL_FAIL_IF(!dlsym(RTLD_DEFAULT, requirements[i]), "%s is missing", requirements[i]);
    ptr_int_t suspend = (ptr_int_t)dlsym(RTLD_DEFAULT, "ncclCommSuspend");
    ptr_t resume = (ptr_t)dlsym(RTLD_DEFAULT, "ncclCommResume");
    NCCL_FAIL_IF(!suspend || !resume, "suspend/resume missing");
    NCCL_FAILS(suspend(comm, 1), ncclInvalidUsage, "ncclCommSuspend");
    NCCL_FAILS(resume(comm), ncclInvalidUsage, "ncclCommResume");
    typedef struct {
        int nRanks, rank, stride;
    } team_t;
    team_t (*world)(ncclComm_t) = (team_t(*)(ncclComm_t))dlsym(RTLD_DEFAULT, "ncclTeamWorld");
    team_t (*lsa)(ncclComm_t) = (team_t(*)(ncclComm_t))dlsym(RTLD_DEFAULT, "ncclTeamLsa");
    NCCL_FAIL_IF(!world || !lsa, "team queries missing");
    team_t w = world(comm), l = lsa(comm);
    NCCL_FAIL_IF(w.nRanks != nranks || w.rank != rank || w.stride != 1, "world team %d %d %d", w.nRanks,
                 w.rank, w.stride);
    NCCL_FAIL_IF(l.nRanks != 1 || l.rank != 0, "load/store team %d %d", l.nRanks, l.rank);
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(calls_tutti_does_not_offer_say_why)
{
    nccl_run(2, unsupported, NULL, 60);
}
END_TEST

/* Rank 1 joins late, so rank 0's non-blocking init is still running when
 * ncclCommInitRankConfig returns: ncclInProgress, then polling. */
static int nonblocking(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm;
    if (rank == 1)
        usleep(500000);
    ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, *id, rank, &config);
    NCCL_FAIL_IF(rank == 0 && res != ncclInProgress, "rank 0: init gave %s, not ncclInProgress",
                 ncclGetErrorString(res));
    NCCL_FAIL_IF(res != ncclInProgress && res != ncclSuccess, "rank %d: %s", rank, ncclGetLastError(NULL));
    int count = 0;
    NCCL_OK(ncclCommCount(comm, &count)); /* known without waiting */
    NCCL_FAIL_IF(count != nranks, "count %d", count);
    ncclResult_t state = ncclInProgress;
    int polls = 0;
    for (double until = nccl_now() + 60; state == ncclInProgress && nccl_now() < until; polls++) {
        NCCL_OK(ncclCommGetAsyncError(comm, &state));
        usleep(1000);
    }
    NCCL_FAIL_IF(state != ncclSuccess, "rank %d: init ended with %s: %s", rank, ncclGetErrorString(state),
                 ncclGetLastError(comm));
    NCCL_FAIL_IF(rank == 0 && polls < 2, "rank 0: the init was never seen in progress");
    float x[3] = {1, 2, 3};
    NCCL_OK(ncclAllReduce(x, x, 3, ncclFloat32, ncclSum, comm, NULL));
    NCCL_FAIL_IF(x[2] != 6.0f, "all-reduce after a non-blocking init: %g", x[2]);
    NCCL_FAIL_IF(ncclCommFinalize(comm) != ncclInProgress,
                 "non-blocking finalize did not return ncclInProgress");
    for (state = ncclInProgress; state == ncclInProgress;)
        NCCL_OK(ncclCommGetAsyncError(comm, &state));
    NCCL_FAIL_IF(state != ncclSuccess, "finalize: %s", ncclGetLastError(comm));
    NCCL_FAILS(ncclAllReduce(x, x, 3, ncclFloat32, ncclSum, comm, NULL), ncclInvalidUsage, "finalized");
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(non_blocking_init_returns_in_progress)
{
    nccl_run(2, nonblocking, NULL, 90);
}
END_TEST

/* Rank 1 of 2 never joins: the non-blocking init fails within
 * TUTTI_TIMEOUT, and ncclCommGetAsyncError says so. */
static int never_joined(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)nranks;
    (void)arg;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm;
    setenv("TUTTI_TIMEOUT", "1", 1);
    ncclResult_t res = ncclCommInitRankConfig(&comm, 2, *id, rank, &config);
    NCCL_FAIL_IF(res != ncclInProgress, "init gave %s", ncclGetErrorString(res));
    ncclResult_t state = ncclInProgress;
    for (double until = nccl_now() + 30; state == ncclInProgress && nccl_now() < until;)
        NCCL_OK(ncclCommGetAsyncError(comm, &state));
    NCCL_FAIL_IF(state != ncclRemoteError && state != ncclSystemError, "init ended with %s",
                 ncclGetErrorString(state));
    NCCL_FAIL_IF(!*ncclGetLastError(comm), "no text for the failed init");
    NCCL_OK(ncclCommAbort(comm));
    return 0;
}

START_TEST(a_failed_non_blocking_init_is_reported)
{
    nccl_run(1, never_joined, NULL, 60);
}
END_TEST

typedef struct {
    ncclComm_t comm;
    ncclResult_t res;
    double returned;
    char error[512];
} waiter_t;

static void *wait_in_allreduce(void *arg)
{
    waiter_t *w = arg;
    float x[4] = {1, 2, 3, 4};
    w->res = ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, w->comm, NULL);
    w->returned = nccl_now();
    snprintf(w->error, sizeof w->error, "%s", ncclGetLastError(NULL));
    return NULL;
}

/* Rank 0 waits in an all-reduce rank 1 joins 3 s later; another thread
 * aborts rank 0's communicator after 0.3 s. The wait ends at once
 * (TUTTI_TIMEOUT is 60 s here); rank 1 then sees a remote error. */
static int abort_while_waiting(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    setenv("TUTTI_TIMEOUT", "60", 1);
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    if (rank == 1) {
        sleep(3);
        float x[4] = {0};
        ncclResult_t res = ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL);
        if (res == ncclSuccess) /* rank 0's part may have left before it gave up */
            res = ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL);
        NCCL_FAIL_IF(res != ncclRemoteError, "rank 1: %s, not ncclRemoteError", ncclGetErrorString(res));
        ncclResult_t async;
        NCCL_OK(ncclCommGetAsyncError(comm, &async));
        NCCL_FAIL_IF(async != ncclRemoteError, "rank 1: async error %s", ncclGetErrorString(async));
        NCCL_OK(ncclCommAbort(comm));
        return 0;
    }
    waiter_t w = {.comm = comm};
    pthread_t t;
    NCCL_FAIL_IF(pthread_create(&t, NULL, wait_in_allreduce, &w), "pthread_create");
    usleep(300000);
    double aborted = nccl_now();
    NCCL_OK(ncclCommAbort(comm));
    pthread_join(t, NULL);
    NCCL_FAIL_IF(w.res == ncclSuccess, "rank 0: the aborted all-reduce succeeded");
    NCCL_FAIL_IF(w.returned - aborted > 1.0, "rank 0: the all-reduce returned %.1f s after the abort",
                 w.returned - aborted);
    NCCL_FAIL_IF(!strstr(w.error, "abort"), "rank 0: the waiting thread's last error: %s", w.error);
    return 0;
}

START_TEST(abort_from_another_thread_ends_a_waiting_collective)
{
    nccl_run(2, abort_while_waiting, NULL, 60);
}
END_TEST

/* Rank 1 dies after init: rank 0's collective fails with ncclRemoteError
 * naming it, and the communicator keeps reporting the failure. */
static int dead_peer(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    if (rank == 1)
        _exit(0);
    int32_t x[1000] = {0};
    ncclResult_t res = ncclAllReduce(x, x, 1000, ncclInt32, ncclSum, comm, NULL);
    NCCL_FAIL_IF(res != ncclRemoteError, "all-reduce with a dead peer: %s", ncclGetErrorString(res));
    NCCL_FAIL_IF(!strstr(ncclGetLastError(comm), "rank 1"), "last error: %s", ncclGetLastError(comm));
    ncclResult_t async;
    NCCL_OK(ncclCommGetAsyncError(comm, &async));
    NCCL_FAIL_IF(async != ncclRemoteError, "async error: %s", ncclGetErrorString(async));
    res = ncclAllReduce(x, x, 1000, ncclInt32, ncclSum, comm, NULL);
    NCCL_FAIL_IF(res != ncclRemoteError, "a later call: %s", ncclGetErrorString(res));
    NCCL_OK(ncclCommAbort(comm));
    return 0;
}

START_TEST(a_dead_peer_is_a_remote_error)
{
    nccl_run(2, dead_peer, NULL, 60);
}
END_TEST

/* Each round destroys a communicator and makes another, which the allocator
 * tends to place where the old one was: the old handle stays dead. */
static int stale_handles(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)rank;
    (void)nranks;
    (void)id;
    (void)arg;
    for (int round = 0; round < 16; round++) {
        ncclUniqueId one;
        ncclComm_t old, fresh;
        int count = -1;
        float x = 1;
        NCCL_OK(ncclGetUniqueId(&one));
        NCCL_OK(ncclCommInitRank(&old, 1, one, 0));
        NCCL_OK(ncclCommDestroy(old));
        NCCL_OK(ncclGetUniqueId(&one));
        NCCL_OK(ncclCommInitRank(&fresh, 1, one, 0));
        NCCL_FAIL_IF(ncclCommCount(old, &count) != ncclInvalidArgument,
                     "round %d: the destroyed handle works again (%s handle)", round,
                     old == fresh ? "the new communicator has the same" : "another");
        NCCL_FAILS(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, old, NULL), ncclInvalidArgument,
                   "not a live communicator");
        NCCL_FAIL_IF(ncclCommDestroy(old) != ncclInvalidArgument, "round %d: destroyed twice", round);
        NCCL_OK(ncclCommCount(fresh, &count));
        NCCL_OK(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, fresh, NULL));
        NCCL_OK(ncclCommDestroy(fresh));
    }
    return 0;
}

START_TEST(destroyed_handles_stay_dead)
{
    nccl_run(1, stale_handles, NULL, 60);
}
END_TEST

/* What rank 0's forked child does with its parent's communicator: every
 * call that would act for the parent fails naming the fork, and destroying
 * its copy leaves the parent's job alone; exits 0 when all is so. */
static int child_of_rank0(ncclComm_t comm, int end_with_abort)
{
    float x = 1;
    ncclComm_t part = NULL;
    NCCL_FAIL_IF(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL) == ncclSuccess,
                 "the child's all-reduce ran");
    NCCL_FAIL_IF(!strstr(ncclGetLastError(comm), "fork"), "child: last error: %s", ncclGetLastError(comm));
    NCCL_FAIL_IF(ncclCommSplit(comm, 0, 0, &part, NULL) == ncclSuccess, "the child's split ran");
    NCCL_FAIL_IF(!strstr(ncclGetLastError(comm), "fork"), "child: split: %s", ncclGetLastError(comm));
    NCCL_OK(end_with_abort ? ncclCommAbort(comm) : ncclCommDestroy(comm));
    return 0;
}

static int fork_then_collect(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    if (rank == 0) {
        fflush(stderr);
        pid_t child = fork();
        if (child == 0)
            _exit(child_of_rank0(comm, arg != NULL));
        int status;
        NCCL_FAIL_IF(waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status),
                     "the forked child's calls were not refused (status %d)", status);
    }
    for (int i = 0; i < 3; i++) {
        float x = (float)(rank + 1);
        NCCL_OK(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL));
        NCCL_FAIL_IF(x != (float)(nranks * (nranks + 1) / 2), "rank %d: all-reduce %d gave %g", rank, i,
                     (double)x);
    }
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

/* Rank 0 forks while its non-blocking init is still running: the child
 * has no copy of the init's thread, so its calls must fail at once instead
 * of waiting for an init that never ends there (the alarm ends a hang). */
static int fork_during_init(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm;
    if (rank == 1)
        usleep(500000); /* rank 0's init waits for this one */
    ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, *id, rank, &config);
    NCCL_FAIL_IF(res != ncclInProgress && res != ncclSuccess, "rank %d: %s", rank, ncclGetLastError(NULL));
    if (rank == 0) {
        fflush(stderr);
        pid_t child = fork();
        if (child == 0) {
            alarm(20);
            float x = 1;
            int bad = ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL) != ncclInvalidArgument ||
                      !strstr(ncclGetLastError(NULL), "fork") || ncclCommDestroy(comm) != ncclSuccess;
            _exit(bad);
        }
        int status;
        NCCL_FAIL_IF(waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status),
                     "the child forked during the init: status %d", status);
    }
    ncclResult_t state = ncclInProgress;
    for (double until = nccl_now() + 60; state == ncclInProgress && nccl_now() < until;)
        NCCL_OK(ncclCommGetAsyncError(comm, &state));
    NCCL_FAIL_IF(state != ncclSuccess, "rank %d: init: %s", rank, ncclGetLastError(comm));
    float x = (float)(rank + 1);
    NCCL_OK(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL));
    NCCL_FAIL_IF(x != 3.0f, "rank %d: all-reduce gave %g", rank, (double)x);
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(a_forked_child_cannot_act_for_its_parent)
{
    static int abort_it = 1;
    setenv("TUTTI_TIMEOUT", "10", 1);
    nccl_run(2, fork_then_collect, NULL, 60);
    nccl_run(3, fork_then_collect, &abort_it, 60);
    nccl_run(2, fork_during_init, NULL, 60);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* ncclMemAlloc gives memory collectives take (host memory without a GPU);
 * registration hands out handles and changes nothing. */
static int memory(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    int device;
    NCCL_OK(ncclCommCuDevice(comm, &device));
    float *buf;
    NCCL_OK(ncclMemAlloc((void **)&buf, 1000 * sizeof *buf));
    NCCL_FAIL_IF((uintptr_t)buf % 4096, "ncclMemAlloc: %p is not page-aligned", (void *)buf);
    void *handle;
    NCCL_OK(ncclCommRegister(comm, buf, 1000 * sizeof *buf, &handle));
    if (device < 0) { /* host memory: usable here */
        for (int i = 0; i < 1000; i++)
            buf[i] = (float)(rank + i);
        NCCL_OK(ncclAllReduce(buf, buf, 1000, ncclFloat32, ncclMax, comm, NULL));
        NCCL_FAIL_IF(buf[999] != (float)(nranks - 1 + 999), "max: %g", buf[999]);
    }
    NCCL_OK(ncclCommDeregister(comm, handle));
    NCCL_OK(ncclMemFree(buf));
    int not_ours;
    NCCL_FAILS(ncclMemFree(&not_ours), ncclInvalidArgument, "ncclMemAlloc");
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(memory_and_registration)
{
    nccl_run(2, memory, NULL, 60);
}
END_TEST

/* What a fresh process prints on stderr when it first calls the library
 * with NCCL_DEBUG=nccl_debug (and TUTTI_LOG=tutti_log when given). */
static int log_of(const char *nccl_debug, const char *subsys, const char *tutti_log, char *out, size_t len)
{
    char path[] = "/tmp/tutti-nccl-log-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        setenv("NCCL_DEBUG", nccl_debug, 1);
        subsys ? setenv("NCCL_DEBUG_SUBSYS", subsys, 1) : unsetenv("NCCL_DEBUG_SUBSYS");
        tutti_log ? setenv("TUTTI_LOG", tutti_log, 1) : unsetenv("TUTTI_LOG");
        unsetenv("TUTTI_LOG_SUBSYS");
        int v;
        _exit(ncclGetVersion(&v) == ncclSuccess ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(nccl_debug_sets_tuttis_log)
{
    char out[4096];
    const char *line = "libnccl.so.2 from tutti";
    ck_assert_int_eq(log_of("INFO", NULL, NULL, out, sizeof out), 0);
    ck_assert_msg(strstr(out, line), "NCCL_DEBUG=INFO printed: %s", out);
    ck_assert_int_eq(log_of("VERSION", NULL, NULL, out, sizeof out), 0);
    ck_assert_msg(strstr(out, line), "NCCL_DEBUG=VERSION printed: %s", out);
    ck_assert_int_eq(log_of("WARN", NULL, NULL, out, sizeof out), 0);
    ck_assert_msg(!strstr(out, line), "NCCL_DEBUG=WARN printed: %s", out);
    ck_assert_int_eq(log_of("INFO", "COLL,NET", NULL, out, sizeof out), 0);
    ck_assert_msg(!strstr(out, line), "NCCL_DEBUG_SUBSYS=COLL,NET printed the init line: %s", out);
    ck_assert_int_eq(log_of("INFO", "INIT", NULL, out, sizeof out), 0);
    ck_assert_msg(strstr(out, line), "NCCL_DEBUG_SUBSYS=INIT printed: %s", out);
    ck_assert_int_eq(log_of("INFO", NULL, "warn", out, sizeof out), 0);
    ck_assert_msg(!strstr(out, line), "TUTTI_LOG=warn did not win over NCCL_DEBUG=INFO: %s", out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nccl-life");
    TCase *tc = tcase_create("nccl-life");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, the_library_is_tuttis_and_speaks_nccl_2_28);
    tcase_add_test(tc, bad_arguments_are_refused_and_named);
    tcase_add_test(tc, calls_tutti_does_not_offer_say_why);
    tcase_add_test(tc, non_blocking_init_returns_in_progress);
    tcase_add_test(tc, a_failed_non_blocking_init_is_reported);
    tcase_add_test(tc, abort_from_another_thread_ends_a_waiting_collective);
    tcase_add_test(tc, a_dead_peer_is_a_remote_error);
    tcase_add_test(tc, memory_and_registration);
    tcase_add_test(tc, nccl_debug_sets_tuttis_log);
    tcase_add_test(tc, destroyed_handles_stay_dead);
    tcase_add_test(tc, a_forked_child_cannot_act_for_its_parent);
    suite_add_tcase(s, tc);
    return nccl_run_suite(s);
}
