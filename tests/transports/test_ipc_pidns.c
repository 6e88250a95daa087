/* SPDX-License-Identifier: MIT */
/*
 * Ranks of one host in separate PID namespaces (containers that share
 * /dev/shm and the GPU): each rank here runs as process 1 of a namespace of
 * its own, so both have the same PID. cuda_ipc must still tell them apart
 * from ranks of one process (which share windows by address): direct calls
 * through the device queue, on the stream model of fake_gpu.h and the
 * host-memory backend of fake_ipc.h, give the right sums. Needs root (or
 * user namespaces) for unshare(CLONE_NEWPID); skips where it is refused.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/coll.h"
#include "comm/handle.h"
#include "device/device_coll.h"
#include "device/direct_run.h"
#include "tests/fakes/fake_gpu.h"
#include "tests/fakes/fake_ipc.h"

enum { N = 3001, CALLS = 4 };

static int rank_body(int r, const tutti_unique_id_t *id)
{
    tutti_comm_t handle;
    if (tutti_comm_init(&handle, 2, r, id, NULL)) {
        fprintf(stderr, "rank %d: init: %s\n", r, tutti_comm_last_error(NULL));
        return 2;
    }
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    void *stream = tt_fake_gpu_stream();
    float *x = tt_fake_gpu_malloc(N * sizeof *x, 0);
    for (int k = 0; k < CALLS; k++) {
        if (k == 1 && tutti_barrier(handle, NULL)) /* every window is published */
            return 3;
        for (int i = 0; i < N; i++)
            x[i] = (float)(r + k + i % 7);
        tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = x, .count = N, .dtype = TUTTI_FP32};
        if (tt_coll_validate(comm, &c, "test"))
            return 4;
        c.send_on_device = c.recv_on_device = 1;
        if (tt_device_coll_enqueue(comm, &c, stream) || tt_fake_gpu.stream_sync(stream)) {
            fprintf(stderr, "rank %d: call %d: %s\n", r, k, tutti_comm_last_error(handle));
            return 5;
        }
        for (int i = 0; i < N; i++)
            if (x[i] != (float)(1 + 2 * (k + i % 7))) {
                fprintf(stderr, "rank %d: call %d: element %d is %g\n", r, k, i, (double)x[i]);
                return 6;
            }
    }
    int direct = tt_direct_runs(comm) > 0;
    if (tutti_comm_destroy(handle))
        return 7;
    if (!direct) {
        fprintf(stderr, "rank %d: no call ran directly\n", r);
        return 8;
    }
    return 0;
}

/* Rank r as process 1 of a new PID namespace; its exit status, or -1 when
 * the namespace was refused. */
static pid_t spawn(int r, const tutti_unique_id_t *id)
{
    pid_t outer = fork();
    if (outer != 0)
        return outer;
    if (unshare(CLONE_NEWPID) != 0)
        _exit(77);
    pid_t inner = fork();
    if (inner == 0)
        _exit(getpid() == 1 ? rank_body(r, id) : 9);
    int status;
    if (inner < 0 || waitpid(inner, &status, 0) != inner)
        _exit(10);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int main(void)
{
    tt_cuda_ipc_set_backend(&tt_fake_ipc);
    tt_device_set_rt(&tt_fake_gpu);
    tutti_unique_id_t id;
    if (tutti_get_unique_id(&id)) {
        printf("1..1\nnot ok 1 - unique id: %s\n", tutti_comm_last_error(NULL));
        return 1;
    }
    fflush(stdout);
    pid_t pids[2];
    int codes[2];
    for (int r = 0; r < 2; r++)
        pids[r] = spawn(r, &id);
    alarm(120);
    for (int r = 0; r < 2; r++) {
        int status;
        codes[r] = pids[r] > 0 && waitpid(pids[r], &status, 0) == pids[r] && WIFEXITED(status)
                       ? WEXITSTATUS(status)
                       : -1;
    }
    tt_fake_ipc_sweep();
    if (codes[0] == 77 || codes[1] == 77) {
        printf("1..0 # SKIP unshare(CLONE_NEWPID) refused: needs root or user namespaces\n");
        return 0;
    }
    printf("1..1\n");
    if (codes[0] || codes[1]) {
        printf("not ok 1 - ranks in separate PID namespaces (both PID 1): exit statuses %d and %d\n",
               codes[0], codes[1]);
        return 1;
    }
    printf("ok 1 - ranks in separate PID namespaces (both PID 1) run directly, each opening the other's "
           "window\n");
    return 0;
}
