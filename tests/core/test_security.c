/* SPDX-License-Identifier: MIT */
/*
 * Keys: a connection presenting a wrong key (or none) is refused and
 * logged, and the communicator forms and works regardless.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/clock.h"
#include "tests/lib/harness.h"
#include "core/sock.h"

START_TEST(hello_with_the_wrong_key_is_refused)
{
    unsigned char key[TT_KEY_BYTES], other[TT_KEY_BYTES];
    ck_assert_int_eq(tt_random_key(key), TUTTI_SUCCESS);
    memcpy(other, key, sizeof other);
    other[TT_KEY_BYTES - 1] ^= 1; /* one bit off */
    int sv[2];
    tt_hello_t h;
    int64_t soon = tt_now_ms() + 2000;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(tt_hello_send(sv[0], key, 3, 4, 1, soon), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_hello_recv(sv[1], key, soon, &h), TUTTI_SUCCESS);
    ck_assert_int_eq(h.rank, 3);
    ck_assert_int_eq(h.channel, 1);
    ck_assert_int_eq(tt_hello_send(sv[0], other, 3, 4, 1, soon), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_hello_recv(sv[1], key, soon, &h), TUTTI_ERR_AUTH);
    close(sv[0]);
    close(sv[1]);

    /* A peer that says nothing, or too little, is refused at the deadline. */
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(write(sv[0], "tut", 3), 3);
    ck_assert_int_eq(tt_hello_recv(sv[1], key, tt_now_ms() + 200, &h), TUTTI_ERR_AUTH);
    close(sv[0]);
    ck_assert_int_eq(tt_hello_recv(sv[1], key, tt_now_ms() + 200, &h), TUTTI_ERR_AUTH);
    close(sv[1]);
}
END_TEST

static int allreduce_once(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    int v = r + 1, sum = 0;
    if (tutti_allreduce(&v, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL) || sum != p * (p + 1) / 2)
        return 1;
    return 0;
}

/* Connects to the root and says rubbish; returns the socket. */
static int rogue_connect(const tt_sockaddr_t *root, const unsigned char *key, int mode)
{
    int fd;
    ck_assert_int_eq(tt_sock_connect(root, tt_now_ms() + 5000, &fd), TUTTI_SUCCESS);
    if (mode == 0) {
        ck_assert_int_eq(tt_hello_send(fd, key, 1, 3, 0, tt_now_ms() + 1000), TUTTI_SUCCESS);
    } else {
        static const char junk[64] = "GET / HTTP/1.0\r\n\r\n";
        ck_assert_int_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    }
    return fd;
}

/* The root closes a refused connection (after a refusal, for a hello with
 * another key): reading it ends with end-of-file. */
static int closed_by_peer(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char b[64];
    for (int64_t until = tt_now_ms() + timeout_ms; tt_now_ms() < until;)
        if (poll(&p, 1, 100) == 1 && read(fd, b, sizeof b) <= 0)
            return 1;
    return 0;
}

START_TEST(rogue_connections_to_the_root_are_refused)
{
    tutti_unique_id_t uid;
    tt_id_t id;
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    memcpy(&id, uid.internal, sizeof id);
    unsigned char wrong[TT_KEY_BYTES];
    memcpy(wrong, id.key, sizeof wrong);
    wrong[0] ^= 0x80;
    /* Both rogues queue at the root before any real rank. A rogue claiming
     * a real rank's number must not take its place. */
    int liar = rogue_connect(&id.root, wrong, 0), junk = rogue_connect(&id.root, wrong, 1);

    pid_t pids[3];
    int codes[3];
    /* tt_spawn_ranks makes its own id: run the ranks on this one instead. */
    fflush(stderr);
    for (int r = 0; r < 3; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            tutti_comm_t comm;
            if (tutti_comm_init(&comm, 3, r, &uid, NULL))
                _exit(100);
            int rc = allreduce_once(comm, r, 3, NULL);
            tutti_comm_destroy(comm);
            _exit(rc);
        }
    }
    ck_assert(!tt_wait_ranks(3, pids, codes, 60));
    for (int r = 0; r < 3; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited %d", r, codes[r]);
    ck_assert_msg(closed_by_peer(liar, 5000), "the wrong-key connection was not closed");
    ck_assert_msg(closed_by_peer(junk, 5000), "the junk connection was not closed");
    close(liar);
    close(junk);
}
END_TEST

/* Rank r of nranks on uid in a child that exits 0 once its communicator
 * formed and worked; out (shared, may be NULL) gets its init's status and
 * last error, as soon as init returns. */
typedef struct {
    int done;
    tutti_status_t st;
    char why[256];
} joined_t;

static pid_t start_rank(const tutti_unique_id_t *uid, int nranks, int r, joined_t *out)
{
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        tutti_comm_t comm;
        tutti_status_t st = tutti_comm_init(&comm, nranks, r, uid, NULL);
        if (out) {
            snprintf(out->why, sizeof out->why, "%s", tutti_comm_last_error(NULL));
            out->st = st;
            __atomic_store_n(&out->done, 1, __ATOMIC_SEQ_CST);
        }
        if (st)
            _exit(out ? 0 : 100);
        int rc = allreduce_once(comm, r, nranks, NULL);
        tutti_comm_destroy(comm);
        _exit(rc);
    }
    return pid;
}

/* A joiner with another key, or as a rank that already joined, is told
 * so by the root: TUTTI_ERR_AUTH at once, saying why, not
 * TUTTI_ERR_CONFIG ("not tutti's bootstrap root"); the job forms anyway. */
START_TEST(a_refused_joiner_is_told_why)
{
    tutti_unique_id_t uid, wrong;
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    tt_id_t id;
    memcpy(&id, uid.internal, sizeof id);
    id.key[0] ^= 0x80;
    wrong = uid;
    memcpy(wrong.internal, &id, sizeof id);
    setenv("TUTTI_TIMEOUT", "20", 1);
    joined_t *two = mmap(NULL, 2 * sizeof *two, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(two, MAP_FAILED);
    memset(two, 0, 2 * sizeof *two);
    pid_t pids[4] = {start_rank(&uid, 3, 0, NULL), -1, -1, -1};
    /* The root waits for ranks 1 and 2: one with another key is refused. */
    tutti_comm_t comm = NULL;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_comm_init(&comm, 3, 1, &wrong, NULL);
    ck_assert_msg(st == TUTTI_ERR_AUTH && tt_now_ms() - t0 < 5000 &&
                      strstr(tutti_comm_last_error(NULL), "key"),
                  "another key gave %s after %lld ms: %s", tutti_status_name(st),
                  (long long)(tt_now_ms() - t0), tutti_comm_last_error(NULL));
    /* Two processes join as rank 1: the second to reach the root is refused
     * before rank 2 comes. */
    pids[1] = start_rank(&uid, 3, 1, &two[0]);
    pids[2] = start_rank(&uid, 3, 1, &two[1]);
    for (int t = 0; t < 20000 && !two[0].done && !two[1].done; t++)
        usleep(1000);
    pids[3] = start_rank(&uid, 3, 2, NULL);
    int codes[4];
    ck_assert(!tt_wait_ranks(4, pids, codes, 60));
    for (int r = 0; r < 4; r++)
        ck_assert_msg(codes[r] == 0, "process %d exited %d", r, codes[r]);
    int refused = two[0].st ? 0 : 1;
    ck_assert_msg(two[1 - refused].st == TUTTI_SUCCESS && two[refused].st == TUTTI_ERR_AUTH &&
                      strstr(two[refused].why, "joined as this rank"),
                  "the second rank 1 got %s: %s", tutti_status_name(two[refused].st), two[refused].why);
    munmap(two, 2 * sizeof *two);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("security");
    TCase *tc = tcase_create("security");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hello_with_the_wrong_key_is_refused);
    tcase_add_test(tc, rogue_connections_to_the_root_are_refused);
    tcase_add_test(tc, a_refused_joiner_is_told_why);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
