/* SPDX-License-Identifier: MIT */
/*
 * Recovery that cannot split the job or lose a revocation, on forked
 * ranks: a revocation sent the moment a split or shrink returns reaches
 * every rank; a rank the survivors shrank out while it was stopped or busy
 * gets no communicator of its own, whatever they did with the old one;
 * ranks that disagree on a grow or a shrink all learn it at once. The
 * messages under attack are test_rescue_wire.c's.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm/handle.h"
#include "core/clock.h"
#include "tests/lib/exact.h"
#include "tests/lib/harness.h"

#define PROMPT_MS 5000 /* every wait here must end well before TUTTI_TIMEOUT */

/* Round after round, rank 1 revokes a communicator the moment tutti_comm_split
 * (even rounds) or tutti_comm_shrink (odd rounds) returns it, and aborts it
 * at once in every other round; the others call an all-reduce on it. Each
 * must end with TUTTI_ERR_REVOKED at once, even where the revocation
 * reached it before its own split or shrink had returned. */
#define REVOKE_ROUNDS 24

static int revoke_at_birth(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    for (int round = 0; round < REVOKE_ROUNDS; round++) {
        tutti_comm_t c = NULL;
        tutti_status_t st = round % 2 ? tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEFAULT, &c)
                                      : tutti_comm_split(comm, 0, r, &c);
        TT_FAIL_IF(st, "rank %d round %d: %s: %s", r, round, round % 2 ? "shrink" : "split",
                   tutti_comm_last_error(comm));
        float x[64] = {0};
        if (r == 1) {
            TT_FAIL_IF(tutti_comm_revoke(c), "rank 1 round %d: revoke", round);
            if (round % 4 < 2)
                TT_FAIL_IF(tutti_comm_abort(c), "rank 1 round %d: abort", round);
            else
                TT_FAIL_IF(tutti_comm_destroy(c), "rank 1 round %d: destroy after revoke", round);
        } else {
            int64_t t0 = tt_now_ms();
            st = tutti_allreduce(x, x, 64, TUTTI_FP32, TUTTI_SUM, c, NULL);
            int64_t took = tt_now_ms() - t0;
            TT_FAIL_IF(st != TUTTI_ERR_REVOKED || took > 1000, "rank %d round %d: %s after %lld ms: %s", r,
                       round, tutti_status_name(st), (long long)took, tutti_comm_last_error(c));
            tutti_comm_abort(c);
        }
        /* Rounds apart: the next one starts on every rank after this one ended. */
        TT_FAIL_IF(tutti_barrier(comm, NULL), "rank %d round %d: barrier: %s", r, round,
                   tutti_comm_last_error(comm));
    }
    TT_FAIL_IF(tt_round_ok(comm), "rank %d: the parent after the rounds", r);
    return 0;
}

START_TEST(a_revoke_right_after_split_or_shrink_reaches_all)
{
    setenv("TUTTI_TIMEOUT", "10", 1);
    setenv("TUTTI_TRANSPORTS", _i ? "tcp" : "shm,tcp", 1);
    tt_run_ranks(4, revoke_at_birth, NULL, 120);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* A rank the others shrank out while it was stopped or busy, past their
 * patience, resumes and shrinks too: it must get no communicator, whatever
 * the survivors did with the old one, but TUTTI_ERR_REVOKED saying it was
 * excluded, at once. Case i: who is out and how, over which transport,
 * and what the survivors do with the old communicator. */
typedef struct {
    int victim, stopped, busy_ms, by_list, nodes, fate; /* fate 0: abort, 1: destroy, 2: keep */
    const char *transports;
} outcast_case_t;

static const outcast_case_t outcasts[] = {
    {2, 1, 0, 0, 0, 0, "shm,tcp"},    /* stopped, found stopped by the survivors */
    {2, 0, 4000, 0, 0, 1, "shm,tcp"}, /* busy past TUTTI_TIMEOUT: silent */
    {0, 1, 0, 0, 2, 1, "tcp"},        /* rank 0 stopped, two simulated hosts: TCP listeners */
    {0, 0, 4000, 1, 0, 0, "tcp"},     /* rank 0 busy, excluded by the survivors' list */
    {2, 1, 0, 0, 0, 2, "shm,tcp"},    /* the survivors keep the old communicator open */
};

typedef struct {
    int ready, stopped, done, victim_done;
    outcast_case_t c;
} outcast_t;

static int outcast_rank(tutti_comm_t comm, int r, int p, void *arg)
{
    outcast_t *o = arg;
    const outcast_case_t *c = &o->c;
    TT_FAIL_IF(tt_round_ok(comm), "rank %d: collectives before", r);
    __atomic_add_fetch(&o->ready, 1, __ATOMIC_SEQ_CST);
    tutti_comm_t next = NULL;
    if (r == c->victim) {
        for (int64_t until = tt_now_ms() + c->busy_ms; tt_now_ms() < until;) {
        } /* busy: it calls nothing, but is not stopped either */
        while (!__atomic_load_n(&o->done, __ATOMIC_SEQ_CST))
            usleep(1000);
        int64_t t0 = tt_now_ms();
        tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
        int64_t took = tt_now_ms() - t0;
        __atomic_store_n(&o->victim_done, 1, __ATOMIC_SEQ_CST);
        TT_FAIL_IF(st != TUTTI_ERR_REVOKED || next || took > PROMPT_MS,
                   "rank %d, left out: its shrink gave %s (a communicator of %d) after %lld ms: %s", r,
                   tutti_status_name(st), next ? tt_size_of(next) : 0, (long long)took,
                   tutti_comm_last_error(comm));
        TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "excluded by the survivors"), "rank %d: %s", r,
                   tutti_comm_last_error(comm));
        /* Out for good: a second try, a shrink of its own number, is refused at once too. */
        st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
        TT_FAIL_IF(st != TUTTI_ERR_REVOKED || next, "rank %d, left out: its second shrink gave %s", r,
                   tutti_status_name(st));
        tutti_comm_abort(comm);
        return -1;
    }
    while (__atomic_load_n(&o->ready, __ATOMIC_SEQ_CST) < p || (c->stopped && !o->stopped))
        usleep(1000);
    int out[1] = {c->victim};
    tutti_status_t st =
        tutti_comm_shrink(comm, out, c->by_list, TUTTI_SHRINK_DEAD | TUTTI_SHRINK_ABORT, &next);
    TT_FAIL_IF(st || tt_size_of(next) != p - 1, "rank %d: the survivors' shrink: %s: %s", r,
               tutti_status_name(st), tutti_comm_last_error(comm));
    if (c->fate == 0)
        tutti_comm_abort(comm);
    else if (c->fate == 1)
        TT_FAIL_IF(tutti_comm_destroy(comm), "rank %d: destroy of the old one: %s", r,
                   tutti_comm_last_error(NULL));
    TT_FAIL_IF(tt_round_ok(next), "rank %d: collectives on the survivors' communicator", r);
    if (tt_rank_of(next) == 0)
        __atomic_store_n(&o->done, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&o->victim_done, __ATOMIC_SEQ_CST))
        usleep(1000);
    TT_FAIL_IF(tt_round_ok(next), "rank %d: collectives after the outcast's shrink", r);
    tutti_comm_destroy(next);
    if (c->fate == 2)
        tutti_comm_abort(comm);
    return -1;
}

START_TEST(an_excluded_rank_gets_no_communicator)
{
    outcast_t *o = mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(o, MAP_FAILED);
    memset(o, 0, sizeof *o);
    o->c = outcasts[_i];
    setenv("TUTTI_TIMEOUT", "3", 1);
    setenv("TUTTI_TRANSPORTS", o->c.transports, 1);
    tt_set_ranks_per_node(o->c.nodes);
    pid_t pids[4];
    int codes[4];
    tt_spawn_ranks(4, outcast_rank, o, pids);
    while (__atomic_load_n(&o->ready, __ATOMIC_SEQ_CST) < 4)
        usleep(1000);
    if (o->c.stopped) {
        kill(pids[o->c.victim], SIGSTOP);
        usleep(20000);
        __atomic_store_n(&o->stopped, 1, __ATOMIC_SEQ_CST);
        for (int t = 0; t < 30000 && !__atomic_load_n(&o->done, __ATOMIC_SEQ_CST); t++)
            usleep(1000);
        kill(pids[o->c.victim], SIGCONT);
    }
    int timed_out = tt_wait_ranks(4, pids, codes, 60);
    tt_set_ranks_per_node(0);
    unsetenv("TUTTI_TIMEOUT");
    ck_assert_msg(!timed_out, "the ranks did not end");
    for (int r = 0; r < 4; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited %d", r, codes[r]);
    munmap(o, sizeof *o);
}
END_TEST

/* Ranks that disagree learn it at once, every one of them; TUTTI_TIMEOUT
 * is 20 s. Grow: rank 2 asks for 6 ranks, the others for 5 (nobody joins). */
static int grow_apart(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    tutti_unique_id_t id;
    TT_FAIL_IF(r == 0 && tutti_get_unique_id(&id), "unique id");
    tutti_comm_t next = NULL;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_comm_grow(comm, r == 2 ? 6 : 5, r == 0 ? &id : NULL, &next);
    int64_t took = tt_now_ms() - t0;
    TT_FAIL_IF(st != TUTTI_ERR_MISMATCH || took > PROMPT_MS, "rank %d: grow gave %s after %lld ms: %s", r,
               tutti_status_name(st), (long long)took, tutti_comm_last_error(comm));
    TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "rank 2 to 6"), "rank %d: %s", r,
               tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_round_ok(comm), "rank %d: the communicator stays usable", r);
    return 0;
}

/* Shrink: rank 0 excludes rank 3, which itself calls the shrink with the
 * others' empty list. */
static int shrink_apart(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    tutti_comm_t next = NULL;
    int three[1] = {3};
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_comm_shrink(comm, three, r == 0, TUTTI_SHRINK_DEFAULT, &next);
    int64_t took = tt_now_ms() - t0;
    TT_FAIL_IF(st != TUTTI_ERR_MISMATCH || took > PROMPT_MS, "rank %d: shrink gave %s after %lld ms: %s", r,
               tutti_status_name(st), (long long)took, tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_round_ok(comm), "rank %d: the communicator stays usable", r);
    return 0;
}

START_TEST(disagreements_fail_at_once_everywhere)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(4, _i ? shrink_apart : grow_apart, NULL, 90);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"a_revoke_right_after_split_or_shrink_reaches_all", a_revoke_right_after_split_or_shrink_reaches_all,
         0, 2},
        {"an_excluded_rank_gets_no_communicator", an_excluded_rank_gets_no_communicator, 0,
         (int)(sizeof outcasts / sizeof *outcasts)},
        {"disagreements_fail_at_once_everywhere", disagreements_fail_at_once_everywhere, 0, 2},
    };
    return tt_run_cases("rescue", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
