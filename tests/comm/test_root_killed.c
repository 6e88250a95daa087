/* SPDX-License-Identifier: MIT */
/*
 * A join over several roots (tutti_comm_init_roots) whose second root is
 * killed while its block joins. Nine ranks, three roots, four simulated
 * hosts: block 0 (ranks 0-2) on host 0, root 1 (rank 3) alone on host 1,
 * the ranks it serves (4 and 5) on host 2, block 2 (ranks 6-8) on host 3.
 * Root 1 stops itself (SIGSTOP) at one of three points, and the test kills
 * it (SIGKILL) there:
 *
 * - ranks 4 and 5 have reached it and sent their hello, which it has not
 *   answered yet;
 * - it has admitted its block and not yet reported it to rank 0;
 * - it has reported its block and heard where its ranks' parents listen,
 *   and not yet told them.
 *
 * Rank 0 begins its init half a second after the others. Every rank's init
 * must fail, none after its timeout (and the grace a joined rank gives
 * rank 0's word, which comes at rank 0's later deadline). Ranks 4 and 5 fail at once, naming
 * the root they joined and that it died, not as if another program held
 * its address or rank 0 had closed on them. The ranks it did not serve
 * fail as documented: at their timeout, told which ranks are missing,
 * where root 1 never reported; at once, told rank 3 died, where it had.
 *
 * The points are fixed by wrappers around the join's steps (the suite
 * links with --wrap), so the suite needs no luck with timing.
 */
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/admit.h"
#include "core/clock.h"
#include "tests/lib/harness.h"

#define P 9
#define NIDS 3
#define VICTIM 3 /* root 1 */
#define TIMEOUT_MS 3000
#define GRACE_MS 1000 /* a joined rank waits this much past its deadline for rank 0's word */
#define SLACK_MS 1500 /* a loaded machine's lateness */
#define LATE_MS 500   /* rank 0 begins its init this much after the others */
#define WAIT_MS 15000 /* the longest a rank waits for a flag */

enum { AT_ADMIT = 1, AT_REPORT, AT_WELCOME };

/* What the forked ranks share with the test. */
typedef struct {
    _Atomic int made[NIDS];
    tutti_unique_id_t ids[NIDS];
    int where;              /* where root 1 stops */
    _Atomic int hello[P];   /* the rank's hello to its root went out */
    _Atomic int64_t killed; /* when the test killed root 1 (tt_now_ms) */
    tutti_status_t st[P];   /* each rank's init */
    int64_t began[P], ended[P];
    char why[P][512];
} shared_t;

static shared_t *S;
static int me = -1, armed; /* this process's rank; root 1's stop */

static int node_of(int r)
{
    return r < 3 ? 0 : r == VICTIM ? 1 : r < 6 ? 2 : 3;
}

tutti_status_t __real_tt_hello_send(int fd, const unsigned char *key, int rank, int nranks, int channel,
                                    int64_t deadline_ms);
tutti_status_t __wrap_tt_hello_send(int fd, const unsigned char *key, int rank, int nranks, int channel,
                                    int64_t deadline_ms);
tutti_status_t __real_tt_admit_next(tt_admit_t *a, int64_t deadline_ms, int *fd, tt_hello_t *hello);
tutti_status_t __wrap_tt_admit_next(tt_admit_t *a, int64_t deadline_ms, int *fd, tt_hello_t *hello);
tutti_status_t __real_tt_bootstrap_reach_root(tt_bootstrap_t *bs, const tt_sockaddr_t *root, int64_t deadline,
                                              char *err, size_t errlen);
tutti_status_t __wrap_tt_bootstrap_reach_root(tt_bootstrap_t *bs, const tt_sockaddr_t *root, int64_t deadline,
                                              char *err, size_t errlen);
tutti_status_t __real_tt_bootstrap_welcome(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen);
tutti_status_t __wrap_tt_bootstrap_welcome(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen);

static void stop_here(int point)
{
    if (armed != point)
        return;
    armed = 0;
    raise(SIGSTOP);
}

/* A rank's first hello is its join's, to its root. */
tutti_status_t __wrap_tt_hello_send(int fd, const unsigned char *key, int rank, int nranks, int channel,
                                    int64_t deadline_ms)
{
    tutti_status_t st = __real_tt_hello_send(fd, key, rank, nranks, channel, deadline_ms);
    if (!st && me >= 0 && me != VICTIM)
        atomic_store(&S->hello[me], 1);
    return st;
}

/* Root 1 admits its block here; it stops once ranks 4 and 5 have sent
 * their hello, before it took either. */
tutti_status_t __wrap_tt_admit_next(tt_admit_t *a, int64_t deadline_ms, int *fd, tt_hello_t *hello)
{
    if (armed == AT_ADMIT)
        for (int t = 0; t < WAIT_MS && !(atomic_load(&S->hello[4]) && atomic_load(&S->hello[5])); t++)
            usleep(1000);
    stop_here(AT_ADMIT);
    return __real_tt_admit_next(a, deadline_ms, fd, hello);
}

/* Root 1's block is in; it reports to rank 0 from here. */
tutti_status_t __wrap_tt_bootstrap_reach_root(tt_bootstrap_t *bs, const tt_sockaddr_t *root, int64_t deadline,
                                              char *err, size_t errlen)
{
    stop_here(AT_REPORT);
    return __real_tt_bootstrap_reach_root(bs, root, deadline, err, errlen);
}

/* Root 1 knows where its ranks' parents listen; it tells them from here. */
tutti_status_t __wrap_tt_bootstrap_welcome(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen)
{
    if (bs->block != 0)
        stop_here(AT_WELCOME);
    return __real_tt_bootstrap_welcome(bs, deadline, err, errlen);
}

/* Rank r: makes the id of the block it is the first of, joins, and
 * records how its init ended. */
static int rank_main(int r)
{
    me = r;
    for (int i = 0; i < NIDS; i++)
        if (tt_root_first(i, P, NIDS) == r) {
            if (tutti_get_unique_id(&S->ids[i]))
                return 2;
            atomic_store(&S->made[i], 1);
        }
    for (int i = 0; i < NIDS; i++)
        for (int t = 0; t < WAIT_MS && !atomic_load(&S->made[i]); t++)
            usleep(1000);
    if (r == VICTIM)
        armed = S->where;
    if (r == 0) /* begins last, as a launcher may start it: its deadline is the last */
        usleep(LATE_MS * 1000);
    tutti_comm_params_t params = {.field_mask = TUTTI_PARAM_TIMEOUT_MS | TUTTI_PARAM_NODE_ID,
                                  .timeout_ms = TIMEOUT_MS,
                                  .node_id = node_of(r)};
    tutti_comm_t comm;
    S->began[r] = tt_now_ms();
    tutti_status_t st = tutti_comm_init_roots(&comm, P, r, NIDS, S->ids, &params);
    S->ended[r] = tt_now_ms();
    S->st[r] = st;
    snprintf(S->why[r], sizeof S->why[r], "%s", st ? tutti_comm_last_error(NULL) : "it joined");
    if (!st)
        tutti_comm_abort(comm);
    return 0;
}

/* Ranks 4 and 5, whose root died: at once, naming it and its death. */
static void check_served(int r, const char *want)
{
    int64_t after = S->ended[r] - atomic_load(&S->killed);
    ck_assert_msg(S->st[r] == TUTTI_ERR_PEER_FAILED && strstr(S->why[r], want) &&
                      strstr(S->why[r], "it died"),
                  "rank %d, whose root was killed, gave %s: %s", r, tutti_status_name(S->st[r]), S->why[r]);
    ck_assert_msg(after < SLACK_MS, "rank %d failed %lld ms after its root was killed", r, (long long)after);
}

/* The others: in time, as documented. Where root 1 reported, they learn
 * at once that a rank of block 1 is gone: rank 3, or rank 4 or 5, which
 * gave up on it and ended (its parent sees its process go first). */
static void check_other(int r, int reported)
{
    int64_t took = S->ended[r] - S->began[r];
    int named = 0;
    for (int q = 3; q < 6; q++) {
        char died[32];
        snprintf(died, sizeof died, "rank %d died", q);
        named |= strstr(S->why[r], died) != NULL;
    }
    if (reported)
        ck_assert_msg(S->st[r] == TUTTI_ERR_PEER_FAILED && named, "rank %d gave %s: %s", r,
                      tutti_status_name(S->st[r]), S->why[r]);
    else
        ck_assert_msg(S->st[r] == TUTTI_ERR_TIMEOUT &&
                          strstr(S->why[r], "6 of 9 ranks joined before the timeout; missing: ranks 3-5"),
                      "rank %d gave %s: %s", r, tutti_status_name(S->st[r]), S->why[r]);
    ck_assert_msg(took < TIMEOUT_MS + GRACE_MS + SLACK_MS, "rank %d failed after %lld ms (timeout %d ms)", r,
                  (long long)took, TIMEOUT_MS);
}

static void kill_root_at(int where)
{
    S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(S, MAP_FAILED);
    memset(S, 0, sizeof *S);
    S->where = where;
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    pid_t pids[P];
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < P; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            _exit(rank_main(r));
    }
    int status;
    ck_assert_int_eq(waitpid(pids[VICTIM], &status, WUNTRACED), pids[VICTIM]);
    ck_assert_msg(WIFSTOPPED(status), "root 1 ended (status %d) before its stop", status);
    usleep(100000); /* the others go on meanwhile */
    atomic_store(&S->killed, tt_now_ms());
    kill(pids[VICTIM], SIGKILL);
    int codes[P];
    ck_assert_msg(!tt_wait_ranks(P, pids, codes, 30), "the ranks did not end");
    ck_assert_int_eq(codes[VICTIM], 128 + SIGKILL);
    for (int r = 0; r < P; r++)
        ck_assert_msg(r == VICTIM || codes[r] == 0, "rank %d exited %d", r, codes[r]);
    for (int r = 4; r < 6; r++)
        check_served(r, where == AT_ADMIT ? "the bootstrap root at" : "bootstrap root 1 (of ranks 3-5)");
    for (int r = 0; r < P; r++)
        if (r < 3 || r > 5)
            check_other(r, where == AT_WELCOME);
    munmap(S, sizeof *S);
}

START_TEST(root_killed_before_answering_its_ranks)
{
    kill_root_at(AT_ADMIT);
}
END_TEST

START_TEST(root_killed_before_reporting_its_block)
{
    kill_root_at(AT_REPORT);
}
END_TEST

START_TEST(root_killed_before_welcoming_its_block)
{
    kill_root_at(AT_WELCOME);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"root_killed_before_answering_its_ranks", root_killed_before_answering_its_ranks, 0, 0},
        {"root_killed_before_reporting_its_block", root_killed_before_reporting_its_block, 0, 0},
        {"root_killed_before_welcoming_its_block", root_killed_before_welcoming_its_block, 0, 0},
    };
    return tt_run_cases("root_killed", cases, sizeof cases / sizeof *cases, 60, argc, argv);
}
