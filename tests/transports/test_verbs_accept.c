/* SPDX-License-Identifier: MIT */
/*
 * A communicator closed while its verbs accepting thread is in the middle
 * of a pair's set-up, against the libibverbs stand-in, two ranks on two
 * simulated hosts. Rank 0 asks for the pair (its main thread dials and
 * runs its half); rank 1 answers, so its accepting thread runs the other
 * half (transports/verbs/verbs_accept.c). Rank 0 stops itself (SIGSTOP)
 * at one of three points of its half: with the set-up socket connected
 * but no hello sent, with the hello sent (rank 1's thread waits on the
 * socket), and with its queue pairs up and said so (rank 1's thread then
 * waits on its completion queue for the write each side makes over the
 * pair, which a stopped peer's NIC never acknowledges). Then rank 1 either
 *
 * - aborts from another thread while its main thread waits for the pair
 *   in a receive: the receive returns TUTTI_ERR_ABORTED and the abort
 *   returns at once, not when TUTTI_TIMEOUT ends the set-up; no thread and
 *   no descriptor of the communicator is left; rank 0, resumed, fails its
 *   send naming rank 1; or
 * - destroys it (a collective call): it returns TUTTI_ERR_TIMEOUT once
 *   TUTTI_TIMEOUT passed, not later; rank 0, resumed past its own
 *   deadline, fails naming rank 1, and not as if their ports could not
 *   reach each other; or
 * - sees rank 0 killed (SIGKILL) there: its receive fails naming rank 0
 *   as dead, and its destroy returns at once, not when the NIC's retries
 *   give up on the dead peer.
 *
 * And once a pair's set-up is over, the accepting thread's set-up socket
 * is closed; an abort that comes then must not shut down the descriptor
 * that took its number meanwhile (another thread's new socket).
 *
 * The points are fixed by wrappers around the transport's functions (the
 * suite links with --wrap), so the suite needs no luck with timing.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "tests/lib/harness.h"
#include "tests/transports/verbs_stall.h"
#include "transports/verbs/verbs.h"

#define TIMEOUT_S 20   /* TUTTI_TIMEOUT: what a wait that ignores the close would take */
#define SHORT_S 2      /* ... where a destroy waits for it: for the stopped rank to call destroy */
#define PROMPT_MS 3000 /* what closing may take on a loaded machine */
#define ASKER 0
#define ANSWERER 1

enum { AT_CONNECTED = 1, AT_HELLO, AT_QPS_UP, NOWHERE };
enum { END_ABORT = 1, END_DESTROY, END_KILL, END_AFTER_CLOSE };

/* What the forked ranks share with the test. */
typedef struct {
    int where;        /* where the asker stops */
    int end;          /* how the answerer ends */
    char fds[4096];   /* the answerer's descriptors before its pair's set-up */
    char tasks[1024]; /* ... and its threads */
    pid_t asker;      /* its pid */
    int stopping;     /* the asker is about to stop itself */
    int serving;      /* the answerer's accepting thread took the asker's hello */
    int probing;      /* ... and made its write over the pair */
    int64_t abort_ms; /* how long the answerer's abort took */
    int decoy;        /* END_AFTER_CLOSE: the set-up socket's number is another's now */
    int decoy_shut;   /* ... and the close shut that one down */
} share_t;

static share_t *S;
static int armed;            /* this process stops at this point (the asker's) */
static __thread int in_join; /* this thread is in the verbs transport's join */
static __thread int qps_up;  /* ... and has brought its queue pairs up */
static int served_fd = -1;   /* END_AFTER_CLOSE: the set-up socket the accepting thread serves */
static tt_verbs_ctx_t *served_ctx;

static void stop_here(int point)
{
    if (armed != point)
        return;
    armed = 0;
    __atomic_store_n(&S->stopping, 1, __ATOMIC_SEQ_CST);
    raise(SIGSTOP);
}

/* Waits until the asker stopped itself; 0 once it is. */
static int wait_stopped(void)
{
    return tt_stall_wait_stopped(&S->stopping, &S->asker);
}

tutti_status_t __real_tt_verbs_join(void *ctx, int peer, int offered, const void *theirs, size_t len,
                                    void **conn);
tutti_status_t __wrap_tt_verbs_join(void *ctx, int peer, int offered, const void *theirs, size_t len,
                                    void **conn);
tutti_status_t __real_tt_sock_connect_watched(const tt_sockaddr_t *addr, int64_t deadline_ms,
                                              tutti_status_t (*watch)(void *arg), void *arg, int *fd);
tutti_status_t __wrap_tt_sock_connect_watched(const tt_sockaddr_t *addr, int64_t deadline_ms,
                                              tutti_status_t (*watch)(void *arg), void *arg, int *fd);
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

/* The transport's join: the asker's dial runs inside it. */
tutti_status_t __wrap_tt_verbs_join(void *ctx, int peer, int offered, const void *theirs, size_t len,
                                    void **conn)
{
    in_join = 1;
    tutti_status_t st = __real_tt_verbs_join(ctx, peer, offered, theirs, len, conn);
    in_join = qps_up = 0;
    return st;
}

/* The asker's set-up socket is connected; its hello is not sent yet. */
tutti_status_t __wrap_tt_sock_connect_watched(const tt_sockaddr_t *addr, int64_t deadline_ms,
                                              tutti_status_t (*watch)(void *arg), void *arg, int *fd)
{
    tutti_status_t st = __real_tt_sock_connect_watched(addr, deadline_ms, watch, arg, fd);
    if (!st && in_join)
        stop_here(AT_CONNECTED);
    return st;
}

/* Both halves of the set-up start here: the asker's once its hello is
 * sent, the accepting thread's once it took that hello. */
tutti_status_t __wrap_tt_verbs_exchange(tt_verbs_ctx_t *ctx, int fd, tt_verbs_conn_t *c, int64_t deadline)
{
    if (ctx->env->rank == ANSWERER) {
        served_ctx = ctx;
        __atomic_store_n(&served_fd, fd, __ATOMIC_SEQ_CST);
        __atomic_store_n(&S->serving, 1, __ATOMIC_SEQ_CST);
    }
    stop_here(AT_HELLO);
    return __real_tt_verbs_exchange(ctx, fd, c, deadline);
}

/* The asker's queue pairs are up: its next read on the set-up socket
 * waits for the peer's to be, and it has told the peer that its are. */
int __wrap_tt_verbs_conn_connect(tt_verbs_conn_t *c, const tt_verbs_port_info_t *peer,
                                 const tt_verbs_wire_t *theirs, const tt_verbs_wire_t *mine)
{
    int err = __real_tt_verbs_conn_connect(c, peer, theirs, mine);
    qps_up = in_join && !err;
    return err;
}

tutti_status_t __wrap_tt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ms)
{
    if (in_join && qps_up)
        stop_here(AT_QPS_UP);
    return __real_tt_sock_recv_all(fd, buf, len, deadline_ms);
}

/* The write each side makes over a pair once both sides' queue pairs are
 * up; the answerer's waits for the asker's NIC to acknowledge it. It is
 * made once the asker is stopped, whose NIC could else acknowledge it
 * first. */
int __wrap_tt_verbs_post_write(tt_verbs_conn_t *c, int qi, const void *local, uint32_t lkey, size_t len,
                               uint64_t remote, uint32_t rkey, uint32_t imm, uint64_t wr_kind, int ch)
{
    if (wr_kind == TT_WR_PROBE && c->ctx->env->rank == ANSWERER && S->where == AT_QPS_UP) {
        wait_stopped();
        __atomic_store_n(&S->probing, 1, __ATOMIC_SEQ_CST);
    }
    return __real_tt_verbs_post_write(c, qi, local, lkey, len, remote, rkey, imm, wr_kind, ch);
}

/* The accepting thread's close of the set-up socket. In END_AFTER_CLOSE
 * another descriptor takes its number at once (as a socket another thread
 * opens would), and the thread waits until the communicator closes: that
 * close must leave the new descriptor alone. */
int __real_close(int fd);
int __wrap_close(int fd);
int __wrap_close(int fd)
{
    if (!S || S->end != END_AFTER_CLOSE || fd < 0 || fd != __atomic_load_n(&served_fd, __ATOMIC_SEQ_CST))
        return __real_close(fd);
    __atomic_store_n(&served_fd, -1, __ATOMIC_SEQ_CST);
    int rc = __real_close(fd), peer;
    if (tt_stall_decoy(fd, &peer))
        return rc;
    __atomic_store_n(&S->decoy, 1, __ATOMIC_SEQ_CST);
    for (int t = 0; t < TT_STALL_WAIT_MS && !atomic_load(&served_ctx->stopping); t++)
        usleep(1000);
    pthread_mutex_lock(&served_ctx->lock); /* the close's look at the set-up socket is over */
    pthread_mutex_unlock(&served_ctx->lock);
    char b;
    __atomic_store_n(&S->decoy_shut, recv(fd, &b, 1, MSG_DONTWAIT) == 0, __ATOMIC_SEQ_CST);
    __real_close(fd);
    __real_close(peer);
    return rc;
}

static int asker(tutti_comm_t comm)
{
    S->asker = getpid();
    armed = S->where;
    float x[4] = {1, 2, 3, 4};
    tutti_status_t st = tutti_send(x, 4, TUTTI_FP32, ANSWERER, comm, NULL);
    if (S->end == END_AFTER_CLOSE) { /* sent or not, as rank 1's abort came */
        tutti_comm_abort(comm);
        return -1;
    }
    /* Resumed once rank 1 is gone: an error that names it, and does not
     * blame the ports. */
    const char *msg = tutti_comm_last_error(comm);
    TT_FAIL_IF(st == TUTTI_SUCCESS || st == TUTTI_ERR_CONFIG || !strstr(msg, "rank 1"),
               "rank 0: its send to rank 1, which %s, gave %s: %s",
               S->end == END_ABORT ? "aborted" : "destroyed the communicator", tutti_status_name(st), msg);
    tutti_comm_abort(comm);
    return -1;
}

static void *abort_later(void *arg)
{
    usleep(200000); /* the main thread waits in its receive */
    int64_t t0 = tt_now_ms();
    tutti_comm_abort(arg);
    __atomic_store_n(&S->abort_ms, tt_now_ms() - t0, __ATOMIC_SEQ_CST);
    return NULL;
}

/* The pair came up, and the set-up socket's number is another's now: the
 * close must not shut that one down. */
static int after_close(tutti_comm_t comm)
{
    TT_FAIL_IF(!tt_stall_wait_flag(&S->decoy), "rank 1: its thread never closed the set-up socket");
    tutti_comm_abort(comm);
    TT_FAIL_IF(S->decoy_shut, "rank 1: tutti_comm_abort shut down a descriptor that had taken the number of "
                              "the set-up socket closed before");
    return tt_stall_nothing_left(1, S->fds, S->tasks) ? 1 : -1;
}

static int answerer(tutti_comm_t comm)
{
    tt_stall_holdings(S->fds, sizeof S->fds, S->tasks, sizeof S->tasks);
    if (S->end == END_AFTER_CLOSE)
        return after_close(comm);
    TT_FAIL_IF(wait_stopped(), "rank 1: rank 0 did not stop where it should (%s)",
               S->stopping ? "it was to stop there" : "it never got there");
    TT_FAIL_IF(S->where == AT_HELLO && !tt_stall_wait_flag(&S->serving),
               "rank 1: its thread never took the hello");
    TT_FAIL_IF(S->where == AT_QPS_UP && !tt_stall_wait_flag(&S->probing),
               "rank 1: its thread never made its write");
    float x[4];
    tutti_status_t st;
    if (S->end == END_KILL) {
        kill(S->asker, SIGKILL);
        st = tutti_recv(x, 4, TUTTI_FP32, ASKER, comm, NULL);
        const char *msg = tutti_comm_last_error(comm);
        TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED || !tt_named_as_dead(msg, ASKER),
                   "rank 1: its receive from rank 0, killed, gave %s: %s", tutti_status_name(st), msg);
        int64_t t0 = tt_now_ms();
        tutti_comm_destroy(comm);
        int64_t took = tt_now_ms() - t0;
        TT_FAIL_IF(took > PROMPT_MS, "rank 1: tutti_comm_destroy took %lld ms", (long long)took);
        return tt_stall_nothing_left(1, S->fds, S->tasks) ? 1 : -1;
    }
    if (S->end == END_DESTROY) { /* collective: it waits for rank 0, for TUTTI_TIMEOUT */
        int64_t t0 = tt_now_ms();
        st = tutti_comm_destroy(comm);
        int64_t took = tt_now_ms() - t0;
        kill(S->asker, SIGCONT);
        TT_FAIL_IF(st != TUTTI_ERR_TIMEOUT || took > SHORT_S * 1000 + PROMPT_MS,
                   "rank 1: tutti_comm_destroy gave %s after %lld ms (TUTTI_TIMEOUT %d s)",
                   tutti_status_name(st), (long long)took, SHORT_S);
        return tt_stall_nothing_left(1, S->fds, S->tasks) ? 1 : -1;
    }
    pthread_t th;
    pthread_create(&th, NULL, abort_later, comm);
    st = tutti_recv(x, 4, TUTTI_FP32, ASKER, comm, NULL);
    pthread_join(th, NULL);
    kill(S->asker, SIGCONT);
    TT_FAIL_IF(st != TUTTI_ERR_ABORTED, "rank 1: its receive gave %s, not TUTTI_ERR_ABORTED",
               tutti_status_name(st));
    TT_FAIL_IF(S->abort_ms > PROMPT_MS, "rank 1: tutti_comm_abort from another thread took %lld ms",
               (long long)S->abort_ms);
    return tt_stall_nothing_left(1, S->fds, S->tasks) ? 1 : -1;
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
    tt_fabric_begin("vaccept");
    setenv("TUTTI_TRANSPORTS", "verbs,tcp", 1);
    setenv("TUTTI_IB_HCA", "fakeib0", 1);
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", end == END_DESTROY ? SHORT_S : TIMEOUT_S);
    setenv("TUTTI_TIMEOUT", timeout, 1);
    /* Resumed, the asker finds rank 1's queue pairs gone in ~70 ms (4.096
     * us x 2^12 a retry, 4 tries); a killed peer is left to the NIC's
     * default retries, about 8 s, which a destroy must not wait for. */
    if (end == END_ABORT || end == END_DESTROY) {
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
    ck_assert_msg(codes[ANSWERER] == 0, "rank 1 exited %d", codes[ANSWERER]);
    ck_assert_msg(codes[ASKER] == (end == END_KILL ? 128 + SIGKILL : 0), "rank 0 exited %d", codes[ASKER]);
    munmap(S, sizeof *S);
}

START_TEST(abort_while_the_asker_stopped_with_its_socket_connected)
{
    run(AT_CONNECTED, END_ABORT);
}
END_TEST

START_TEST(abort_while_the_asker_stopped_after_its_hello)
{
    run(AT_HELLO, END_ABORT);
}
END_TEST

START_TEST(abort_while_the_asker_stopped_with_its_queue_pairs_up)
{
    run(AT_QPS_UP, END_ABORT);
}
END_TEST

START_TEST(destroy_while_the_asker_stopped_with_its_queue_pairs_up)
{
    run(AT_QPS_UP, END_DESTROY);
}
END_TEST

START_TEST(destroy_once_the_asker_was_killed_after_its_hello)
{
    run(AT_HELLO, END_KILL);
}
END_TEST

START_TEST(destroy_once_the_asker_was_killed_with_its_queue_pairs_up)
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
        {"abort_while_the_asker_stopped_with_its_socket_connected",
         abort_while_the_asker_stopped_with_its_socket_connected, 0, 0},
        {"abort_while_the_asker_stopped_after_its_hello", abort_while_the_asker_stopped_after_its_hello, 0,
         0},
        {"abort_while_the_asker_stopped_with_its_queue_pairs_up",
         abort_while_the_asker_stopped_with_its_queue_pairs_up, 0, 0},
        {"destroy_while_the_asker_stopped_with_its_queue_pairs_up",
         destroy_while_the_asker_stopped_with_its_queue_pairs_up, 0, 0},
        {"destroy_once_the_asker_was_killed_after_its_hello",
         destroy_once_the_asker_was_killed_after_its_hello, 0, 0},
        {"destroy_once_the_asker_was_killed_with_its_queue_pairs_up",
         destroy_once_the_asker_was_killed_with_its_queue_pairs_up, 0, 0},
        {"abort_after_a_set_up_shuts_down_no_other_descriptor",
         abort_after_a_set_up_shuts_down_no_other_descriptor, 0, 0},
    };
    return tt_run_cases("verbs_accept", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
