/* SPDX-License-Identifier: MIT */
/*
 * ncclCommSplit through an NCCL program's eyes (built with nccl.h, linked
 * with libnccl.so.2 alone): colors, keys and no color, blocking and not;
 * splitShare, whose child takes its parent's connections.
 */
#include <check.h>
#include <dirent.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "tests/nccl/nccl_ranks.h"

/* Colors rank % 2, keys reversing the order; the last of five ranks joins
 * no communicator. Blocking and non-blocking. */
static int split(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm, child[2];
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    int color = rank == nranks - 1 ? NCCL_SPLIT_NOCOLOR : rank % 2;
    NCCL_OK(ncclCommSplit(comm, color, -rank, &child[0], NULL));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t res = ncclCommSplit(comm, color, -rank, &child[1], &config);
    NCCL_FAIL_IF(res != ncclSuccess && res != ncclInProgress, "non-blocking split: %s",
                 ncclGetLastError(NULL));
    if (color == NCCL_SPLIT_NOCOLOR) {
        NCCL_FAIL_IF(child[0] || child[1], "no color, but a communicator");
        NCCL_OK(ncclCommDestroy(comm));
        return 0;
    }
    for (ncclResult_t state = ncclInProgress; state == ncclInProgress;)
        NCCL_OK(ncclCommGetAsyncError(child[1], &state));
    int members[8], n = 0;
    for (int q = nranks - 2; q >= 0; q--) /* keys -q: the highest rank first */
        if (q % 2 == color)
            members[n++] = q;
    for (int k = 0; k < 2; k++) {
        int count, me, sum = rank;
        NCCL_OK(ncclCommCount(child[k], &count));
        NCCL_OK(ncclCommUserRank(child[k], &me));
        NCCL_FAIL_IF(count != n || members[me] != rank, "split %d: rank %d is %d of %d", k, rank, me, count);
        NCCL_OK(ncclAllReduce(&sum, &sum, 1, ncclInt32, ncclSum, child[k], NULL));
        int want = 0;
        for (int i = 0; i < n; i++)
            want += members[i];
        NCCL_FAIL_IF(sum != want, "split %d: sum %d, want %d", k, sum, want);
    }
    NCCL_OK(ncclCommDestroy(child[0]));
    NCCL_OK(ncclCommDestroy(child[1]));
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}

START_TEST(split_by_color_and_key)
{
    nccl_run(5, split, NULL, 120);
}
END_TEST

/* Descriptors this process holds. */
static int fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Descriptors a child's first ring all-reduce opens: over tcp with 8
 * channels, 8 sockets per new pair. */
static int first_allreduce_fds(ncclComm_t comm, int rank, int nranks)
{
    int sum = rank, before = fds_open();
    if (ncclAllReduce(&sum, &sum, 1, ncclInt32, ncclSum, comm, NULL) != ncclSuccess ||
        sum != nranks * (nranks - 1) / 2)
        return -1000;
    return fds_open() - before;
}

/* splitShare (and NCCL's variable for it): the child's pairs take the
 * parent's connections and open no socket; without it, each opens 8. */
static int split_share(int rank, int nranks, const ncclUniqueId *id, void *arg)
{
    (void)arg;
    ncclComm_t comm, shared, own;
    NCCL_OK(ncclCommInitRank(&comm, nranks, *id, rank));
    NCCL_FAIL_IF(first_allreduce_fds(comm, rank, nranks) < 8, "rank %d: the parent opened no sockets", rank);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.splitShare = 1;
    NCCL_OK(ncclCommSplit(comm, 0, rank, &shared, &config));
    int opened = first_allreduce_fds(shared, rank, nranks);
    /* <= 2: the bootstrap may close or open a descriptor of its own meanwhile. */
    NCCL_FAIL_IF(opened > 2, "rank %d: the shared child's all-reduce opened %d", rank, opened);
    NCCL_OK(ncclCommSplit(comm, 0, rank, &own, NULL));
    opened = first_allreduce_fds(own, rank, nranks);
    NCCL_FAIL_IF(opened < 8, "rank %d: the child of its own opened %d", rank, opened);
    NCCL_OK(ncclCommDestroy(comm)); /* the shared child's connections outlive it */
    opened = first_allreduce_fds(shared, rank, nranks);
    NCCL_FAIL_IF(opened > 2, "rank %d: the shared child after its parent opened %d", rank, opened);
    NCCL_OK(ncclCommDestroy(own));
    NCCL_OK(ncclCommDestroy(shared));
    return 0;
}

START_TEST(split_share_takes_the_parents_connections)
{
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    setenv("TUTTI_PIPELINE", "8", 1);
    setenv("TUTTI_ALGO_ALLREDUCE", "ring", 1);
    nccl_run(3, split_share, NULL, 120);
    unsetenv("TUTTI_ALGO_ALLREDUCE");
    unsetenv("TUTTI_PIPELINE");
    unsetenv("TUTTI_TRANSPORTS");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nccl-split");
    TCase *tc = tcase_create("nccl-split");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, split_by_color_and_key);
    tcase_add_test(tc, split_share_takes_the_parents_connections);
    suite_add_tcase(s, tc);
    return nccl_run_suite(s);
}
