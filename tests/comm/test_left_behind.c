/* SPDX-License-Identifier: MIT */
/*
 * A rank left behind, on forked ranks: the others went on from a
 * communicator to its successor, made by a grow or a shrink they all took
 * part in, and left the old one, while this rank's part failed (here: it
 * drops the successor at once, as a rank whose set-up of it failed late
 * would hold none). Its shrink of the old communicator must give it no
 * communicator of its own, but TUTTI_ERR_REVOKED saying it was left
 * behind, who made the successor, its name (which every rank of the
 * successor read alike, tutti_comm_id) and who told it, at once, every time
 * it asks.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "tests/lib/harness.h"

#define PROMPT_MS 5000 /* every wait here must end well before TUTTI_TIMEOUT */

/* What the forked ranks and the grow's newcomer share with the test. */
typedef struct {
    int grow, late; /* the case: grow (else shrink), and the rank left behind */
    int id_set, left, done;
    int joined; /* the newcomer's outcome: 1 fine, 2 failed */
    tutti_unique_id_t id;
    uint64_t name[8]; /* the successor's name, as each rank read it */
} behind_t;

/* The successor of comm every rank takes part in: a grow by one newcomer, or a shrink to all of comm. */
static tutti_status_t successor(tutti_comm_t comm, int r, int p, behind_t *b, tutti_comm_t *next)
{
    if (!b->grow)
        return tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, next);
    tutti_unique_id_t id;
    if (r == 0) {
        if (tutti_get_unique_id(&id))
            return TUTTI_ERR_SYSTEM;
        b->id = id;
        __atomic_store_n(&b->id_set, 1, __ATOMIC_SEQ_CST);
    }
    return tutti_comm_grow(comm, p + 1, r == 0 ? &id : NULL, next);
}

/* The rank left behind: both its shrinks of comm are refused at once. */
static int left_behind(tutti_comm_t comm, int r, int p, behind_t *b)
{
    char name[32];
    snprintf(name, sizeof name, "communicator %016llx", (unsigned long long)b->name[r]);
    for (int q = 0; q < p; q++)
        TT_FAIL_IF(b->name[q] != b->name[r], "rank %d named the successor %016llx, rank %d %016llx", q,
                   (unsigned long long)b->name[q], r, (unsigned long long)b->name[r]);
    for (int try = 0; try < 2; try++) {
        tutti_comm_t next = NULL;
        int64_t t0 = tt_now_ms();
        tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
        int64_t took = tt_now_ms() - t0;
        const char *why = tutti_comm_last_error(comm);
        TT_FAIL_IF(st != TUTTI_ERR_REVOKED || next || took > PROMPT_MS,
                   "rank %d, left behind: shrink %d gave %s (a communicator of %d) after %lld ms: %s", r, try,
                   tutti_status_name(st), next ? tt_size_of(next) : 0, (long long)took, why);
        TT_FAIL_IF(!strstr(why, "left behind") || !strstr(why, "told by rank") || !strstr(why, name) ||
                       !strstr(why, b->grow ? "rank 0's grow" : "coordinated by rank 0"),
                   "rank %d: %s (not the successor's %s)", r, why, name);
    }
    tutti_comm_abort(comm);
    return 0;
}

static int behind_rank(tutti_comm_t comm, int r, int p, void *arg)
{
    behind_t *b = arg;
    tutti_comm_t next = NULL;
    tutti_status_t st = successor(comm, r, p, b, &next);
    TT_FAIL_IF(st, "rank %d: the successor: %s: %s", r, tutti_status_name(st), tutti_comm_last_error(comm));
    TT_FAIL_IF(tutti_comm_id(next, &b->name[r]), "rank %d: tutti_comm_id: %s", r,
               tutti_comm_last_error(next));
    int rc = 0;
    if (r == b->late) {
        tutti_comm_abort(next); /* its part failed: it holds no successor */
        while (__atomic_load_n(&b->left, __ATOMIC_SEQ_CST) < p - 1)
            usleep(1000);
        rc = left_behind(comm, r, p, b);
        __atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
        return rc ? rc : -1;
    }
    /* Rank 0 leaves first: a rank left behind above it then finds the star
     * gone and the others' leaving unannounced. */
    while (r != 0 && b->late != 0 && __atomic_load_n(&b->left, __ATOMIC_SEQ_CST) < 1)
        usleep(1000);
    tutti_comm_abort(comm);
    __atomic_add_fetch(&b->left, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&b->done, __ATOMIC_SEQ_CST))
        usleep(1000);
    tutti_comm_abort(next);
    return -1;
}

/* The grow's newcomer: joins as rank p and waits for the end. */
static pid_t start_newcomer(behind_t *b, int p)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid)
        return pid;
    while (!__atomic_load_n(&b->id_set, __ATOMIC_SEQ_CST))
        usleep(1000);
    tutti_comm_t big;
    tutti_unique_id_t id = b->id;
    if (tutti_comm_init(&big, p + 1, p, &id, NULL)) {
        fprintf(stderr, "newcomer: %s\n", tutti_comm_last_error(NULL));
        __atomic_store_n(&b->joined, 2, __ATOMIC_SEQ_CST);
        _exit(1);
    }
    while (!__atomic_load_n(&b->done, __ATOMIC_SEQ_CST))
        usleep(1000);
    tutti_comm_abort(big);
    __atomic_store_n(&b->joined, 1, __ATOMIC_SEQ_CST);
    _exit(0);
}

/* Case i: a grow (even i) or a shrink (odd); left behind: rank 0 (i < 2),
 * which coordinates its shrink and tells the others, or rank 3, which
 * joins the lowest rank it believes alive. */
START_TEST(a_rank_left_behind_gets_no_communicator)
{
    enum { P = 4 };
    behind_t *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(b, MAP_FAILED);
    memset(b, 0, sizeof *b);
    b->grow = _i % 2 == 0;
    b->late = _i < 2 ? 0 : 3;
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    pid_t newcomer = b->grow ? start_newcomer(b, P) : -1;
    tt_run_ranks(P, behind_rank, b, 90); /* it may reap the newcomer too */
    for (int t = 0; newcomer > 0 && t < 5000 && !__atomic_load_n(&b->joined, __ATOMIC_SEQ_CST); t++)
        usleep(1000);
    if (newcomer > 0) {
        kill(newcomer, SIGKILL);
        waitpid(newcomer, NULL, WNOHANG);
        ck_assert_msg(b->joined == 1, "the newcomer failed (%d)", b->joined);
    }
    unsetenv("TUTTI_TIMEOUT");
    munmap(b, sizeof *b);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"a_rank_left_behind_gets_no_communicator", a_rank_left_behind_gets_no_communicator, 0, 4},
    };
    return tt_run_cases("left_behind", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
