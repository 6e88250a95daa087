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
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/clock.h"
#include "harness.h"
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

/* The root closes a refused connection: reading it gives end-of-file. */
static int closed_by_peer(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char b;
    return poll(&p, 1, timeout_ms) == 1 && read(fd, &b, 1) <= 0;
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

int main(void)
{
    Suite *s = suite_create("security");
    TCase *tc = tcase_create("security");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hello_with_the_wrong_key_is_refused);
    tcase_add_test(tc, rogue_connections_to_the_root_are_refused);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
