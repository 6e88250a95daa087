/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap's tree, under what tries to break it: ranks that join
 * late, a rank that dies while the communicator forms (after attaching to
 * its parent, or before), an interior rank that dies later (its children
 * attach to rank 0 and still hear, and tell, of deaths), connections
 * without the key or from a rank that is no child, and what set-up costs a
 * rank in bytes.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "comm/star_impl.h"
#include "core/clock.h"
#include "tests/lib/harness.h"

#define MAXR 32

typedef struct {
    int status;
    int64_t ms, dead_ms[2];
    uint64_t bytes_out, bytes_in;
    char msg[1024];
} seen_t;

static seen_t *shared(void)
{
    seen_t *s = mmap(NULL, MAXR * sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(s, MAP_FAILED);
    memset(s, 0, MAXR * sizeof *s);
    return s;
}

/* Ranks [0, n) but `fake`, each sleeping delay_ms[r] first; each records
 * what tutti_comm_init said, then runs an all-reduce and destroys. */
static void start_ranks(const tutti_unique_id_t *uid, int n, int fake, const int *delay_ms, seen_t *seen,
                        pid_t *pids)
{
    fflush(stderr);
    for (int r = 0; r < n; r++) {
        if (r == fake)
            continue;
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r])
            continue;
        if (delay_ms && delay_ms[r])
            usleep((useconds_t)delay_ms[r] * 1000);
        tutti_comm_t comm;
        int64_t t0 = tt_now_ms();
        seen[r].status = tutti_comm_init(&comm, n, r, uid, NULL);
        seen[r].ms = tt_now_ms() - t0;
        snprintf(seen[r].msg, sizeof seen[r].msg, "%s", tutti_comm_last_error(NULL));
        if (!seen[r].status) {
            float x = (float)r, y = 0;
            seen[r].status = tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
            if (!seen[r].status && y != (float)(n * (n - 1) / 2))
                seen[r].status = TUTTI_ERR_MISMATCH;
            snprintf(seen[r].msg, sizeof seen[r].msg, "%s", tutti_comm_last_error(comm));
            tutti_comm_destroy(comm);
        }
        _exit(0);
    }
}

static void wait_all(int n, int fake, const pid_t *pids)
{
    for (int r = 0; r < n; r++)
        if (r != fake) {
            int status;
            ck_assert_int_eq(waitpid(pids[r], &status, 0), pids[r]);
        }
}

START_TEST(ranks_that_join_late_still_form_the_tree)
{
    /* Rank 2 is an interior rank (its children are 9 to 12); 13 a leaf. */
    enum { N = 14 };
    int delay[N] = {[2] = 1200, [13] = 1500, [9] = 300};
    seen_t *seen = shared();
    tutti_unique_id_t uid;
    pid_t pids[N];
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    start_ranks(&uid, N, -1, delay, seen, pids);
    wait_all(N, -1, pids);
    for (int r = 0; r < N; r++)
        ck_assert_msg(seen[r].status == TUTTI_SUCCESS, "rank %d: %s: %s", r,
                      tutti_status_name(seen[r].status), seen[r].msg);
    munmap(seen, MAXR * sizeof *seen);
}
END_TEST

typedef struct {
    tt_sockaddr_t parent, root;
} welcome_t; /* as rank 0 sends it (bootstrap_join.c) */

/* Rank `rank` of n as a process that speaks the join itself: it joins
 * rank 0, attaches to its parent or not, and exits (dies) there. */
static void fake_rank(const tutti_unique_id_t *uid, int rank, int n, int attach)
{
    tt_id_t id;
    ck_assert_int_eq(tt_id_decode(uid->internal, &id), 0);
    int64_t deadline = tt_now_ms() + 20000;
    tt_sockaddr_t mine;
    int lfd, fd;
    ck_assert_int_eq(tt_sock_pick_addr("", &mine), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sock_listen(&mine, &lfd), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sock_connect(&id.root, deadline, &fd), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_hello_send(fd, id.key, rank, n, TT_STAR_HELLO_JOIN, deadline), TUTTI_SUCCESS);
    tt_hello_t h;
    ck_assert_int_eq(tt_sock_recv_all(fd, &h, sizeof h, deadline), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_star_send(fd, TT_STAR_JOIN, rank, 0, 0, &mine, sizeof mine, 5000), TUTTI_SUCCESS);
    tt_star_hdr_t wh;
    welcome_t w;
    ck_assert_int_eq(tt_sock_recv_all(fd, &wh, sizeof wh, deadline), TUTTI_SUCCESS);
    ck_assert_int_eq(wh.len, sizeof w);
    ck_assert_int_eq(tt_sock_recv_all(fd, &w, sizeof w, deadline), TUTTI_SUCCESS);
    close(fd);
    if (attach) {
        ck_assert_int_eq(tt_sock_connect(&w.parent, deadline, &fd), TUTTI_SUCCESS);
        ck_assert_int_eq(tt_hello_send(fd, id.key, rank, n, TT_STAR_HELLO_CHILD, deadline), TUTTI_SUCCESS);
        usleep(200000);
        close(fd);
    }
    close(lfd);
}

/* Rank 6 of 8 (a leaf under rank 1) joins and then dies, having attached
 * to its parent or not: every other rank is told which rank died, long
 * before TUTTI_TIMEOUT. */
static void dying_joiner(int attach, int64_t within_ms)
{
    enum { N = 8, FAKE = 6 };
    setenv("TUTTI_TIMEOUT", "8", 1);
    seen_t *seen = shared();
    tutti_unique_id_t uid;
    pid_t pids[N];
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    start_ranks(&uid, N, FAKE, NULL, seen, pids);
    fake_rank(&uid, FAKE, N, attach);
    wait_all(N, FAKE, pids);
    for (int r = 0; r < N; r++)
        ck_assert_msg(r == FAKE || (seen[r].status == TUTTI_ERR_PEER_FAILED &&
                                    strstr(seen[r].msg, "rank 6 died") && seen[r].ms < within_ms),
                      "rank %d: %s after %lld ms: %s", r, tutti_status_name(seen[r].status),
                      (long long)seen[r].ms, seen[r].msg);
    munmap(seen, MAXR * sizeof *seen);
    unsetenv("TUTTI_TIMEOUT");
}

START_TEST(a_rank_that_dies_after_attaching_is_named)
{
    dying_joiner(1, 4000);
}
END_TEST

START_TEST(a_rank_that_dies_before_attaching_is_named)
{
    /* Its parent waits half of TUTTI_TIMEOUT for it, then names it. */
    dying_joiner(0, 7500);
}
END_TEST

/* Rank 1 (children 5 to 8; 5's are 21 to 24) dies; then rank 21, whose
 * parent 5 has attached to rank 0 meanwhile. Every other rank learns of
 * both, each within a second. */
static int interior_body(tutti_comm_t handle, int r, int p, void *arg)
{
    seen_t *seen = arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    (void)p;
    TT_FAIL_IF(tutti_barrier(handle, NULL), "barrier: %s", tutti_comm_last_error(handle));
    if (r == 1)
        _exit(0); /* no destroy, no word: as kill -9 */
    unsigned char *dead = calloc((size_t)p, 1);
    int64_t t0 = tt_now_ms(), blind = 0;
    for (int k = 0; k < 2; k++) {
        int who = k == 0 ? 1 : 21, b;
        while (!dead[who] && tt_now_ms() - t0 < 10000) {
            usleep(5000);
            tt_star_dead(comm->bs.star, dead, TT_STAR_RANK_DIED, TT_STAR_RANK_LEFT, &b);
            blind |= b;
        }
        seen[r].dead_ms[k] = dead[who] ? tt_now_ms() - t0 : -1;
        if (k == 0 && r == 21) {
            usleep(300000); /* its parent 5 has attached to rank 0 by now */
            _exit(0);
        }
        t0 = tt_now_ms();
    }
    seen[r].status = blind ? TUTTI_ERR_PEER_FAILED : TUTTI_SUCCESS;
    free(dead);
    if (r == 0)
        usleep(2000000); /* the hub outlives the others' looking: its end is news too */
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(an_interior_rank_that_dies_is_named_to_its_subtree_too)
{
    enum { N = 25 };
    seen_t *seen = shared();
    pid_t pids[N];
    int codes[N];
    tt_spawn_ranks(N, interior_body, seen, pids);
    tt_wait_ranks(N, pids, codes, 60);
    for (int r = 0; r < N; r++) {
        if (r == 1 || r == 21)
            continue;
        ck_assert_msg(seen[r].status == TUTTI_SUCCESS && seen[r].dead_ms[0] >= 0 &&
                          seen[r].dead_ms[0] < 1000 && seen[r].dead_ms[1] >= 0 && seen[r].dead_ms[1] < 1300,
                      "rank %d learned of rank 1's death after %lld ms and of rank 21's after %lld ms (-1: "
                      "never)%s",
                      r, (long long)seen[r].dead_ms[0], (long long)seen[r].dead_ms[1],
                      seen[r].status ? ", and lost rank 0" : "");
    }
    munmap(seen, MAXR * sizeof *seen);
}
END_TEST

/* Rank 0 knocks on rank 3's listener without the key, then with it but
 * claiming to be a child rank 3 does not have, then sends a message frame
 * that is not one; rank 3 refuses each and the job goes on. */
static int knock_body(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    if (r == 0) {
        unsigned char wrong[TT_KEY_BYTES];
        memcpy(wrong, comm->env.key, sizeof wrong);
        wrong[0] ^= 1;
        int64_t deadline = tt_now_ms() + 5000;
        for (int k = 0; k < 3; k++) {
            int fd;
            TT_FAIL_IF(tt_sock_connect(&comm->listeners[3], deadline, &fd), "cannot reach rank 3");
            tt_hello_send(fd, k == 0 ? wrong : comm->env.key, k == 1 ? 4 : 0, p,
                          k == 1 ? TT_STAR_HELLO_CHILD : TT_STAR_HELLO_MSG, deadline);
            static const char junk[64] = "not a frame";
            if (k > 0 &&
                send(fd, k == 1 ? "\x78\x73\x74\x74" : junk, k == 1 ? 4 : sizeof junk, MSG_NOSIGNAL) < 0)
                TT_FAIL_IF(1, "sending to rank 3 failed");
            usleep(100000);
            close(fd);
        }
    }
    for (int k = 0; k < 3; k++) {
        int x = r, y = 0;
        tutti_status_t st = tutti_allreduce(&x, &y, 1, TUTTI_INT32, TUTTI_SUM, handle, NULL);
        TT_FAIL_IF(st || y != p * (p - 1) / 2, "allreduce after the knocks: %s (%d)",
                   tutti_comm_last_error(handle), y);
    }
    return 0;
}

START_TEST(connections_without_the_key_or_a_place_are_refused)
{
    tt_run_ranks(6, knock_body, NULL, 60);
}
END_TEST

/* What set-up costs a rank: rank 0 handles one record per rank and each
 * rank every rank's record once (about 170 bytes each), far from the
 * N(N-1) of a set-up where every rank sent every rank's record. */
static int bytes_body(tutti_comm_t handle, int r, int p, void *arg)
{
    seen_t *seen = arg;
    tt_comm_t *comm = tt_comm_lookup(handle, NULL);
    (void)p;
    tt_bootstrap_bytes(&comm->bs, &seen[r].bytes_out, &seen[r].bytes_in);
    return 0;
}

START_TEST(set_up_moves_a_few_records_per_rank)
{
    enum { N = 32 };
    seen_t *seen = shared();
    tt_run_ranks(N, bytes_body, seen, 120);
    for (int r = 0; r < N; r++)
        ck_assert_msg(seen[r].bytes_out < 64 * 1024 && seen[r].bytes_in < 64 * 1024,
                      "rank %d sent %llu and received %llu bytes setting up %d ranks", r,
                      (unsigned long long)seen[r].bytes_out, (unsigned long long)seen[r].bytes_in, N);
    munmap(seen, MAXR * sizeof *seen);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"late_ranks", ranks_that_join_late_still_form_the_tree, 0, 0},
        {"dies_after_attaching", a_rank_that_dies_after_attaching_is_named, 0, 0},
        {"dies_before_attaching", a_rank_that_dies_before_attaching_is_named, 0, 0},
        {"interior_dies", an_interior_rank_that_dies_is_named_to_its_subtree_too, 0, 0},
        {"wrong_key", connections_without_the_key_or_a_place_are_refused, 0, 0},
        {"set_up_bytes", set_up_moves_a_few_records_per_rank, 0, 0},
    };
    return tt_run_cases("tree", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
