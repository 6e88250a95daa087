/* SPDX-License-Identifier: MIT */
/* tutti_comm_init_env under torchrun's variables (RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT, LOCAL_RANK), with and without TUTTI_KEY, with
 * another program on MASTER_PORT + 1, and with no launcher at all. */
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"

#include "tests/lib/harness.h"

/* A port that is free now, and the one after it (tutti's root uses +1). */
static int free_port_pair(void)
{
    for (int tries = 0; tries < 50; tries++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        bind(s, (struct sockaddr *)&a, sizeof a);
        getsockname(s, (struct sockaddr *)&a, &len);
        int port = ntohs(a.sin_port);
        close(s);
        int t = socket(AF_INET, SOCK_STREAM, 0);
        a.sin_port = htons((uint16_t)(port + 1));
        int ok = port < 65000 && bind(t, (struct sockaddr *)&a, sizeof a) == 0;
        close(t);
        if (ok)
            return port;
    }
    return -1;
}

static void run_torchrun_job(int n, const char *key)
{
    const char *b = getenv("TT_BUILDDIR");
    char exe[1024];
    snprintf(exe, sizeof exe, "%s/tests/lib/rank-helper", b ? b : ".");
    int port = free_port_pair();
    ck_assert_int_gt(port, 0);
    pid_t pids[8];
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            char v[32];
            unsetenv("TUTTI_RANK");
            unsetenv("TUTTI_NRANKS");
            unsetenv("TUTTI_ROOT_ADDR");
            if (key)
                setenv("TUTTI_KEY", key, 1);
            else
                unsetenv("TUTTI_KEY");
            snprintf(v, sizeof v, "%d", r);
            setenv("RANK", v, 1);
            setenv("LOCAL_RANK", v, 1);
            snprintf(v, sizeof v, "%d", n);
            setenv("WORLD_SIZE", v, 1);
            snprintf(v, sizeof v, "%d", port);
            setenv("MASTER_PORT", v, 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            execl(exe, exe, "check", "/tmp", (char *)NULL);
            _exit(127);
        }
    }
    int codes[8];
    ck_assert(!tt_wait_ranks(n, pids, codes, 60));
    for (int r = 0; r < n; r++)
        ck_assert_msg(codes[r] == 0, "rank %d exited %d", r, codes[r]);
}

START_TEST(torchrun_variables_with_a_derived_key)
{
    run_torchrun_job(3, NULL);
}
END_TEST

START_TEST(torchrun_variables_with_tutti_key)
{
    run_torchrun_job(2, "00112233445566778899aabbccddeeff");
}
END_TEST

/* A program that is not tutti, holding a port: it answers every connection
 * as a web server would, and closes it. */
typedef struct {
    int fd;
    volatile int stop;
} squatter_t;

static void *squat(void *arg)
{
    squatter_t *sq = arg;
    while (!sq->stop) {
        int c = accept(sq->fd, NULL, NULL);
        if (c < 0)
            continue;
        static const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        if (write(c, reply, sizeof reply - 1) < 0)
            perror("squatter");
        close(c);
    }
    return NULL;
}

/* Starts rank r of n as torchrun would, its stderr into err_path. */
static pid_t start_torchrun_rank(int r, int n, int port, const char *err_path)
{
    const char *b = getenv("TT_BUILDDIR");
    char exe[1024];
    snprintf(exe, sizeof exe, "%s/tests/lib/rank-helper", b ? b : ".");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char v[32];
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        unsetenv("TUTTI_RANK");
        unsetenv("TUTTI_NRANKS");
        unsetenv("TUTTI_ROOT_ADDR");
        unsetenv("TUTTI_KEY");
        setenv("TUTTI_TIMEOUT", "60", 1);
        snprintf(v, sizeof v, "%d", r);
        setenv("RANK", v, 1);
        snprintf(v, sizeof v, "%d", n);
        setenv("WORLD_SIZE", v, 1);
        snprintf(v, sizeof v, "%d", port);
        setenv("MASTER_PORT", v, 1);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        execl(exe, exe, "check", "/tmp", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void read_text(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
}

/*
 * Another program holds MASTER_PORT + 1: rank 0 cannot serve there and
 * says so, naming the variables; rank 1 reaches the other program and
 * tells it is not tutti. Both at once, not after TUTTI_TIMEOUT (60 s).
 */
START_TEST(another_program_on_master_port_plus_one_is_named_at_once)
{
    int port = free_port_pair();
    ck_assert_int_gt(port, 0);
    squatter_t sq = {.fd = socket(AF_INET, SOCK_STREAM, 0)};
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)(port + 1))};
    ck_assert_int_eq(bind(sq.fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(sq.fd, 16), 0);
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, squat, &sq), 0);
    char paths[2][64], text[2][4096], want[128];
    pid_t pids[2];
    int codes[2];
    int64_t t0 = tt_now_ms();
    for (int r = 0; r < 2; r++) {
        snprintf(paths[r], sizeof paths[r], "/tmp/tutti-launch-env-%d.%d", (int)getpid(), r);
        pids[r] = start_torchrun_rank(r, 2, port, paths[r]);
    }
    ck_assert(!tt_wait_ranks(2, pids, codes, 60));
    int64_t took = tt_now_ms() - t0;
    for (int r = 0; r < 2; r++) {
        read_text(paths[r], text[r], sizeof text[r]);
        unlink(paths[r]);
        ck_assert_msg(codes[r] != 0, "rank %d joined a job whose root is not tutti", r);
    }
    snprintf(want, sizeof want, "rank 0 cannot listen on 127.0.0.1:%d for tutti's bootstrap", port + 1);
    ck_assert_msg(strstr(text[0], want), "rank 0 said:\n%s", text[0]);
    snprintf(want, sizeof want, "MASTER_PORT + TUTTI_ROOT_PORT_OFFSET = %d + 1", port);
    ck_assert_msg(strstr(text[0], want) && strstr(text[0], "config:"), "rank 0 said:\n%s", text[0]);
    snprintf(want, sizeof want, "the program at 127.0.0.1:%d is not tutti's bootstrap root", port + 1);
    ck_assert_msg(strstr(text[1], want) && strstr(text[1], "MASTER_PORT + TUTTI_ROOT_PORT_OFFSET") &&
                      strstr(text[1], " config: rank 1: the program at"),
                  "rank 1 said:\n%s", text[1]);
    ck_assert_msg(took < 10000, "the ranks took %lld ms to give up", (long long)took);
    sq.stop = 1;
    shutdown(sq.fd, SHUT_RDWR);
    close(sq.fd);
    pthread_join(thread, NULL);
}
END_TEST

/* No launcher variables: one rank on its own, as an MPI singleton. */
START_TEST(a_rank_without_a_launcher_runs_alone)
{
    unsetenv("TUTTI_RANK");
    unsetenv("TUTTI_NRANKS");
    unsetenv("TUTTI_ROOT_ADDR");
    unsetenv("TUTTI_KEY");
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("PMIX_NAMESPACE");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unsetenv("SLURM_STEP_NUM_TASKS");
    char out[4096];
    ck_assert_int_eq(tt_run_tool("tests/lib/rank-helper", "check /tmp", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "rank 0 of 1 ok"), "%s", out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("launch-env");
    TCase *tc = tcase_create("launch-env");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, torchrun_variables_with_a_derived_key);
    tcase_add_test(tc, torchrun_variables_with_tutti_key);
    tcase_add_test(tc, another_program_on_master_port_plus_one_is_named_at_once);
    tcase_add_test(tc, a_rank_without_a_launcher_runs_alone);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
