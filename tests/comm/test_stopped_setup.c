/* SPDX-License-Identifier: MIT */
/*
 * A rank stopped through the last barrier of a successor's set-up, on
 * forked ranks: four ranks shrink their communicator to all of them, and
 * one is stopped (SIGSTOP) in the new communicator's last set-up barrier
 * until the others' deadline passed. Whatever it finds in its sockets when
 * it resumes, it must decide as the others did, or the job splits in two:
 *
 * - rank 0, the hub, which decides for all: stopped once its own part was
 *   in, while the others' parts came, and then their giving up (their
 *   deadline passed); or stopped once it had decided, before its thread
 *   sent its word (held, then stopped). It must not go on alone in a
 *   communicator the others gave up: every shrink fails, and the shrinks
 *   that follow make one communicator of the four.
 * - rank 2, a member: stopped after its part went out, while rank 0 let
 *   the others go on. It resumes past its deadline with rank 0's word in
 *   its socket, and its bootstrap's thread held a while longer (as a
 *   resumed process's threads may run in either order): it must go on in
 *   the communicator the others went on in, not give it up.
 *
 * Each ordering is fixed by flags in shared memory and wrappers around the
 * set-up's barrier and the bootstrap's frames (the suite links with
 * --wrap), so the suite needs no luck with timing.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/star_impl.h"
#include "tests/lib/harness.h"

#define P 4
#define WAIT_MS 30000 /* the longest any rank waits for a flag: a broken ordering fails, it does not hang */

/* What the forked ranks share with the test. */
typedef struct {
    int late;          /* the rank stopped: 0 (the hub) or 2 (a member) */
    int word;          /* the hub is stopped once it decided, its word not yet sent */
    int at_barrier;    /* the late rank is in its successor's last set-up barrier */
    int held;          /* the late rank's bootstrap thread is held */
    int stopped;       /* the late rank is stopped: the others take their part */
    int resumed;       /* it runs again */
    int thaw;          /* the held thread may go on */
    int out[P];        /* each rank's first shrink: 1 a communicator, 2 none */
    uint64_t name[P];  /* the communicator each rank went on in (tutti_comm_id) */
    uint64_t again[P]; /* the same after the shrink that follows, where there is one */
} stop_t;

static stop_t *S;
static int me = -1, armed; /* this process's rank, and whether its next barrier is the one */
static int hold_word;      /* the hub's next broadcast is its word: its thread is held first */
static pthread_t hold_thread, word_thread, word_main;

static int wait_flag(const int *flag)
{
    for (int t = 0; t < WAIT_MS && !__atomic_load_n(flag, __ATOMIC_SEQ_CST); t++)
        usleep(1000);
    return __atomic_load_n(flag, __ATOMIC_SEQ_CST);
}

/* The late rank's bootstrap thread, in this handler, reads and sends nothing until thawed. */
static void hold(int sig)
{
    (void)sig;
    __atomic_store_n(&S->held, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&S->thaw, __ATOMIC_SEQ_CST))
        usleep(1000);
}

/* Once rank 2's part is out (it waits for rank 0's word), its thread is held. */
static void *hold_later(void *arg)
{
    usleep(200000);
    pthread_kill(*(pthread_t *)arg, SIGUSR1);
    return NULL;
}

tutti_status_t __real_tt_bootstrap_barrier(void *bs);
tutti_status_t __wrap_tt_bootstrap_barrier(void *bs);
tt_star_frame_t *__real_tt_star_frame_new(int type, int rank, tutti_status_t status, uint64_t seq,
                                          const void *p, size_t len);
tt_star_frame_t *__wrap_tt_star_frame_new(int type, int rank, tutti_status_t status, uint64_t seq,
                                          const void *p, size_t len);

/* Every set-up barrier comes through here; once armed (the shrink's
 * successor, over tcp its only one), the late rank says it is there, and
 * the others take their part only once it is stopped (but when the hub
 * is to decide first: it needs their parts). */
tutti_status_t __wrap_tt_bootstrap_barrier(void *bs)
{
    if (!armed)
        return __real_tt_bootstrap_barrier(bs);
    armed = 0;
    pthread_t *thread = &((tt_bootstrap_t *)bs)->star->thread;
    if (me == S->late && S->word) {
        word_main = pthread_self();
        word_thread = *thread;
        hold_word = 1;
    } else if (me == S->late && me != 0) {
        pthread_create(&hold_thread, NULL, hold_later, thread);
    } else if (me != S->late && !S->word) {
        wait_flag(&S->stopped);
    }
    if (me == S->late)
        __atomic_store_n(&S->at_barrier, 1, __ATOMIC_SEQ_CST);
    return __real_tt_bootstrap_barrier(bs);
}

/* Every frame of the bootstrap is made here: the hub's word (its main
 * thread's broadcast) is made only once its thread is held. */
tt_star_frame_t *__wrap_tt_star_frame_new(int type, int rank, tutti_status_t status, uint64_t seq,
                                          const void *p, size_t len)
{
    if (hold_word && type == TT_STAR_ALL && pthread_equal(pthread_self(), word_main)) {
        hold_word = 0;
        pthread_kill(word_thread, SIGUSR1);
        wait_flag(&S->held);
    }
    return __real_tt_star_frame_new(type, rank, status, seq, p, len);
}

/* An all-reduce of the ranks' numbers on comm: right, or 1. */
static int sums(tutti_comm_t comm, int r)
{
    int64_t x = r + 1, y = 0;
    TT_FAIL_IF(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL) || y != P * (P + 1) / 2,
               "rank %d: the all-reduce gave %lld: %s", r, (long long)y, tutti_comm_last_error(comm));
    return 0;
}

/* The shrinks after the first failed everywhere: the four make one communicator. */
static int shrink_again(tutti_comm_t comm, int r)
{
    tutti_comm_t next = NULL;
    wait_flag(&S->resumed);
    tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
    TT_FAIL_IF(st || tt_size_of(next) != P, "rank %d: the shrink that follows gave %s (%d ranks)%s%s", r,
               tutti_status_name(st), next ? tt_size_of(next) : 0, st ? ": " : "",
               st ? tutti_comm_last_error(comm) : "");
    tutti_comm_id(next, &S->again[r]);
    for (int q = 0; q < P; q++)
        while (!__atomic_load_n(&S->again[q], __ATOMIC_SEQ_CST))
            usleep(1000);
    for (int q = 0; q < P; q++)
        TT_FAIL_IF(S->again[q] != S->again[r], "rank %d went on in %016llx, rank %d in %016llx", q,
                   (unsigned long long)S->again[q], r, (unsigned long long)S->again[r]);
    int rc = sums(next, r);
    tutti_comm_destroy(next);
    return rc;
}

static int stopped_rank(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    me = r;
    armed = 1;
    tutti_comm_t next = NULL;
    tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
    if (next)
        tutti_comm_id(next, &S->name[r]);
    __atomic_store_n(&S->out[r], st ? 2 : 1, __ATOMIC_SEQ_CST);
    int rc = 0;
    if (S->late == 0) { /* the hub: nobody goes on, then all do, together */
        TT_FAIL_IF(next, "rank %d went on in %016llx, a communicator of %d%s", r,
                   (unsigned long long)S->name[r], tt_size_of(next),
                   r == 0 ? " the others gave up while it was stopped" : "");
        rc = shrink_again(comm, r);
    } else { /* a member: all go on, in one communicator */
        TT_FAIL_IF(st || tt_size_of(next) != P, "rank %d: its shrink gave %s%s: %s", r, tutti_status_name(st),
                   r == S->late ? " though the others went on in the communicator it gave up" : "",
                   tutti_comm_last_error(comm));
        for (int q = 0; q < P; q++)
            wait_flag(&S->out[q]);
        for (int q = 0; q < P; q++)
            TT_FAIL_IF(S->name[q] != S->name[r], "rank %d went on in %016llx, rank %d in %016llx", q,
                       (unsigned long long)S->name[q], r, (unsigned long long)S->name[r]);
        rc = sums(next, r);
        tutti_comm_destroy(next);
    }
    tutti_comm_abort(comm);
    return rc ? rc : -1;
}

/* One case: rank late (0, the hub, or 2, a member) is stopped; word: the
 * hub once it decided. */
static void stop_in_barrier(int late, int word)
{
    S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(S, MAP_FAILED);
    memset(S, 0, sizeof *S);
    S->late = late;
    S->word = word;
    struct sigaction sa = {.sa_handler = hold};
    sigaction(SIGUSR1, &sa, NULL);
    setenv("TUTTI_TIMEOUT", "2", 1); /* a set-up wait ends 3 s after it began */
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    pid_t pids[P];
    int codes[P];
    tt_spawn_ranks(P, stopped_rank, NULL, pids);
    ck_assert_msg(wait_flag(&S->at_barrier), "rank %d never reached the barrier", S->late);
    if (S->late == 0 && !S->word)
        usleep(200000); /* its own part is in */
    else
        ck_assert_msg(wait_flag(&S->held), "rank %d's bootstrap thread was not held", S->late);
    kill(pids[S->late], SIGSTOP);
    __atomic_store_n(&S->stopped, 1, __ATOMIC_SEQ_CST);
    for (int q = 0; q < P; q++)
        if (q != S->late)
            wait_flag(&S->out[q]);
    usleep(3500000); /* past the stopped rank's deadline too */
    kill(pids[S->late], SIGCONT);
    usleep(300000);
    __atomic_store_n(&S->thaw, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&S->resumed, 1, __ATOMIC_SEQ_CST);
    int timed_out = tt_wait_ranks(P, pids, codes, 60);
    unsetenv("TUTTI_TIMEOUT");
    ck_assert_msg(!timed_out, "the ranks did not end");
    for (int r = 0; r < P; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited %d", r, codes[r]);
    munmap(S, sizeof *S);
}

START_TEST(the_hub_stopped_in_the_last_barrier_does_not_go_on_alone)
{
    stop_in_barrier(0, 0);
}
END_TEST

START_TEST(the_hub_stopped_before_its_word_left_does_not_go_on_alone)
{
    stop_in_barrier(0, 1);
}
END_TEST

START_TEST(a_member_stopped_in_the_last_barrier_goes_on_with_the_others)
{
    stop_in_barrier(2, 0);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"the_hub_stopped_in_the_last_barrier_does_not_go_on_alone",
         the_hub_stopped_in_the_last_barrier_does_not_go_on_alone, 0, 0},
        {"the_hub_stopped_before_its_word_left_does_not_go_on_alone",
         the_hub_stopped_before_its_word_left_does_not_go_on_alone, 0, 0},
        {"a_member_stopped_in_the_last_barrier_goes_on_with_the_others",
         a_member_stopped_in_the_last_barrier_goes_on_with_the_others, 0, 0},
    };
    return tt_run_cases("stopped_setup", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
