/* SPDX-License-Identifier: MIT */
/*
 * The asking rank's half of a verbs pair's set-up cut short, against the
 * libibverbs stand-in, two ranks on two simulated hosts. Rank 1 asks for
 * the pair (it sends first, and rank 0 makes no call that names it): its
 * main thread dials rank 0's set-up socket inside the send and runs its
 * half of the set-up there (transports/verbs/verbs_connect.c); rank 0's
 * accepting thread runs the other half. Rank 0 stops (SIGSTOP) at one of
 * three points of its half: before accepting the set-up socket, having
 * read the hello, and with its queue pairs up (rank 1's write over the
 * pair then waits for an acknowledgement that rank 0's stopped NIC never
 * sends). Rank 1's send thus waits on the socket or on its completion
 * queue, under a TUTTI_TIMEOUT of 20 s. Then either
 *
 * - another thread of rank 1 aborts: the send returns TUTTI_ERR_ABORTED
 *   and the abort returns within 2 s, not when TUTTI_TIMEOUT ends the
 *   set-up; no thread and no descriptor of the communicator is left; or
 * - rank 0 is killed there: the send fails within 2 s naming rank 0 as
 *   dead (not as if their ports could not reach each other), not when
 *   the NIC's retries give up on it; destroy returns at once, and nothing
 *   is left.
 *
 * And once a pair's set-up is over, rank 1's set-up socket is closed; an
 * abort from another thread must not shut down the descriptor that took
 * its number meanwhile (another thread's new socket).
 *
 * The points are fixed by wrappers around the transport's functions (the
 * suite links with --wrap), so the suite needs no luck with timing.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/admit.h"
#include "core/clock.h"
#include "tests/lib/harness.h"
#include "tests/transports/verbs_stall.h"
#include "transports/verbs/verbs.h"

#define TIMEOUT_S 20   /* TUTTI_TIMEOUT: what a wait that ignores the abort would take */
#define PROMPT_MS 2000 /* what ending the send, the abort or the destroy may take */
#define ANSWERER 0
#define ASKER 1

enum { AT_ACCEPT = 1, AT_HELLO, AT_QPS_UP, NOWHERE };
enum { END_ABORT = 1, END_KILL, END_AFTER_CLOSE };

/* What the forked ranks share with the test. */
typedef struct {
    int where;          /* where the answerer stops */
    int end;            /* how the asker's set-up is cut short */
    char fds[4096];     /* the asker's descriptors before its send */
    char tasks[1024];   /* ... and its threads */
    pid_t answerer;     /* its pid */
    int armed;          /* the answerer will stop where it should */
    int stopping;       /* the answerer is about to stop itself */
    int asking;         /* the asker's half of the set-up began */
    int probing;        /* ... and it made its write over the pair */
    int decoy;          /* END_AFTER_CLOSE: the set-up socket's number is another's now */
    int done;           /* the asker is done: the answerer may close */
    int64_t cut_at_ms;  /* when the asker's other thread aborted, or killed the answerer */
    int64_t abort_took; /* how long that abort took */
} share_t;

static share_t *S;
static int armed;               /* this process stops at this point (the answerer's) */
static __thread int in_setup;   /* this thread is the answerer's, in a pair's set-up */
static __thread int qps_up;     /* ... and has brought its queue pairs up */
static int setup_fd = -1;       /* END_AFTER_CLOSE: the asker's set-up socket */
static int decoy[2] = {-1, -1}; /* ... and what took its number once closed, with its other end */

static void stop_here(int point)
{
    if (__atomic_load_n(&armed, __ATOMIC_SEQ_CST) != point)
        return;
    __atomic_store_n(&armed, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&S->stopping, 1, __ATOMIC_SEQ_CST);
    raise(SIGSTOP);
}

/* Waits until the answerer stopped itself; 0 once it is. */
static int wait_stopped(void)
{
    return tt_stall_wait_stopped(&S->stopping, &S->answerer);
}

int __real_tt_admit_try(tt_admit_t *a, int listen_ready, int *fd, tt_hello_t *hello);
int __wrap_tt_admit_try(tt_admit_t *a, int listen_ready, int *fd, tt_hello_t *hello);
tutti_status_t __real_tt_verbs_exchange(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline);
tutti_status_t __wrap_tt_verbs_exchange(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline);
int __real_tt_verbs_conn_connect(tt_verbs_conn_t *c, const tt_verbs_port_info_t *peer,
                                 const tt_verbs_wire_t *theirs, const tt_verbs_wire_t *mine);
int __wrap_tt_verbs_conn_connect(tt_verbs_conn_t *c, const tt_verbs_port_info_t *peer,
                                 const tt_verbs_wire_t *theirs, const tt_verbs_wire_t *mine);
tutti_status_t __real_tt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ms);
tutti_status_t __wrap_tt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ms);
int __real_tt_verbs_post_write(tt_verbs_conn_t *c, int qi, const void *local, uint32_t lkey, size_t len,
                               uint64_t remote, uint32_t rkey, uint32_t imm, uint64_t wr_kind, int ch);
int __wrap_tt_verbs_post_write(tt_verbs_conn_t *c, int qi, const void *local, uint32_t lkey, size_t len,
                               uint64_t remote, uint32_t rkey, uint32_t imm, uint64_t wr_kind, int ch);
int __real_close(int fd);
int __wrap_close(int fd);

/* The answerer's accepting thread, with the asker's connection queued on
 * the set-up socket (the asker sends its hello and waits). */
int __wrap_tt_admit_try(tt_admit_t *a, int listen_ready, int *fd, tt_hello_t *hello)
{
    if (listen_ready && strcmp(a->what, "verbs") == 0)
        stop_here(AT_ACCEPT);
    return __real_tt_admit_try(a, listen_ready, fd, hello);
}

/* Both halves of the set-up start here: the asker's once its hello is
 * sent, the accepting thread's once it took that hello. */
tutti_status_t __wrap_tt_verbs_exchange(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline)
{
    if (ctx->env->rank == ASKER) {
        __atomic_store_n(&setup_fd, fd, __ATOMIC_SEQ_CST);
        __atomic_store_n(&S->asking, 1, __ATOMIC_SEQ_CST);
    } else {
        in_setup = 1;
        stop_here(AT_HELLO);
    }
    tutti_status_t st = __real_tt_verbs_exchange(ctx, fd, c, deadline);
    in_setup = qps_up = 0;
    return st;
}

/* The answerer's queue pairs are up: its next read on the set-up socket
 * comes once it told the asker so. */
int __wrap_tt_verbs_conn_connect(tt_verbs_conn_t *c, const tt_verbs_port_info_t *peer,
                                 const tt_verbs_wire_t *theirs, const tt_verbs_wire_t *mine)
{
    int err = __real_tt_verbs_conn_connect(c, peer, theirs, mine);
    qps_up = in_setup && !err;
    return err;
}

tutti_status_t __wrap_tt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ms)
{
    if (in_setup && qps_up)
        stop_here(AT_QPS_UP);
    return __real_tt_sock_recv_all(fd, buf, len, deadline_ms);
}

/* The asker's write over the pair once both sides' queue pairs are up. It
 * is made once the answerer is stopped, whose NIC could else acknowledge
 * it first. */
int __wrap_tt_verbs_post_write(tt_verbs_conn_t *c, int qi, const void *local, uint32_t lkey, size_t len,
                               uint64_t remote, uint32_t rkey, uint32_t imm, uint64_t wr_kind, int ch)
{
    if (wr_kind == TT_WR_PROBE && c->ctx->env->rank == ASKER && S->where == AT_QPS_UP &&
        !__atomic_load_n(&S->probing, __ATOMIC_SEQ_CST)) {
        wait_stopped();
        __atomic_store_n(&S->probing, 1, __ATOMIC_SEQ_CST);
    }
    return __real_tt_verbs_post_write(c, qi, local, lkey, len, remote, rkey, imm, wr_kind, ch);
}

/* The asker's close of its set-up socket. In END_AFTER_CLOSE another
 * descriptor takes its number at once (as a socket another thread opens
 * would): the abort that comes later must leave it alone. */
int __wrap_close(int fd)
{
    if (!S || S->end != END_AFTER_CLOSE || fd < 0 || fd != __atomic_load_n(&setup_fd, __ATOMIC_SEQ_CST))
        return __real_close(fd);
    __atomic_store_n(&setup_fd, -1, __ATOMIC_SEQ_CST);
    int rc = __real_close(fd);
    if (tt_stall_decoy(fd, &decoy[1]))
        return rc;
    decoy[0] = fd;
    __atomic_store_n(&S->decoy, 1, __ATOMIC_SEQ_CST);
    return rc;
}

/* The asker's other thread: once its main thread waits where the case
 * wants it, aborts the communicator or kills the answerer. */
static void *cut_later(void *arg)
{
    if (S->where == NOWHERE)
        tt_stall_wait_flag(&S->decoy);
    else if (!wait_stopped())
        tt_stall_wait_flag(S->where == AT_QPS_UP ? &S->probing : &S->asking);
    usleep(200000); /* the main thread waits */
    int64_t t0 = tt_now_ms();
    __atomic_store_n(&S->cut_at_ms, t0, __ATOMIC_SEQ_CST);
    if (S->end == END_KILL) {
        kill(S->answerer, SIGKILL);
        return NULL;
    }
    tutti_comm_abort(arg);
    __atomic_store_n(&S->abort_took, tt_now_ms() - t0, __ATOMIC_SEQ_CST);
    return NULL;
}

/* The pair came up and the set-up socket's number is another's now: the
 * abort, which ended a receive nobody answers, must not have shut that one
 * down. */
static int after_close(tutti_comm_t comm, tutti_status_t sent, tutti_status_t got)
{
    TT_FAIL_IF(sent != TUTTI_SUCCESS, "rank 1: its send gave %s: %s", tutti_status_name(sent),
               tutti_comm_last_error(comm));
    TT_FAIL_IF(decoy[0] < 0, "rank 1: its set-up socket was never closed");
    TT_FAIL_IF(got != TUTTI_ERR_ABORTED, "rank 1: its receive gave %s, not TUTTI_ERR_ABORTED",
               tutti_status_name(got));
    char b;
    int shut = recv(decoy[0], &b, 1, MSG_DONTWAIT) == 0;
    __real_close(decoy[0]);
    __real_close(decoy[1]);
    TT_FAIL_IF(shut, "rank 1: tutti_comm_abort shut down a descriptor that had taken the number of the "
                     "set-up socket closed before");
    return 0;
}

/* The send ended by the abort or the kill: soon, and saying why. */
static int check_cut(tutti_comm_t comm, tutti_status_t st, int64_t took)
{
    const char *msg = tutti_comm_last_error(comm);
    TT_FAIL_IF(!__atomic_load_n(&S->stopping, __ATOMIC_SEQ_CST),
               "rank 1: rank 0 never stopped where it should");
    if (S->end == END_ABORT) {
        TT_FAIL_IF(st != TUTTI_ERR_ABORTED || took > PROMPT_MS || S->abort_took > PROMPT_MS,
                   "rank 1: its send gave %s %lld ms after another thread's abort began, which took %lld ms "
                   "(TUTTI_TIMEOUT %d s): %s",
                   tutti_status_name(st), (long long)took, (long long)S->abort_took, TIMEOUT_S, msg);
        return 0;
    }
    TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED || !tt_named_as_dead(msg, ANSWERER) || took > PROMPT_MS,
               "rank 1: its send gave %s %lld ms after rank 0 was killed (TUTTI_TIMEOUT %d s): %s",
               tutti_status_name(st), (long long)took, TIMEOUT_S, msg);
    int64_t t0 = tt_now_ms();
    tutti_comm_destroy(comm);
    took = tt_now_ms() - t0;
    TT_FAIL_IF(took > PROMPT_MS, "rank 1: tutti_comm_destroy took %lld ms", (long long)took);
    return 0;
}

static int asker(tutti_comm_t comm)
{
    tt_stall_holdings(S->fds, sizeof S->fds, S->tasks, sizeof S->tasks);
    TT_FAIL_IF(!tt_stall_wait_flag(&S->armed), "rank 1: rank 0 never got ready");
    pthread_t th;
    pthread_create(&th, NULL, cut_later, comm);
    float x[4] = {1, 2, 3, 4};
    tutti_status_t st = tutti_send(x, 4, TUTTI_FP32, ANSWERER, comm, NULL), got = TUTTI_SUCCESS;
    int64_t took = tt_now_ms() - __atomic_load_n(&S->cut_at_ms, __ATOMIC_SEQ_CST);
    if (S->end == END_AFTER_CLOSE && st == TUTTI_SUCCESS)
        got = tutti_recv(x, 4, TUTTI_FP32, ANSWERER, comm, NULL); /* nobody answers: the abort ends it */
    pthread_join(th, NULL);
    if (S->end == END_ABORT)
        kill(S->answerer, SIGCONT);
    __atomic_store_n(&S->done, 1, __ATOMIC_SEQ_CST);
    int rc = S->end == END_AFTER_CLOSE ? after_close(comm, st, got) : check_cut(comm, st, took);
    return rc ? rc : tt_stall_nothing_left(1, S->fds, S->tasks) ? 1 : -1;
}

/* Rank 0 makes no call that names rank 1 before rank 1 is done: it would
 * ask for the pair too, and the lower rank's request would stand. */
static int answerer(tutti_comm_t comm)
{
    S->answerer = getpid();
    __atomic_store_n(&armed, S->where, __ATOMIC_SEQ_CST);
    __atomic_store_n(&S->armed, 1, __ATOMIC_SEQ_CST);
    if (S->end == END_AFTER_CLOSE && tt_stall_wait_flag(&S->asking)) {
        float x[4];
        tutti_status_t st = tutti_recv(x, 4, TUTTI_FP32, ASKER, comm, NULL);
        TT_FAIL_IF(st != TUTTI_SUCCESS || x[3] != 4, "rank 0: its receive gave %s: %s", tutti_status_name(st),
                   tutti_comm_last_error(comm));
    }
    tt_stall_wait_flag(&S->done);
    tutti_comm_abort(comm);
    return -1;
}

static int body(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    return r == ASKER ? asker(comm) : answerer(comm);
}

static void run(int where, int end)
{
    if (!getenv("TT_FAKEVERBS"))
        tt_skip("TT_FAKEVERBS names no libibverbs stand-in (make check sets it)");
    S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(S, MAP_FAILED);
    memset(S, 0, sizeof *S);
    S->where = where;
    S->end = end;
    tt_fabric_begin("vask");
    setenv("TUTTI_TRANSPORTS", "verbs,tcp", 1);
    setenv("TUTTI_IB_HCA", "fakeib0", 1);
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", TIMEOUT_S);
    setenv("TUTTI_TIMEOUT", timeout, 1);
    /* Resumed, the answerer finds rank 1's queue pairs gone in ~70 ms
     * (4.096 us x 2^12 a retry, 4 tries); a killed peer is left to the
     * NIC's default retries, about 8 s, which the send must not wait for. */
    if (end != END_KILL) {
        setenv("TUTTI_IB_TIMEOUT", "12", 1);
        setenv("TUTTI_IB_RETRY_CNT", "3", 1);
    }
    tt_set_ranks_per_node(1);
    pid_t pids[2];
    int codes[2];
    tt_spawn_ranks(2, body, NULL, pids);
    int timed_out = tt_wait_ranks(2, pids, codes, 3 * TIMEOUT_S);
    tt_set_ranks_per_node(0);
    tt_fabric_end();
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_IB_TIMEOUT");
    unsetenv("TUTTI_IB_RETRY_CNT");
    ck_assert_msg(!timed_out, "the ranks did not end");
    ck_assert_msg(codes[ASKER] == 0, "rank 1 exited %d", codes[ASKER]);
    ck_assert_msg(codes[ANSWERER] == (end == END_KILL ? 128 + SIGKILL : 0), "rank 0 exited %d",
                  codes[ANSWERER]);
    munmap(S, sizeof *S);
}

START_TEST(abort_while_the_answerer_stopped_before_accepting)
{
    run(AT_ACCEPT, END_ABORT);
}
END_TEST

START_TEST(abort_while_the_answerer_stopped_after_the_hello)
{
    run(AT_HELLO, END_ABORT);
}
END_TEST

START_TEST(abort_while_the_answerer_stopped_with_its_queue_pairs_up)
{
    run(AT_QPS_UP, END_ABORT);
}
END_TEST

START_TEST(answerer_killed_before_accepting)
{
    run(AT_ACCEPT, END_KILL);
}
END_TEST

START_TEST(answerer_killed_after_the_hello)
{
    run(AT_HELLO, END_KILL);
}
END_TEST

START_TEST(answerer_killed_with_its_queue_pairs_up)
{
    run(AT_QPS_UP, END_KILL);
}
END_TEST

START_TEST(abort_after_a_set_up_shuts_down_no_other_descriptor)
{
    run(NOWHERE, END_AFTER_CLOSE);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"abort_while_the_answerer_stopped_before_accepting",
         abort_while_the_answerer_stopped_before_accepting, 0, 0},
        {"abort_while_the_answerer_stopped_after_the_hello", abort_while_the_answerer_stopped_after_the_hello,
         0, 0},
        {"abort_while_the_answerer_stopped_with_its_queue_pairs_up",
         abort_while_the_answerer_stopped_with_its_queue_pairs_up, 0, 0},
        {"answerer_killed_before_accepting", answerer_killed_before_accepting, 0, 0},
        {"answerer_killed_after_the_hello", answerer_killed_after_the_hello, 0, 0},
        {"answerer_killed_with_its_queue_pairs_up", answerer_killed_with_its_queue_pairs_up, 0, 0},
        {"abort_after_a_set_up_shuts_down_no_other_descriptor",
         abort_after_a_set_up_shuts_down_no_other_descriptor, 0, 0},
    };
    return tt_run_cases("verbs_ask", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
