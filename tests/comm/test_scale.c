/* SPDX-License-Identifier: MIT */
/*
 * Many ranks on one machine, and few descriptors. make check: 210 ranks
 * (where creation once hung) form over shm, each moving little at set-up
 * and holding a few dozen descriptors after a ring all-reduce; 64 ranks
 * form under `ulimit -n 256`, and 12 under `ulimit -n 64` form or fail at
 * once naming the limit. Only with TT_SCALE_RANKS set (tests/comm/scale-ci.sh,
 * too long for make check): that many ranks run every collective right
 * over shm (tcp where its pools are full) and over tcp.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "tests/lib/harness.h"

#define SET_UP_BYTES (1 << 20) /* the most a rank may send or receive at set-up */
#define RING_FDS 40            /* the most a rank may hold after a ring all-reduce */

static int ranks(void)
{
    const char *v = getenv("TT_SCALE_RANKS");
    return v && atoi(v) > 1 ? atoi(v) : 0;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = -1; /* the directory's own */
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Rank r's part of every collective on count elements, each checked. */
static int every_collective(tutti_comm_t comm, int r, int p)
{
    enum { C = 2 };
    int *in = calloc(C * (size_t)p, sizeof(int)), *out = calloc(C * (size_t)p, sizeof(int));
    TT_FAIL_IF(!in || !out, "no memory");
    for (int i = 0; i < C * p; i++)
        in[i] = r * 1000 + i;
    TT_FAIL_IF(tutti_allgather(in, out, C, TUTTI_INT32, comm, NULL), "allgather: %s",
               tutti_comm_last_error(comm));
    for (int q = 0; q < p; q++)
        TT_FAIL_IF(out[q * C + 1] != q * 1000 + 1, "allgather: block %d wrong", q);
    TT_FAIL_IF(tutti_reduce_scatter(in, out, C, TUTTI_INT32, TUTTI_MAX, comm, NULL), "reduce_scatter: %s",
               tutti_comm_last_error(comm));
    TT_FAIL_IF(out[0] != (p - 1) * 1000 + r * C, "reduce_scatter: %d", out[0]);
    int root = p / 3;
    TT_FAIL_IF(tutti_broadcast(in, out, C, TUTTI_INT32, root, comm, NULL), "broadcast: %s",
               tutti_comm_last_error(comm));
    TT_FAIL_IF(out[1] != root * 1000 + 1, "broadcast: %d", out[1]);
    TT_FAIL_IF(tutti_reduce(in, r == root ? out : NULL, C, TUTTI_INT32, TUTTI_MIN, root, comm, NULL),
               "reduce: %s", tutti_comm_last_error(comm));
    TT_FAIL_IF(r == root && out[1] != 1, "reduce: %d", out[1]);
    TT_FAIL_IF(tutti_alltoall(in, out, C, TUTTI_INT32, comm, NULL), "alltoall: %s",
               tutti_comm_last_error(comm));
    for (int q = 0; q < p; q++)
        TT_FAIL_IF(out[q * C] != q * 1000 + r * C, "alltoall: block %d wrong", q);
    TT_FAIL_IF(tutti_barrier(comm, NULL), "barrier: %s", tutti_comm_last_error(comm));
    free(in);
    free(out);
    return 0;
}

/* Set-up's bytes, then a ring all-reduce and the descriptors it left;
 * with arg, every collective too. */
static int scale_body(tutti_comm_t handle, int r, int p, void *arg)
{
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    uint64_t out, in;
    tt_bootstrap_bytes(&comm->bs, &out, &in);
    TT_FAIL_IF(out > SET_UP_BYTES || in > SET_UP_BYTES, "rank %d sent %llu and received %llu bytes at set-up",
               r, (unsigned long long)out, (unsigned long long)in);
    long x = r, y = 0;
    TT_FAIL_IF(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, handle, NULL), "allreduce: %s",
               tutti_comm_last_error(handle));
    TT_FAIL_IF(y != (long)p * (p - 1) / 2, "allreduce: %ld", y);
    int fds = open_fds();
    TT_FAIL_IF(fds > RING_FDS, "rank %d holds %d descriptors after a ring all-reduce", r, fds);
    return arg ? every_collective(handle, r, p) : 0;
}

static void at_scale(const char *transports, int n, int every)
{
    setenv("TUTTI_TRANSPORTS", transports, 1);
    setenv("TUTTI_ALGO_ALLREDUCE", "ring", 1);
    setenv("TUTTI_TIMEOUT", "300", 1);
    tt_run_ranks(n, scale_body, every ? &every : NULL, 900);
    unsetenv("TUTTI_ALGO_ALLREDUCE");
}

START_TEST(two_hundred_ten_ranks_form_over_shm)
{
    at_scale("shm,tcp", 210, 0);
}
END_TEST

START_TEST(many_ranks_over_shm)
{
    /* Any pair the host's shm pools have no room for goes over tcp (a
     * large all-to-all connects every pair; the small one here, Bruck's,
     * 2 lg p peers a rank). */
    at_scale("shm,tcp", ranks(), 1);
}
END_TEST

START_TEST(many_ranks_over_tcp)
{
    at_scale("tcp", ranks(), 1);
}
END_TEST

static int small_body(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    return every_collective(handle, r, p);
}

/* ulimit -n sets both limits: the ranks cannot raise theirs. */
static void limit_fds(rlim_t n)
{
    struct rlimit rl = {n, n};
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

START_TEST(sixty_four_ranks_under_ulimit_256)
{
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    limit_fds(256);
    tt_run_ranks(64, small_body, NULL, 300);
}
END_TEST

typedef struct {
    int status;
    int64_t ms;
    char msg[1024];
} seen_t;

START_TEST(twelve_ranks_under_ulimit_64)
{
    enum { N = 12 };
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    limit_fds(64);
    seen_t *seen = mmap(NULL, (N + 1) * sizeof *seen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(seen, MAP_FAILED);
    tutti_unique_id_t uid;
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    pid_t pids[N];
    fflush(stderr);
    for (int r = 0; r < N; r++)
        if ((pids[r] = fork()) == 0) {
            tutti_comm_t comm;
            int64_t t0 = tt_now_ms();
            seen[r].status = tutti_comm_init(&comm, N, r, &uid, NULL);
            if (!seen[r].status) {
                float x = 1, y = 0;
                seen[r].status = tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
            }
            seen[r].ms = tt_now_ms() - t0;
            snprintf(seen[r].msg, sizeof seen[r].msg, "%s", tutti_comm_last_error(NULL));
            /* A rank that ends while a slower one still finishes the
             * all-reduce with it is a death the slower one must report:
             * none ends before all are done (seen[N] counts them). */
            __atomic_add_fetch(&seen[N].status, 1, __ATOMIC_SEQ_CST);
            for (int64_t t = tt_now_ms(); __atomic_load_n(&seen[N].status, __ATOMIC_SEQ_CST) < N &&
                                          tt_now_ms() - t < 30000;)
                usleep(1000);
            _exit(0);
        }
    for (int r = 0; r < N; r++)
        waitpid(pids[r], NULL, 0);
    /* Formed; or, where the limit cannot hold the ranks, failed within a
     * second saying so. */
    for (int r = 0; r < N; r++)
        ck_assert_msg(
            seen[r].status == TUTTI_SUCCESS ||
                (strstr(seen[r].msg, "descriptors") && strstr(seen[r].msg, "ulimit -n") && seen[r].ms < 1000),
            "rank %d: %s after %lld ms: %s", r, tutti_status_name(seen[r].status), (long long)seen[r].ms,
            seen[r].msg);
    munmap(seen, (N + 1) * sizeof *seen);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"form_210", two_hundred_ten_ranks_form_over_shm, 0, 0},
        {"ulimit_256", sixty_four_ranks_under_ulimit_256, 0, 0},
        {"ulimit_64", twelve_ranks_under_ulimit_64, 0, 0},
        {"shm", many_ranks_over_shm, 0, 0},
        {"tcp", many_ranks_over_tcp, 0, 0},
    };
    /* The heavy cases last, and only where their size is set. */
    size_t n = sizeof cases / sizeof *cases - (ranks() ? 0 : 2);
    return tt_run_cases("scale", cases, n, 1000, argc, argv);
}
