/* SPDX-License-Identifier: MIT */
/*
 * The recovery messages under attack (src/comm/rescue_wire.c): their code
 * is SipHash-2-4; a member checks a coordinator's answer field by field
 * before it trusts it; a hello for the next shrink waits for it; a process
 * that takes a dead coordinator's address learns nothing and holds nobody
 * up; a flood of silent connections costs a shrink little.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/handle.h"
#include "comm/rescue.h"
#include "comm/shrink.h"
#include "core/clock.h"
#include "tests/lib/exact.h"
#include "tests/lib/harness.h"

#define PROMPT_MS 5000 /* every wait here must end well before TUTTI_TIMEOUT */

/* The code every recovery message carries is SipHash-2-4 with its 128-bit
 * output: the reference vectors (key 00..0f, messages 00, 00 01, ...). */
START_TEST(the_code_is_siphash_2_4_128)
{
    static const char *const want[] = {"a3817f04ba25a8e66df67214c7550293", "da87c1d86b99af44347659119b22fc45",
                                       "8177228da4a45dc7fca38bdef60affe4"};
    unsigned char key[16], msg[3], out[TT_MAC_BYTES];
    for (int i = 0; i < 16; i++)
        key[i] = (unsigned char)i;
    for (int n = 0; n < 3; n++) {
        msg[n] = (unsigned char)n;
        tt_mac(key, msg, (size_t)n, out);
        char hex[2 * TT_MAC_BYTES + 1];
        for (int i = 0; i < TT_MAC_BYTES; i++)
            snprintf(hex + 2 * i, 3, "%02x", out[i]);
        ck_assert_str_eq(hex, want[n]);
    }
    unsigned char a[TT_MAC_BYTES], b[TT_MAC_BYTES];
    memcpy(a, out, sizeof a);
    memcpy(b, out, sizeof b);
    ck_assert(tt_mac_equal(a, b));
    b[TT_MAC_BYTES - 1] ^= 1;
    ck_assert(!tt_mac_equal(a, b));
}
END_TEST

/* Rank 0 dies, so the star is blind, and a process that is not of the job
 * takes rank 1's TCP address (each rank is a simulated host of its own, so
 * the listeners are TCP). Case 0: rank 1 died, and the impostor listens in
 * silence; case 1: rank 1 left the communicator alive (aborted it) and the
 * impostor answers each hello with a challenge of its own making; case 2:
 * the same, followed by an answer of its own making. The survivors must
 * shrink at once without rank 1, and the impostor must get nothing but
 * hellos: no key, no list, no set-up record. */
typedef struct {
    int ready, addr_set, leave, left, impostor_up;
    tt_sockaddr_t addr; /* rank 1's TCP listener */
} impostor_t;

static int impostor_rank(tutti_comm_t comm, int r, int p, void *arg)
{
    impostor_t *s = arg;
    TT_FAIL_IF(tt_round_ok(comm), "rank %d: collectives before", r);
    tt_comm_t *inner = tt_comm_lookup(comm, NULL);
    if (r == 2) {
        s->addr = inner->rescue[1];
        __atomic_store_n(&s->addr_set, 1, __ATOMIC_SEQ_CST);
    }
    __atomic_add_fetch(&s->ready, 1, __ATOMIC_SEQ_CST);
    if (r == 1) {
        while (!__atomic_load_n(&s->leave, __ATOMIC_SEQ_CST))
            usleep(1000);
        tutti_comm_abort(comm);
        __atomic_store_n(&s->left, 1, __ATOMIC_SEQ_CST);
    }
    if (r < 2)
        for (;;)
            pause(); /* the test kills it */
    while (!__atomic_load_n(&s->impostor_up, __ATOMIC_SEQ_CST))
        usleep(1000);
    tutti_comm_t next = NULL;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
    int64_t took = tt_now_ms() - t0;
    TT_FAIL_IF(st || took > PROMPT_MS, "rank %d: shrink gave %s after %lld ms: %s", r, tutti_status_name(st),
               (long long)took, tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_size_of(next) != p - 2 || tt_round_ok(next), "rank %d: the shrunk communicator", r);
    tutti_comm_destroy(next);
    tutti_comm_abort(comm);
    return -1;
}

/* What the impostor answers a hello with: a challenge with a made-up code
 * (and, with answer, a made-up answer that would ask for -4 members). */
static void forge(int fd, const unsigned char *hello, int answer)
{
    tt_rescue_hdr_t h;
    memcpy(&h, hello, sizeof h);
    unsigned char msg[2 * sizeof h + 2 * TT_MAC_BYTES + sizeof(tt_rescue_decision_t) + 4];
    memset(msg, 0x5a, sizeof msg);
    h.kind = TT_RESCUE_CHALLENGE;
    h.to = h.rank;
    h.rank = 1;
    h.len = TT_MAC_BYTES;
    memcpy(msg, &h, sizeof h);
    size_t len = sizeof h + TT_MAC_BYTES;
    if (answer) {
        tt_rescue_decision_t d = {.status = 0, .nmembers = -4, .newrank = 1};
        h.kind = TT_RESCUE_ANSWER;
        h.len = sizeof d + 4 + TT_MAC_BYTES;
        memcpy(msg + len, &h, sizeof h);
        memcpy(msg + len + sizeof h, &d, sizeof d);
        len += sizeof h + h.len;
    }
    if (send(fd, msg, len, MSG_NOSIGNAL) < 0)
        return; /* the member already went */
}

/* Serves the impostor's listener until the survivors exit (codes gets
 * their exit status, -1 while running); returns the most bytes one
 * connection sent, and how many connections came. */
static size_t impostor_serve(int lfd, int mode, const pid_t *pids, int *codes, int *nconn)
{
    int fds[64], n = 0, alive = 2;
    size_t got[64] = {0}, most = 0;
    unsigned char buf[4096];
    for (int64_t until = tt_now_ms() + 3 * PROMPT_MS; alive && tt_now_ms() < until;) {
        struct pollfd p[65] = {{.fd = lfd, .events = POLLIN}};
        for (int i = 0; i < n; i++)
            p[i + 1] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        poll(p, (nfds_t)n + 1, 20);
        if ((p[0].revents & POLLIN) && n < 64)
            fds[n++] = accept(lfd, NULL, NULL);
        for (int i = 0; i < n; i++) {
            ssize_t k = fds[i] >= 0 && (p[i + 1].revents & POLLIN) ? recv(fds[i], buf, sizeof buf, 0) : 0;
            if (k <= 0)
                continue;
            if (mode && got[i] < sizeof(tt_rescue_hdr_t) && got[i] + (size_t)k >= sizeof(tt_rescue_hdr_t))
                forge(fds[i], buf, mode == 2);
            got[i] += (size_t)k;
            most = got[i] > most ? got[i] : most;
        }
        alive = 0;
        for (int r = 2; r < 4; r++) {
            int status;
            if (codes[r] < 0 && waitpid(pids[r], &status, WNOHANG) == pids[r])
                codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            alive += codes[r] < 0;
        }
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    *nconn = n;
    return most;
}

START_TEST(a_process_at_a_dead_coordinators_address_learns_nothing)
{
    impostor_t *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(s, MAP_FAILED);
    memset(s, 0, sizeof *s);
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_set_ranks_per_node(1);
    pid_t pids[4];
    tt_spawn_ranks(4, impostor_rank, s, pids);
    while (__atomic_load_n(&s->ready, __ATOMIC_SEQ_CST) < 4)
        usleep(1000);
    kill(pids[0], SIGKILL);
    waitpid(pids[0], NULL, 0);
    if (_i == 0) {
        kill(pids[1], SIGKILL);
        waitpid(pids[1], NULL, 0);
    } else {
        __atomic_store_n(&s->leave, 1, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n(&s->left, __ATOMIC_SEQ_CST))
            usleep(1000);
    }
    int lfd = socket(s->addr.u.sa.sa_family, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ck_assert_msg(bind(lfd, &s->addr.u.sa, s->addr.len) == 0 && listen(lfd, 64) == 0,
                  "the impostor could not take rank 1's address");
    __atomic_store_n(&s->impostor_up, 1, __ATOMIC_SEQ_CST);
    int nconn = 0, codes[4] = {-1, -1, -1, -1};
    size_t most = impostor_serve(lfd, _i, pids, codes, &nconn);
    close(lfd);
    for (int r = 1; r < 4; r++)
        if (codes[r] < 0) {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], NULL, 0);
        }
    tt_set_ranks_per_node(0);
    unsetenv("TUTTI_TIMEOUT");
    for (int r = 2; r < 4; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited %d", r, codes[r]);
    ck_assert_msg(most <= sizeof(tt_rescue_hdr_t), "the impostor received %zu bytes on one connection", most);
    ck_assert_msg(_i == 0 || nconn > 0, "no survivor tried rank 1's address: the case tests nothing");
    munmap(s, sizeof *s);
}
END_TEST

/* 3,000 silent connections at rank 0's TCP listener when rank 3 dies: a prompt shrink, few log lines. */
typedef struct {
    int ready, go;
    tt_sockaddr_t addr; /* rank 0's TCP listener */
} flood_t;

static int flood_rank(tutti_comm_t comm, int r, int p, void *arg)
{
    flood_t *s = arg;
    if (r == 1)
        s->addr = tt_comm_lookup(comm, NULL)->rescue[0];
    __atomic_add_fetch(&s->ready, 1, __ATOMIC_SEQ_CST);
    while (r == 3 || !__atomic_load_n(&s->go, __ATOMIC_SEQ_CST))
        usleep(1000); /* rank 3: until it is killed */
    FILE *log = tmpfile();
    int err = dup(2), lines = 0;
    TT_FAIL_IF(!log || err < 0 || dup2(fileno(log), 2) < 0, "rank %d: no file for its log", r);
    tutti_comm_t next = NULL;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEAD, &next);
    int64_t took = tt_now_ms() - t0;
    dup2(err, 2);
    rewind(log);
    for (int ch; (ch = fgetc(log)) != EOF;)
        lines += ch == '\n';
    TT_FAIL_IF(st || took > PROMPT_MS || lines > 2,
               "rank %d: shrink gave %s after %lld ms in %d log lines: %s", r, tutti_status_name(st),
               (long long)took, lines, tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_size_of(next) != p - 1 || tt_round_ok(next), "rank %d: the shrunk communicator", r);
    tutti_comm_destroy(next);
    tutti_comm_abort(comm);
    return -1;
}

START_TEST(a_flood_of_silent_connections_costs_little)
{
    enum { FLOOD = 3000 };
    static int fds[FLOOD];
    flood_t *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(s != MAP_FAILED);
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", "tcp", 1);
    tt_set_ranks_per_node(1);
    pid_t pids[4];
    tt_spawn_ranks(4, flood_rank, s, pids);
    while (__atomic_load_n(&s->ready, __ATOMIC_SEQ_CST) < 4)
        usleep(1000);
    int n = 0, codes[4]; /* each waits in the backlog, or for its SYN to be taken */
    while (n < FLOOD && (fds[n] = socket(s->addr.u.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK, 0)) >= 0 &&
           (connect(fds[n], &s->addr.u.sa, s->addr.len) == 0 || errno == EINPROGRESS))
        n++;
    kill(pids[3], SIGKILL);
    __atomic_store_n(&s->go, 1, __ATOMIC_SEQ_CST);
    tt_wait_ranks(4, pids, codes, 60);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    tt_set_ranks_per_node(0);
    unsetenv("TUTTI_TIMEOUT");
    ck_assert_msg(n == FLOOD, "only %d connections could be made", n);
    for (int r = 0; r < 3; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited %d", r, codes[r]);
}
END_TEST

/* White box: a member checks the coordinator's answer before it trusts
 * anything in it: the code over its own nonce and the key, the shrink it
 * is of, then every field. Coordinator rank 0 answers member rank 2 of 4;
 * rank 1 is excluded. wrong: 1 the nonce, 2 the shrink (the next one). */
static tutti_status_t answer_with(const tt_rescue_decision_t *d, const unsigned char *member, int wrong_key,
                                  int wrong, unsigned char *key_out)
{
    unsigned char excluded[4] = {0, 1, 0, 0}, dead[4] = {0}, got[4];
    tt_shrink_t coord = {.n = 4, .me = 0, .excluded = excluded, .dead = dead, .exclude_hash = 7};
    tt_shrink_t mem = coord;
    mem.me = 2;
    coord.no = wrong == 2;
    mem.member = got;
    memset(coord.key, 0x11, sizeof coord.key);
    memset(mem.key, wrong_key ? 0x12 : 0x11, sizeof mem.key);
    unsigned char m[TT_RESCUE_NONCE], c[TT_RESCUE_NONCE];
    tt_rescue_nonce(m);
    tt_rescue_nonce(c);
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    unsigned char other[TT_RESCUE_NONCE];
    memcpy(other, m, sizeof other);
    other[0] ^= 1;
    ck_assert_int_eq(tt_rescue_send(&coord, sv[0], TT_RESCUE_ANSWER, 2, c, wrong == 1 ? other : m, d,
                                    sizeof *d, member, tt_now_ms() + 1000),
                     TUTTI_SUCCESS);
    tutti_status_t st = tt_rescue_read_answer(&mem, 0, sv[1], m, c);
    if (key_out)
        memcpy(key_out, mem.d.key, TT_KEY_BYTES);
    close(sv[0]);
    close(sv[1]);
    return st;
}

START_TEST(answers_are_checked_field_by_field)
{
    const unsigned char members[4] = {1, 0, 1, 1};
    tt_rescue_decision_t good = {.status = 0, .nmembers = 3, .newrank = 1, .exclude_hash = 7};
    /* Sent in the clear here, the key comes out changed: the member unmasks it. */
    unsigned char key[TT_KEY_BYTES];
    ck_assert_int_eq(answer_with(&good, members, 0, 0, key), TUTTI_SUCCESS);
    ck_assert_int_ne(memcmp(key, good.key, TT_KEY_BYTES), 0);
    ck_assert_int_eq(answer_with(&good, members, 1, 0, NULL), TUTTI_ERR_AUTH);
    ck_assert_int_eq(answer_with(&good, members, 0, 1, NULL), TUTTI_ERR_AUTH);
    ck_assert_int_eq(answer_with(&good, members, 0, 2, NULL), TUTTI_ERR_AUTH);
    tt_rescue_decision_t bad = good;
    bad.nmembers = -4;
    ck_assert_int_eq(answer_with(&bad, members, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    bad = good;
    bad.newrank = 2;
    ck_assert_int_eq(answer_with(&bad, members, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    bad = good;
    bad.status = 99;
    ck_assert_int_eq(answer_with(&bad, members, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    bad = good;
    memset(bad.why, 'x', sizeof bad.why);
    ck_assert_int_eq(answer_with(&bad, members, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    bad = good;
    bad.exclude_hash = 8;
    ck_assert_int_eq(answer_with(&bad, members, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    const unsigned char without_me[4] = {1, 0, 0, 1}, with_excluded[4] = {1, 1, 1, 1}, two[4] = {1, 0, 2, 1};
    bad = good;
    bad.nmembers = 2;
    bad.newrank = 0;
    ck_assert_int_eq(answer_with(&bad, without_me, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    bad.nmembers = 4;
    bad.newrank = 2;
    ck_assert_int_eq(answer_with(&bad, with_excluded, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    ck_assert_int_eq(answer_with(&good, two, 0, 0, NULL), TUTTI_ERR_INTERNAL);
    /* A failure carries no members and no rank. */
    tt_rescue_decision_t failed = {.status = TUTTI_ERR_MISMATCH, .newrank = -1, .exclude_hash = 7};
    const unsigned char none[4] = {0};
    ck_assert_int_eq(answer_with(&failed, none, 0, 0, NULL), TUTTI_SUCCESS);
    ck_assert_int_eq(answer_with(&failed, members, 0, 0, NULL), TUTTI_ERR_INTERNAL);
}
END_TEST

/* White box: a rank one shrink ahead (its last shrink ended before the
 * coordinator's did) says hello while the coordinator still serves its
 * last shrink. That shrink leaves the hello alone (closing it would tell
 * the member its coordinator is gone), and the next one challenges it. */
START_TEST(a_hello_for_the_next_shrink_waits_for_it)
{
    tt_comm_t comm;
    memset(&comm, 0, sizeof comm);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "tutti-test-held-%d", (int)getpid());
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(addr.sun_path + 1));
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0), mfd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert(lfd >= 0 && mfd >= 0);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&addr, alen), 0);
    ck_assert_int_eq(listen(lfd, 8), 0);
    comm.rescue_fd = -1;
    comm.rescue_local_fd = lfd;
    comm.timeout_ms = 1000;
    unsigned char excluded[4] = {0}, dead[4] = {0};
    tt_rescue_member_t joined[4];
    for (int r = 0; r < 4; r++)
        joined[r].fd = -1;
    tt_shrink_t coord = {
        .comm = &comm, .n = 4, .me = 0, .excluded = excluded, .dead = dead, .joined = joined};
    tt_shrink_t mem = coord;
    mem.me = 3;
    mem.no = 1;
    unsigned char m[TT_RESCUE_NONCE];
    tt_rescue_nonce(m);
    ck_assert_int_eq(connect(mfd, (struct sockaddr *)&addr, alen), 0);
    ck_assert_int_eq(
        tt_rescue_send(&mem, mfd, TT_RESCUE_HELLO, 0, m, NULL, NULL, 0, NULL, tt_now_ms() + 1000),
        TUTTI_SUCCESS);
    tt_rescue_inbox_t *in = tt_rescue_inbox_new(&coord);
    ck_assert_ptr_nonnull(in);
    tt_rescue_inbox_serve(in, 1, -1, tt_now_ms() + 200);
    tt_rescue_inbox_free(in);
    struct pollfd p = {.fd = mfd, .events = POLLIN};
    ck_assert_msg(poll(&p, 1, 100) == 0, "shrink #1 answered or closed a hello for shrink #2");
    coord.no = 1;
    in = tt_rescue_inbox_new(&coord);
    ck_assert_ptr_nonnull(in);
    tt_rescue_inbox_serve(in, 1, -1, tt_now_ms() + 200);
    unsigned char theirs[TT_RESCUE_NONCE];
    tutti_status_t st = tt_rescue_join(&mem, 0, mfd, m, theirs);
    tt_rescue_inbox_free(in);
    ck_assert_msg(st == TUTTI_SUCCESS, "shrink #2 did not challenge the hello it was held for: %s",
                  tutti_status_name(st));
    close(mfd);
    tt_rescue_close(&comm, 1);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"the_code_is_siphash_2_4_128", the_code_is_siphash_2_4_128, 0, 0},
        {"answers_are_checked_field_by_field", answers_are_checked_field_by_field, 0, 0},
        {"a_hello_for_the_next_shrink_waits_for_it", a_hello_for_the_next_shrink_waits_for_it, 0, 0},
        {"a_process_at_a_dead_coordinators_address_learns_nothing",
         a_process_at_a_dead_coordinators_address_learns_nothing, 0, 3},
        {"a_flood_of_silent_connections_costs_little", a_flood_of_silent_connections_costs_little, 0, 0},
    };
    return tt_run_cases("rescue-wire", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
