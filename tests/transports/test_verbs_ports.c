/* SPDX-License-Identifier: MIT */
/*
 * The verbs transport on hosts whose RDMA ports sit on different networks,
 * against the libibverbs stand-in: a port "alone" reaches nothing outside
 * its own host (soft-RoCE on a veth pair, a NIC cabled to another fabric).
 * Ranks whose nearest port is such a one must still meet their peers on a
 * port they share, saying so in one line; when no pair of ports meets, the
 * pair's first call fails within TUTTI_TIMEOUT naming each pair tried, its
 * GIDs and what to set. RoCE fails at bringing the queue pair up (the peer's address cannot
 * be resolved); InfiniBand only when a write goes unanswered.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "tests/lib/harness.h"

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* tutti-run -n N --nodes 2 rank-helper check, on the devices given. */
static int run_check(int n, const char *devices, char *out, size_t len)
{
    char args[1024], dir[] = "/tmp/tutti-ports-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *builddir = getenv("TT_BUILDDIR") ? getenv("TT_BUILDDIR") : ".";
    snprintf(args, sizeof args, "-n %d --nodes 2 '%s/tests/lib/rank-helper' check '%s'", n, builddir, dir);
    setenv("TTFAKE_DEVICES", devices, 1);
    int rc = tt_run_tool("tutti-run", args, out, len);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    return rc;
}

static void ports_env(const char *tag)
{
    tt_fabric_begin(tag);
    setenv("TUTTI_TRANSPORTS", "verbs", 1); /* no tcp to fall back on */
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_LOG", "info", 1);
    setenv("TUTTI_LOG_SUBSYS", "net", 1);
    /* 17 ms per retry, 4 tries: an unanswered write fails in ~70 ms. */
    setenv("TUTTI_IB_TIMEOUT", "12", 1);
    setenv("TUTTI_IB_RETRY_CNT", "3", 1);
}

static void ports_env_end(void)
{
    unsetenv("TTFAKE_DEVICES");
    unsetenv("TUTTI_LOG");
    unsetenv("TUTTI_LOG_SUBSYS");
    tt_fabric_end();
}

/* Two ranks a host: the second of each prefers fakeroce1, which is alone. */
START_TEST(ports_on_separate_networks_meet_on_a_shared_one)
{
    static char out[65536];
    ports_env("ports");
    ck_assert_msg(run_check(4, "fakeroce0:roce:1,fakeroce1:roce:1:alone", out, sizeof out) == 0, "%s", out);
    ck_assert_int_eq(count(out, " of 4 ok"), 4);
    ck_assert_msg(count(out, "from its fakeroce0 port 1 (GID index 3, ::ffff:10.7.") >= 2, "%s", out);
    ck_assert_msg(strstr(out, "first tried: rank 1's fakeroce1 port 1 (GID index 3, ::ffff:10.7."), "%s",
                  out);
    ck_assert_msg(strstr(out, "bringing the queue pairs up failed: Connection timed out"), "%s", out);
    ck_assert_int_eq(count(out, " error "), 0);
    ports_env_end();
}
END_TEST

static void expect_no_pair(const char *devices, const char *port, const char *cause)
{
    static char out[65536];
    int64_t t0 = tt_now_ms();
    ck_assert_int_ne(run_check(2, devices, out, sizeof out), 0);
    int64_t took = tt_now_ms() - t0;
    ck_assert_msg(took < 20000, "set-up took %lld ms, TUTTI_TIMEOUT is 20 s", (long long)took);
    ck_assert_msg(strstr(out, "rank 0 and rank 1 reach each other through none of their ports") ||
                      strstr(out, "rank 1 and rank 0 reach each other through none of their ports"),
                  "%s", out);
    ck_assert_msg(strstr(out, port), "%s", out);
    ck_assert_msg(strstr(out, cause), "%s", out);
    ck_assert_msg(strstr(out, "set TUTTI_IB_HCA on every host to ports on one network"), "%s", out);
    /* What the application's first call is told, on both ranks (the one
     * that asked for the pair and the one that answered, or that its peer
     * gave up), is that, not a bare status. */
    for (int r = 0; r < 2; r++) {
        char head[64];
        snprintf(head, sizeof head, "rank %d: allreduce gave ", r);
        const char *line = strstr(out, head), *end = line ? strchr(line, '\n') : NULL;
        const char *why = line ? strstr(line, "reach each other through none of their ports") : NULL;
        ck_assert_msg(why && (!end || why < end), "rank %d: %s", r, out);
    }
}

/* RoCE: the peer's address is never resolved, so its queue pair never
 * comes up; InfiniBand comes up by LID, but its first write is not
 * acknowledged. */
START_TEST(no_pair_of_ports_names_them_and_what_to_set)
{
    ports_env("noports");
    expect_no_pair("fakeroce0:roce:1:alone", "rank 0's fakeroce0 port 1 (GID index 3, ::ffff:10.7.",
                   "bringing the queue pairs up failed: Connection timed out");
    expect_no_pair("fakeib0:ib:1:alone", "rank 0's fakeib0 port 1 (LID ",
                   "a write to the peer was not acknowledged: transport retry counter exceeded");
    ports_env_end();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("verbs-ports");
    TCase *tc = tcase_create("verbs-ports");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ports_on_separate_networks_meet_on_a_shared_one);
    tcase_add_test(tc, no_pair_of_ports_names_them_and_what_to_set);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
