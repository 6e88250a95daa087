/* SPDX-License-Identifier: MIT */
/*
 * Dialling a listener whose queue of connections waiting to be accepted is
 * full (its process stopped, busy, or flooded by another local user): the
 * kernel drops the SYNs, and a blocking connect() would wait for its own
 * retries (about two minutes), past the caller's deadline and deaf to its
 * watch. A dial must end at its deadline, or, once past its first try (the
 * kernel's first SYN retry, at 1 s), as soon as its watch says the set-up
 * failed elsewhere; and still connect once there is room.
 */
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sock.h"
#include "tests/lib/harness.h"

#define FILLERS_MAX 64

typedef struct {
    int listen_fd;
    tt_sockaddr_t addr;
    int filler[FILLERS_MAX];
    int nfillers;
} full_t;

/* A loopback listener with a backlog of 0, and connections made to it until
 * one is left waiting: its queue is then full, and further SYNs are dropped. */
static void fill(full_t *f)
{
    f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(f->listen_fd, 0);
    memset(&f->addr, 0, sizeof f->addr);
    f->addr.u.in4.sin_family = AF_INET;
    f->addr.u.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->addr.len = sizeof f->addr.u.in4;
    ck_assert_int_eq(bind(f->listen_fd, &f->addr.u.sa, f->addr.len), 0);
    socklen_t len = f->addr.len;
    ck_assert_int_eq(getsockname(f->listen_fd, &f->addr.u.sa, &len), 0);
    ck_assert_int_eq(listen(f->listen_fd, 0), 0);
    int waiting = 0;
    for (f->nfillers = 0; f->nfillers < FILLERS_MAX && !waiting; f->nfillers++) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        ck_assert_int_ge(s, 0);
        f->filler[f->nfillers] = s;
        if (connect(s, &f->addr.u.sa, f->addr.len) == 0)
            continue;
        struct pollfd p = {.fd = s, .events = POLLOUT};
        waiting = poll(&p, 1, 200) == 0;
    }
    ck_assert_msg(waiting, "the listener's queue never filled (%d connections)", f->nfillers);
}

static void unfill(full_t *f)
{
    for (int i = 0; i < f->nfillers; i++)
        close(f->filler[i]);
    close(f->listen_fd);
}

START_TEST(a_dial_to_a_full_queue_ends_at_its_deadline)
{
    full_t f;
    fill(&f);
    int fd = -1;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tt_sock_connect(&f.addr, t0 + 300, &fd);
    int64_t took = tt_now_ms() - t0;
    ck_assert_msg(st == TUTTI_ERR_TIMEOUT, "the dial gave %s", tutti_status_name(st));
    ck_assert_msg(took < 800, "a 300 ms dial took %lld ms", (long long)took);
    unfill(&f);
}
END_TEST

static int watched;

static tutti_status_t failed_elsewhere(void *arg)
{
    (void)arg;
    watched++;
    return tt_now_ms() >= *(int64_t *)arg ? TUTTI_ERR_PEER_FAILED : TUTTI_SUCCESS;
}

START_TEST(a_dial_to_a_full_queue_ends_when_its_watch_says_so)
{
    full_t f;
    fill(&f);
    int fd = -1;
    int64_t t0 = tt_now_ms(), fails_at = t0 + 200;
    watched = 0;
    tutti_status_t st = tt_sock_connect_watched(&f.addr, t0 + 20000, failed_elsewhere, &fails_at, &fd);
    int64_t took = tt_now_ms() - t0;
    ck_assert_msg(st == TUTTI_ERR_PEER_FAILED, "the dial gave %s", tutti_status_name(st));
    /* Asked once the dial is past its first try (1 s), as between tries. */
    ck_assert_msg(took >= 900 && took < 1600, "the watch failed at 200 ms, the dial ended at %lld ms",
                  (long long)took);
    ck_assert_int_ge(watched, 1);
    unfill(&f);
}
END_TEST

START_TEST(a_dial_waiting_on_a_full_queue_connects_once_there_is_room)
{
    full_t f;
    fill(&f);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) { /* makes room after 300 ms, then takes whatever comes for a while */
        usleep(300 * 1000);
        for (int64_t until = tt_now_ms() + 5000; tt_now_ms() < until;) {
            struct pollfd p = {.fd = f.listen_fd, .events = POLLIN};
            if (poll(&p, 1, 100) > 0)
                (void)accept(f.listen_fd, NULL, NULL);
        }
        _exit(0);
    }
    int fd = -1;
    tutti_status_t st = tt_sock_connect(&f.addr, tt_now_ms() + 5000, &fd);
    ck_assert_msg(st == TUTTI_SUCCESS, "the dial gave %s", tutti_status_name(st));
    ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* callers get a blocking socket, as before */
    close(fd);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    unfill(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sock");
    TCase *tc = tcase_create("sock");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_dial_to_a_full_queue_ends_at_its_deadline);
    tcase_add_test(tc, a_dial_to_a_full_queue_ends_when_its_watch_says_so);
    tcase_add_test(tc, a_dial_waiting_on_a_full_queue_connects_once_there_is_room);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
