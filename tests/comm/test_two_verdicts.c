/* SPDX-License-Identifier: MIT */
/*
 * Two verdicts in one rank's listener, on forked ranks: while rank 2 is
 * busy elsewhere, ranks 0 and 1 shrink their communicator, which fails
 * (rank 2 does not join within TUTTI_TIMEOUT; rank 0 leaves it a verdict
 * saying so), then shrink it again without rank 2 and go on (rank 0 leaves
 * it a verdict saying it was left out). When rank 2 shrinks at last, its
 * listener holds both, the failure first: it must learn it was left out,
 * at once, every time it asks, and never make a communicator of its own.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "tests/lib/harness.h"

#define PROMPT_MS 1500 /* less than TUTTI_TIMEOUT: a rank told it was left out asks no one */

typedef struct {
    int went_on; /* ranks 0 and 1 that made their communicator */
    int done;    /* rank 2 has asked */
} verdicts_t;

/* Rank 2: both its shrinks are refused at once, as a rank left out. */
static int left_out(tutti_comm_t comm, int r, verdicts_t *v)
{
    while (__atomic_load_n(&v->went_on, __ATOMIC_SEQ_CST) < 2)
        usleep(1000);
    for (int try = 0; try < 2; try++) {
        tutti_comm_t next = NULL;
        int64_t t0 = tt_now_ms();
        tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
        int64_t took = tt_now_ms() - t0;
        const char *why = tutti_comm_last_error(comm);
        TT_FAIL_IF(st != TUTTI_ERR_REVOKED || next || took > PROMPT_MS,
                   "rank %d, left out: shrink %d gave %s (a communicator of %d) after %lld ms: %s", r, try,
                   tutti_status_name(st), next ? tt_size_of(next) : 0, (long long)took, why);
        TT_FAIL_IF(!strstr(why, "excluded by the survivors") || !strstr(why, "rank 0 coordinated") ||
                       !strstr(why, "shrink #2"),
                   "rank %d, shrink %d: %s (not that rank 0's shrink #2 left it out)", r, try, why);
    }
    tutti_comm_abort(comm);
    return 0;
}

static int verdicts_rank(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    verdicts_t *v = arg;
    int rc = 0;
    if (r == 2) {
        rc = left_out(comm, r, v);
        __atomic_store_n(&v->done, 1, __ATOMIC_SEQ_CST);
        return rc ? rc : -1;
    }
    tutti_comm_t next = NULL;
    tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, 0, &next);
    TT_FAIL_IF(st != TUTTI_ERR_TIMEOUT || next, "rank %d: the first shrink gave %s: %s", r,
               tutti_status_name(st), tutti_comm_last_error(comm));
    const int exclude[] = {2};
    st = tutti_comm_shrink(comm, exclude, 1, 0, &next);
    TT_FAIL_IF(st || !next || tt_size_of(next) != 2, "rank %d: the second shrink gave %s: %s", r,
               tutti_status_name(st), tutti_comm_last_error(comm));
    __atomic_add_fetch(&v->went_on, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&v->done, __ATOMIC_SEQ_CST))
        usleep(1000);
    tutti_comm_abort(next);
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(a_failure_then_left_out)
{
    verdicts_t *v = mmap(NULL, sizeof *v, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(v, MAP_FAILED);
    memset(v, 0, sizeof *v);
    setenv("TUTTI_TIMEOUT", "2", 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(3, verdicts_rank, v, 60);
    unsetenv("TUTTI_TIMEOUT");
    munmap(v, sizeof *v);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"a_failure_then_left_out", a_failure_then_left_out, 0, 1},
    };
    return tt_run_cases("two_verdicts", cases, sizeof cases / sizeof *cases, 90, argc, argv);
}
