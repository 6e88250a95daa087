/* SPDX-License-Identifier: MIT */
/*
 * Forked ranks for the tests of libnccl.so.2. These programs are built with
 * nccl.h and linked with libnccl.so.2 alone (no libtutti), as an NCCL
 * program is, so they bring their own small runner.
 */
#ifndef TT_NCCL_RANKS_H
#define TT_NCCL_RANKS_H

#include <check.h>
#include <nccl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One rank: 0 on success. id was made by the parent with ncclGetUniqueId. */
typedef int (*nccl_body_t)(int rank, int nranks, const ncclUniqueId *id, void *arg);

/* In a body: prints and fails when cond holds. */
#define NCCL_FAIL_IF(cond, ...)                                                                              \
    do {                                                                                                     \
        if (cond) {                                                                                          \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            return 1;                                                                                        \
        }                                                                                                    \
    } while (0)

/* A call that must succeed. */
#define NCCL_OK(call)                                                                                        \
    do {                                                                                                     \
        ncclResult_t res_ = (call);                                                                          \
        NCCL_FAIL_IF(res_ != ncclSuccess, "%s:%d: %s: %s: %s", __FILE__, __LINE__, #call,                    \
                     ncclGetErrorString(res_), ncclGetLastError(NULL));                                      \
    } while (0)

/* A call that must fail with want, its text naming what. */
#define NCCL_FAILS(call, want, what)                                                                         \
    do {                                                                                                     \
        ncclResult_t res_ = (call);                                                                          \
        NCCL_FAIL_IF(res_ != (want), "%s gave %s, not %s: %s", #call, ncclGetErrorString(res_),              \
                     ncclGetErrorString(want), ncclGetLastError(NULL));                                      \
        NCCL_FAIL_IF(!strstr(ncclGetLastError(NULL), what), "%s: last error \"%s\" does not say \"%s\"",     \
                     #call, ncclGetLastError(NULL), what);                                                   \
    } while (0)

static inline double nccl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs body as nranks forked processes; fails the test unless all exit 0
 * within timeout_s (the late ones are killed), but the ranks of bit mask
 * killed, which must end by SIGKILL. */
static inline void nccl_run_killing(int nranks, nccl_body_t body, void *arg, int timeout_s,
                                    unsigned long killed)
{
    ncclUniqueId id;
    ck_assert_int_eq(ncclGetUniqueId(&id), ncclSuccess);
    pid_t pids[64];
    int codes[64];
    ck_assert_int_le(nranks, 64);
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < nranks; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            _exit(body(r, nranks, &id, arg));
        codes[r] = -1;
    }
    double start = nccl_now();
    for (int left = nranks; left > 0;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        for (int r = 0; pid > 0 && r < nranks; r++)
            if (pids[r] == pid) {
                codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                left--;
            }
        if (pid > 0)
            continue;
        if (nccl_now() - start > timeout_s)
            for (int r = 0; r < nranks; r++)
                if (codes[r] < 0)
                    kill(pids[r], SIGKILL);
        usleep(2000);
    }
    for (int r = 0; r < nranks; r++)
        ck_assert_msg(codes[r] == (killed >> r & 1 ? 128 + SIGKILL : 0), "rank %d of %d exited with %d", r,
                      nranks, codes[r]);
}

static inline void nccl_run(int nranks, nccl_body_t body, void *arg, int timeout_s)
{
    nccl_run_killing(nranks, body, arg, timeout_s, 0);
}

/* Runs a suite with TAP output on stdout. */
static inline int nccl_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

#endif
