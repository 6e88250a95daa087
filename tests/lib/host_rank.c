/* SPDX-License-Identifier: MIT */
/*
 * A rank program for jobs whose ranks run on separate real hosts (the two
 * soft-RoCE guests of .ci/rxe), started by hand with the variables tutti-run
 * sets (TUTTI_RANK, TUTTI_NRANKS, TUTTI_LOCAL_RANK, TUTTI_ROOT_ADDR,
 * TUTTI_KEY).
 * usage: host-rank sweep|tuner MAXCOUNT | host-rank loop
 *   sweep  the tuner's choice, then every algorithm forced (TUTTI_ALGO, a
 *          communicator split off for each): every collective at counts
 *          from 0 to MAXCOUNT elements (all four kinds to MAXCOUNT / 4, then
 *          fp32; forced algorithms one kind a count, to MAXCOUNT / 8) in
 *          fp32, fp16, bf16 and int32, each result checked exactly, and
 *          every peer on another host reached over verbs. Rank 0 prints a
 *          line per algorithm; every rank prints its registration cache
 *          counters.
 *   tuner  the same with the tuner's choice only.
 *   loop   all-reduces of 4 MiB until one fails (a rank is killed from
 *          outside; "looping" is printed, with the pid, once the first is
 *          done), then prints how long the failing call waited and its
 *          error, and what the next call says (the communicator is aborted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/clock.h"
#include "tests/lib/exact.h"
#include "transports/verbs/verbs.h"
#include "algorithms/registry.h"

/* Any four in a row hold every dtype. */
static const struct {
    tutti_dtype_t t;
    tutti_op_t op;
} kinds[] = {{TUTTI_FP32, TUTTI_SUM},  {TUTTI_FP16, TUTTI_SUM}, {TUTTI_BF16, TUTTI_SUM},
             {TUTTI_INT32, TUTTI_SUM}, {TUTTI_FP32, TUTTI_MAX}, {TUTTI_FP16, TUTTI_AVG},
             {TUTTI_BF16, TUTTI_MAX},  {TUTTI_INT32, TUTTI_MAX}};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* Algorithm a (0: the tuner) on a communicator of its own; the number of
 * rounds checked, or -1. The tuner's choice runs every kind at every count
 * up to maxcount / 4, then one at maxcount; a forced algorithm one kind a
 * count, turning with a and the count, up to maxcount / 8 (the link is
 * slow). */
static int sweep_one(tutti_comm_t world, int a, size_t maxcount, const tt_round_bufs_t *b)
{
    const size_t counts[] = {0, 1, 7, 1000, 65537, a ? maxcount / 8 : maxcount / 4, a ? 0 : maxcount};
    const size_t ncounts = sizeof counts / sizeof counts[0] - (a ? 1 : 0);
    int r, p, rounds = 0;
    tutti_comm_rank(world, &r);
    tutti_comm_size(world, &p);
    if (a > 0)
        setenv("TUTTI_ALGO", tt_algorithms[a - 1]->name, 1);
    else
        unsetenv("TUTTI_ALGO");
    tutti_comm_t comm;
    tutti_status_t st = tutti_comm_split(world, 0, r, &comm);
    if (st) {
        fprintf(stderr, "rank %d: split for %s failed: %s\n", r, a ? tt_algorithms[a - 1]->name : "the tuner",
                tutti_comm_last_error(world));
        return -1;
    }
    int bad = 0;
    for (size_t ci = 0; ci < ncounts && !bad; ci++)
        for (size_t k = 0; k < (a || ci + 1 == ncounts ? 1u : 4u) && !bad; k++, rounds++) {
            size_t kind = (a ? (size_t)a + ci : k) % NKINDS;
            bad =
                tt_check_round(comm, r, p, counts[ci], kinds[kind].t, kinds[kind].op, (int)((ci + k) % 2), b);
        }
    if (!bad && (bad = !tt_test_on_transport(comm, &tt_verbs_ops)) != 0)
        fprintf(stderr, "rank %d: a peer on another host is not on verbs\n", r);
    if (bad) {
        tutti_comm_abort(comm);
        return -1;
    }
    return tutti_comm_destroy(comm) ? -1 : rounds;
}

static int sweep(tutti_comm_t world, size_t maxcount, int nalgos)
{
    int r, p;
    tutti_comm_rank(world, &r);
    tutti_comm_size(world, &p);
    size_t bytes = (maxcount * (size_t)p + 8) * 4; /* every kind is at most 4 bytes */
    tt_round_bufs_t b = {malloc(bytes), malloc(bytes), malloc(bytes), malloc(bytes)};
    int rc = !b.in || !b.out || !b.want || !b.term;
    for (int a = 0; a < nalgos && !rc; a++) {
        int64_t t0 = tt_now_ms();
        int rounds = sweep_one(world, a, maxcount, &b);
        rc = rounds < 0;
        if (!rc && r == 0)
            printf("sweep: %-18s %d rounds of every collective checked on %d ranks in %.1f s\n",
                   a ? tt_algorithms[a - 1]->name : "(tuner)", rounds, p, (double)(tt_now_ms() - t0) / 1e3);
        fflush(stdout);
    }
    tt_verbs_cache_stats_t cs;
    tt_verbs_cache_stats(&cs);
    printf("rank %d: registration cache: %llu hits, %llu misses, %s\n", r, (unsigned long long)cs.hits,
           (unsigned long long)cs.misses, cs.watching ? "watching released memory" : "not watching");
    free(b.in);
    free(b.out);
    free(b.want);
    free(b.term);
    return rc;
}

static int loop(tutti_comm_t comm)
{
    int r;
    tutti_comm_rank(comm, &r);
    size_t n = 1 << 20;
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    for (long iter = 0;; iter++) {
        int64_t t0 = tt_now_ms();
        tutti_status_t st = tutti_allreduce(a, b, n, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        if (iter == 0) {
            printf("rank %d (pid %d): looping\n", r, (int)getpid());
            fflush(stdout);
        }
        if (st == TUTTI_SUCCESS)
            continue;
        printf("rank %d: %s after %lld ms: %s\n", r, tutti_status_name(st), (long long)(tt_now_ms() - t0),
               tutti_comm_last_error(comm));
        st = tutti_allreduce(a, b, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        printf("rank %d: the next call: %s\n", r, tutti_status_name(st));
        tutti_comm_abort(comm);
        free(a);
        free(b);
        return 3;
    }
}

int main(int argc, char **argv)
{
    int is_sweep = argc == 3 && (strcmp(argv[1], "sweep") == 0 || strcmp(argv[1], "tuner") == 0);
    if (!is_sweep && !(argc == 2 && strcmp(argv[1], "loop") == 0)) {
        fprintf(stderr, "usage: host-rank sweep|tuner MAXCOUNT | host-rank loop\n");
        return 2;
    }
    tutti_comm_t comm;
    if (tutti_comm_init_env(&comm, NULL)) {
        fprintf(stderr, "host-rank: init failed: %s\n", tutti_comm_last_error(NULL));
        return 1;
    }
    if (!is_sweep)
        return loop(comm);
    int rc = sweep(comm, strtoull(argv[2], NULL, 10), argv[1][0] == 's' ? tt_num_algorithms + 1 : 1);
    if (rc) {
        tutti_comm_abort(comm);
        return 1;
    }
    return tutti_comm_destroy(comm) ? 1 : 0;
}
