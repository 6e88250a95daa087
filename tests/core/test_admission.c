/* SPDX-License-Identifier: MIT */
/*
 * Admission: connections without the key (silent ones, half-sent hellos,
 * wrong keys, a flood) cannot delay or stop the ranks that have it, and
 * each refusal is logged once.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/admit.h"
#include "core/clock.h"
#include "core/log.h"
#include "tests/lib/harness.h"

#define SILENT 200
#define HALF 20

/* Opens n connections to addr; half sends the first 10 bytes of a hello. */
static void rogues(const tt_sockaddr_t *addr, int n, int half, int *fds)
{
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(tt_sock_connect(addr, tt_now_ms() + 5000, &fds[i]), TUTTI_SUCCESS);
        if (half) {
            static const char start[10] = "tth1....";
            ck_assert_int_eq(send(fds[i], start, sizeof start, MSG_NOSIGNAL), (ssize_t)sizeof start);
        }
    }
}

static int allreduce_once(tutti_comm_t comm, int r, int p)
{
    int v = r + 1, sum = 0;
    return tutti_allreduce(&v, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL) || sum != p * (p + 1) / 2;
}

START_TEST(silent_connections_do_not_hold_up_the_start)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 1024 && rl.rlim_max >= 1024) {
        rl.rlim_cur = 1024;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    setenv("TUTTI_TIMEOUT", "30", 1);
    tutti_unique_id_t uid;
    tt_id_t id;
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    memcpy(&id, uid.internal, sizeof id);
    /* They all queue at the root before any rank does. */
    int fds[SILENT + HALF];
    rogues(&id.root, SILENT, 0, fds);
    rogues(&id.root, HALF, 1, fds + SILENT);
    pid_t pids[4];
    int codes[4];
    int64_t t0 = tt_now_ms();
    fflush(stderr);
    for (int r = 0; r < 4; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            for (int i = 0; i < SILENT + HALF; i++)
                close(fds[i]);
            tutti_comm_t comm;
            tutti_status_t st = tutti_comm_init(&comm, 4, r, &uid, NULL);
            if (st) {
                fprintf(stderr, "rank %d: %s\n", r, tutti_comm_last_error(NULL));
                _exit(100);
            }
            int rc = allreduce_once(comm, r, 4);
            tutti_comm_destroy(comm);
            _exit(rc);
        }
    }
    ck_assert(!tt_wait_ranks(4, pids, codes, 60));
    int64_t took = tt_now_ms() - t0;
    for (int r = 0; r < 4; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited %d", r, codes[r]);
    ck_assert_msg(took < 10000, "the job took %lld ms to start and finish", (long long)took);
    for (int i = 0; i < SILENT + HALF; i++)
        close(fds[i]);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* Counts the lines of path holding needle. */
static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

START_TEST(admission_serves_many_and_refuses_each_once)
{
    unsigned char key[TT_KEY_BYTES], wrong[TT_KEY_BYTES];
    ck_assert_int_eq(tt_random_key(key), TUTTI_SUCCESS);
    memcpy(wrong, key, sizeof wrong);
    wrong[3] ^= 1;
    tt_sockaddr_t addr;
    int lfd;
    ck_assert_int_eq(tt_sock_pick_addr("", &addr), TUTTI_SUCCESS);
    ck_assert_int_eq(tt_sock_listen(&addr, &lfd), TUTTI_SUCCESS);
    char logpath[] = "/tmp/tutti-admit-XXXXXX";
    int logfd = mkstemp(logpath), saved = dup(2);
    ck_assert(logfd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(logfd, 2);

    /* More silent connections than the waiting room holds, half-sent and
     * wrong-key hellos, then the real ones last. */
    enum { NSILENT = 3 * TT_ADMIT_PENDING, NWRONG = 5, NGOOD = 3 };
    int silent[NSILENT], half[HALF], bad[NWRONG], good[NGOOD];
    rogues(&addr, NSILENT, 0, silent);
    rogues(&addr, HALF, 1, half);
    for (int i = 0; i < NWRONG; i++) {
        ck_assert_int_eq(tt_sock_connect(&addr, tt_now_ms() + 5000, &bad[i]), TUTTI_SUCCESS);
        ck_assert_int_eq(tt_hello_send(bad[i], wrong, 1, 4, 0, tt_now_ms() + 1000), TUTTI_SUCCESS);
    }
    for (int i = 0; i < NGOOD; i++) {
        ck_assert_int_eq(tt_sock_connect(&addr, tt_now_ms() + 5000, &good[i]), TUTTI_SUCCESS);
        ck_assert_int_eq(tt_hello_send(good[i], key, i + 1, 4, 0, tt_now_ms() + 1000), TUTTI_SUCCESS);
    }
    tt_admit_t a;
    tt_admit_init(&a, lfd, key, TT_SUB_INIT, "the test's listener");
    int64_t t0 = tt_now_ms();
    int seen = 0;
    for (int i = 0; i < NGOOD; i++) {
        int fd;
        tt_hello_t h;
        ck_assert_int_eq(tt_admit_next(&a, t0 + 5000, &fd, &h), TUTTI_SUCCESS);
        ck_assert(h.rank >= 1 && h.rank <= NGOOD);
        seen |= 1 << h.rank;
        close(fd);
    }
    int64_t took = tt_now_ms() - t0;
    ck_assert_int_eq(seen, 0xe);
    /* The rest run out of time; each is refused once. */
    int fd;
    tt_hello_t h;
    ck_assert_int_eq(tt_admit_next(&a, tt_now_ms() + TT_ADMIT_HELLO_MS + 500, &fd, &h), TUTTI_ERR_TIMEOUT);
    ck_assert_int_eq(a.npending, 0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(logfd);
    ck_assert_msg(took < TT_ADMIT_HELLO_MS, "the keyed connections waited %lld ms", (long long)took);
    ck_assert_int_eq((int)a.refused, NSILENT + HALF + NWRONG);
    ck_assert_int_eq(count_lines(logpath, "refused the connection from"), NSILENT + HALF + NWRONG);
    ck_assert_int_eq(count_lines(logpath, "wrong key"), NWRONG);
    unlink(logpath);
    for (int i = 0; i < NSILENT; i++)
        close(silent[i]);
    for (int i = 0; i < HALF; i++)
        close(half[i]);
    for (int i = 0; i < NWRONG; i++)
        close(bad[i]);
    for (int i = 0; i < NGOOD; i++)
        close(good[i]);
    tt_admit_close(&a);
    close(lfd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("admission");
    TCase *tc = tcase_create("admission");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, silent_connections_do_not_hold_up_the_start);
    tcase_add_test(tc, admission_serves_many_and_refuses_each_once);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
