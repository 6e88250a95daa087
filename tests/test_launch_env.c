/* SPDX-License-Identifier: MIT */
/* tutti_comm_init_env under torchrun's variables (RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT, LOCAL_RANK), with and without TUTTI_KEY. */
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

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
    snprintf(exe, sizeof exe, "%s/tests/rank-helper", b ? b : ".");
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

int main(void)
{
    Suite *s = suite_create("launch-env");
    TCase *tc = tcase_create("launch-env");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, torchrun_variables_with_a_derived_key);
    tcase_add_test(tc, torchrun_variables_with_tutti_key);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
