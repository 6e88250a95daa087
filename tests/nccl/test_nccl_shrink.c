/* SPDX-License-Identifier: MIT */
/*
 * Surviving a lost rank through libnccl.so.2, from a program built with
 * nccl.h (NVIDIA's where the toolkit has it): ncclCommRevoke ends the
 * calls waiting on every rank and leaves the communicator quiescent;
 * ncclCommShrink after kill -9, blocking and not, with the default and the
 * abort flags, its argument checks, a rank dying during it; and
 * ncclCommGrow (NCCL 2.29's, declared here when nccl.h is 2.28's) bringing
 * a replacement in.
 */
#define _GNU_SOURCE
#include <check.h>
#include <nccl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/nccl/nccl_ranks.h"

#if NCCL_VERSION_CODE < 22900 /* NCCL 2.29's grow, which libnccl.so.2 exports */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
                          ncclComm_t *newcomm, ncclConfig_t *config);
#endif

#define PROMPT_S 5.0 /* every wait here ends well within this; TUTTI_TIMEOUT is 20 s */
#define N 1000

/* A sum over comm's ranks, checked. */
static int sums_right(ncclComm_t comm)
{
    int r, p;
    NCCL_OK(ncclCommUserRank(comm, &r));
    NCCL_OK(ncclCommCount(comm, &p));
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(r + i);
    NCCL_OK(ncclAllReduce(x, x, N, ncclFloat32, ncclSum, comm, NULL));
    for (int i = 0; i < N; i++)
        NCCL_FAIL_IF(x[i] != (float)(p * (p - 1) / 2 + p * i), "rank %d of %d: x[%d] = %g", r, p, i, x[i]);
    return 0;
}

/* Waits for a non-blocking call on comm to settle; its outcome. */
static ncclResult_t settle(ncclComm_t comm)
{
    ncclResult_t state = ncclInProgress;
    double t0 = nccl_now();
    while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress &&
           nccl_now() - t0 < 60)
        usleep(1000);
    return state;
}

static void *revoke_later(void *arg)
{
    usleep(300000);
    ncclCommRevoke((ncclComm_t)arg, NCCL_REVOKE_DEFAULT);
    return NULL;
}

/* Rank 2 revokes from a thread while ranks 0 and 1 wait for it in an all-reduce. */
static int revoke_while_waiting(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm;
    float x[N] = {0};
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    if (rank == 2) {
        pthread_t t;
        pthread_create(&t, NULL, revoke_later, comm);
        pthread_join(t, NULL);
        NCCL_FAILS(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclInvalidArgument, "revoked already");
        NCCL_FAILS(ncclAllReduce(x, x, N, ncclFloat32, ncclSum, comm, NULL), ncclInvalidUsage, "revoked");
    } else {
        double t0 = nccl_now();
        NCCL_FAILS(ncclAllReduce(x, x, N, ncclFloat32, ncclSum, comm, NULL), ncclInvalidUsage,
                   "rank 2 revoked");
        NCCL_FAIL_IF(nccl_now() - t0 > PROMPT_S, "rank %d waited %.1f s", rank, nccl_now() - t0);
        NCCL_FAILS(ncclCommRevoke(comm, 7), ncclInvalidArgument, "revokeFlags");
        NCCL_OK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    }
    ncclResult_t state = ncclInternalError;
    NCCL_OK(ncclCommGetAsyncError(comm, &state));
    NCCL_FAIL_IF(state != ncclSuccess, "rank %d: a revoked communicator reports %s", rank,
                 ncclGetErrorString(state));
    NCCL_FAILS(ncclCommFinalize(comm), ncclInvalidArgument, "revoked");
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(revoke_ends_the_calls_of_every_rank)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    nccl_run(3, revoke_while_waiting, NULL, 60);
}
END_TEST

/* How a case shrinks: flags, and the config's blocking (-1: no config);
 * and the ranks past their first all-reduce (shared). */
typedef struct {
    int flags, blocking;
    int *past_first;
} how_t;

/* Rank 2 of 4 dies after the first all-reduce; the others shrink it away. */
static int shrink_after_kill(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    const how_t *how = arg;
    ncclComm_t comm, small = NULL;
    float x[N] = {0};
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    NCCL_OK(ncclAllReduce(x, x, N, ncclFloat32, ncclSum, comm, NULL));
    __atomic_add_fetch(how->past_first, 1, __ATOMIC_SEQ_CST);
    while (rank == 2 && __atomic_load_n(how->past_first, __ATOMIC_SEQ_CST) < nranks)
        usleep(1000); /* so that a survivor's revocation cannot end a first all-reduce */
    if (rank == 2)
        raise(SIGKILL);
    /* The dead rank is named, unless a faster survivor's NCCL_SHRINK_ABORT revoked the communicator first. */
    ncclResult_t lost = ncclAllReduce(x, x, N, ncclFloat32, ncclSum, comm, NULL);
    NCCL_FAIL_IF(!(lost == ncclRemoteError && strstr(ncclGetLastError(NULL), "rank 2")) &&
                     !(lost == ncclInvalidUsage && strstr(ncclGetLastError(NULL), "revoked")),
                 "rank %d: the all-reduce after the kill gave %s: %s", rank, ncclGetErrorString(lost),
                 ncclGetLastError(NULL));
    int gone[1] = {2}, self[1] = {rank};
    NCCL_FAILS(ncclCommShrink(comm, NULL, 1, &small, NULL, 0), ncclInvalidArgument, "excludeRanksList");
    NCCL_FAILS(ncclCommShrink(comm, gone, 0, &small, NULL, 0), ncclInvalidArgument, "excludeRanksCount");
    NCCL_FAILS(ncclCommShrink(comm, self, 1, &small, NULL, 0), ncclInvalidArgument, "excludeRanksList");
    NCCL_FAILS(ncclCommShrink(comm, gone, 1, &small, NULL, 4), ncclInvalidArgument, "shrinkFlags");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = how->blocking;
    double t0 = nccl_now();
    ncclResult_t res = ncclCommShrink(comm, gone, 1, &small, how->blocking < 0 ? NULL : &config, how->flags);
    if (how->blocking == 0) {
        NCCL_FAIL_IF(res != ncclInProgress || !small, "rank %d: a non-blocking shrink gave %s", rank,
                     ncclGetErrorString(res));
        res = settle(small);
    }
    NCCL_FAIL_IF(res != ncclSuccess, "rank %d: shrink: %s: %s", rank, ncclGetErrorString(res),
                 ncclGetLastError(NULL));
    NCCL_FAIL_IF(nccl_now() - t0 > PROMPT_S, "rank %d: the shrink took %.1f s", rank, nccl_now() - t0);
    int r, p;
    NCCL_OK(ncclCommUserRank(small, &r));
    NCCL_OK(ncclCommCount(small, &p));
    NCCL_FAIL_IF(p != 3 || r != rank - (rank > 2), "rank %d is rank %d of %d", rank, r, p);
    if (sums_right(small))
        return 1;
    NCCL_OK(ncclCommDestroy(small));
    NCCL_OK(ncclCommAbort(comm));
    return 0;
}

/* 0: blocking, the abort flag; 1: non-blocking config, the default flag;
 * 2: no config, so the parent's (blocking). */
START_TEST(shrink_after_kill_9)
{
    static const how_t cases[] = {
        {NCCL_SHRINK_ABORT, 1, NULL}, {NCCL_SHRINK_DEFAULT, 0, NULL}, {NCCL_SHRINK_DEFAULT, -1, NULL}};
    how_t how = cases[_i];
    how.past_first = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(how.past_first, MAP_FAILED);
    *how.past_first = 0;
    setenv("TUTTI_TIMEOUT", "20", 1);
    nccl_run_killing(4, shrink_after_kill, &how, 60, 1ul << 2);
    munmap(how.past_first, sizeof(int));
}
END_TEST

/* Rank 3 dies while the others shrink away rank 1, which it was to survive. */
static int dies_during_shrink(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm, small = NULL;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    if (rank == 1)
        return 0; /* left out alive: it calls nothing more */
    if (rank == 3) {
        usleep(300000);
        raise(SIGKILL);
    }
    int gone[1] = {1};
    double t0 = nccl_now();
    NCCL_FAILS(ncclCommShrink(comm, gone, 1, &small, NULL, NCCL_SHRINK_DEFAULT), ncclRemoteError,
               "rank 3 died");
    NCCL_FAIL_IF(nccl_now() - t0 > PROMPT_S, "rank %d: the failed shrink took %.1f s", rank, nccl_now() - t0);
    NCCL_OK(ncclCommAbort(comm));
    return 0;
}

START_TEST(a_rank_dying_during_the_shrink_fails_it)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    nccl_run_killing(4, dies_during_shrink, NULL, 60, 1ul << 3);
}
END_TEST

/* Three ranks grow to four: rank 0's id reaches the newcomer, forked with
 * the others, through shared memory. */
typedef struct {
    int set;
    ncclUniqueId id;
} shared_id_t;

static int grow_by_one(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    shared_id_t *sh = arg;
    ncclComm_t comm = NULL, big = NULL;
    if (rank == 3) { /* the newcomer */
        while (!__atomic_load_n(&sh->set, __ATOMIC_SEQ_CST))
            usleep(1000);
        ncclUniqueId grow_id = sh->id;
        NCCL_OK(ncclCommGrow(NULL, 4, &grow_id, 3, &big, NULL));
    } else {
        NCCL_OK(ncclCommInitRank(&comm, nranks - 1, *id, rank));
        ncclUniqueId grow_id;
        if (rank == 0) {
            NCCL_OK(ncclCommGetUniqueId(comm, &grow_id));
            sh->id = grow_id;
            __atomic_store_n(&sh->set, 1, __ATOMIC_SEQ_CST);
        } else {
            NCCL_FAILS(ncclCommGetUniqueId(comm, &grow_id), ncclInvalidUsage, "rank 0");
        }
        NCCL_FAILS(ncclCommGrow(comm, 4, rank == 0 ? NULL : &grow_id, -1, &big, NULL), ncclInvalidArgument,
                   "rank 0");
        NCCL_OK(ncclCommGrow(comm, 4, rank == 0 ? &grow_id : NULL, -1, &big, NULL));
    }
    int r;
    NCCL_OK(ncclCommUserRank(big, &r));
    NCCL_FAIL_IF(r != rank, "rank %d is rank %d after the grow", rank, r);
    if (sums_right(big))
        return 1;
    NCCL_OK(ncclCommDestroy(big));
    if (comm)
        NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(a_replacement_joins_with_grow)
{
    shared_id_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    sh->set = 0;
    setenv("TUTTI_TIMEOUT", "20", 1);
    nccl_run(4, grow_by_one, sh, 60);
    munmap(sh, sizeof *sh);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nccl-shrink");
    TCase *tc = tcase_create("nccl-shrink");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, revoke_ends_the_calls_of_every_rank);
    tcase_add_loop_test(tc, shrink_after_kill_9, 0, 3);
    tcase_add_test(tc, a_rank_dying_during_the_shrink_fails_it);
    tcase_add_test(tc, a_replacement_joins_with_grow);
    suite_add_tcase(s, tc);
    return nccl_run_suite(s);
}
