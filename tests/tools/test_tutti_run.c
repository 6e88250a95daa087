/* SPDX-License-Identifier: MIT */
/*
 * tutti-run: environment, tagged output, exit status, a dying rank stopping
 * the others with a message naming it, and no process outliving the job,
 * even when tutti-run itself is killed; mpirun's -np; how the ranks it
 * starts report bad and empty TUTTI_* variables.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/sock.h"
#include "tests/lib/harness.h"

static char builddir[512], workdir[512];

static void setup(void)
{
    const char *b = getenv("TT_BUILDDIR");
    snprintf(builddir, sizeof builddir, "%s", b ? b : ".");
    snprintf(workdir, sizeof workdir, "/tmp/tutti-launcher-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(workdir));
}

static void teardown(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", workdir);
}

/* Runs tutti-run with args, capturing stdout+stderr into out; returns its status. */
static int launch(const char *args, char *out, size_t outlen)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/tutti-run' %s 2>&1", builddir, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Key tag of the job tutti-run started, from the key rank 0 wrote. */
static uint64_t job_tag(void)
{
    char path[1024], hex[64] = "";
    unsigned char key[TT_KEY_BYTES];
    snprintf(path, sizeof path, "%s/key.0", workdir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(hex, sizeof hex, f));
    fclose(f);
    for (int i = 0; i < TT_KEY_BYTES; i++) {
        unsigned byte;
        ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &byte), 1);
        key[i] = (unsigned char)byte;
    }
    return tt_key_tag(key);
}

static pid_t read_pid(int rank)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/pid.%d", workdir, rank);
    FILE *f = fopen(path, "r");
    int pid = -1;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = -1;
        fclose(f);
    }
    return pid;
}

/* True once no process with that pid exists (zombies count as gone). */
static int gone_within(pid_t pid, int ms)
{
    for (int t = 0; t < ms; t += 10) {
        char path[64], state = 0;
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
            return 1;
        int scanned = fscanf(f, "%*d %*s %c", &state);
        fclose(f);
        if (scanned == 1 && state == 'Z')
            return 1;
        usleep(10000);
    }
    return 0;
}

START_TEST(sets_the_environment_and_tags_output)
{
    char out[8192], args[2048];
    snprintf(args, sizeof args, "-n 4 --nodes 2 --tag-output '%s/tests/lib/rank-helper' echo '%s'", builddir,
             workdir);
    ck_assert_int_eq(launch(args, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "[0] hello from rank 0 of 4 node 0"));
    ck_assert_ptr_nonnull(strstr(out, "[1] hello from rank 1 of 4 node 0"));
    ck_assert_ptr_nonnull(strstr(out, "[2] hello from rank 2 of 4 node 1"));
    ck_assert_ptr_nonnull(strstr(out, "[3] hello from rank 3 of 4 node 1"));
}
END_TEST

/* torch's env:// rendezvous reads these; the port must be free to bind. */
START_TEST(exports_what_torch_env_rendezvous_reads)
{
    char out[8192], args[2048], addr[64] = "", want[128];
    snprintf(args, sizeof args,
             "-n 5 --nodes 2 --tag-output sh -c 'echo env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE "
             "$MASTER_ADDR $MASTER_PORT'");
    ck_assert_int_eq(launch(args, out, sizeof out), 0);
    /* 5 ranks on 2 simulated hosts: 3 on the first, 2 on the second */
    static const int local[5][2] = {{0, 3}, {1, 3}, {2, 3}, {0, 2}, {1, 2}};
    const char *line = strstr(out, "[0] env ");
    ck_assert_ptr_nonnull(line);
    int port = 0;
    ck_assert_int_eq(sscanf(line, "[0] env %*d %*d %*d %*d %63s %d", addr, &port), 2);
    ck_assert_int_gt(port, 0);
    for (int r = 0; r < 5; r++) {
        snprintf(want, sizeof want, "[%d] env %d 5 %d %d %s %d\n", r, r, local[r][0], local[r][1], addr,
                 port);
        ck_assert_msg(strstr(out, want), "no line '%s' in:\n%s", want, out);
    }
    tt_sockaddr_t sa;
    char text[96];
    snprintf(text, sizeof text, "%s:%d", addr, port);
    ck_assert_int_eq(tt_sock_parse_addr(text, &sa), TUTTI_SUCCESS);
    int fd;
    ck_assert_msg(tt_sock_listen(&sa, &fd) == TUTTI_SUCCESS, "MASTER_PORT %d is not free", port);
    close(fd);
}
END_TEST

/* Tagged output loses nothing: ranks that print a lot and exit at once
 * still have lines in their pipes when the last of them is reaped. */
START_TEST(tagged_output_keeps_every_line)
{
    enum { RANKS = 4, LINES = 20000 };
    char out[256], args[2048], path[600];
    snprintf(path, sizeof path, "%s/tagged", workdir);
    snprintf(args, sizeof args, "-n %d --tag-output seq 1 %d > '%s'", RANKS, LINES, path);
    ck_assert_int_eq(launch(args, out, sizeof out), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int next[RANKS] = {0}, rank, value;
    char line[64];
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(sscanf(line, "[%d] %d", &rank, &value) == 2 && rank >= 0 && rank < RANKS,
                      "not a tagged line: %s", line);
        ck_assert_msg(value == next[rank] + 1, "rank %d: line %d after %d", rank, value, next[rank]);
        next[rank] = value;
    }
    fclose(f);
    for (int r = 0; r < RANKS; r++)
        ck_assert_msg(next[r] == LINES, "rank %d: %d of %d lines arrived", r, next[r], LINES);
}
END_TEST

START_TEST(propagates_the_first_failing_exit_code)
{
    char out[8192], args[2048];
    snprintf(args, sizeof args, "-n 3 --grace 0.2 '%s/tests/lib/rank-helper' exit7 '%s'", builddir, workdir);
    ck_assert_int_eq(launch(args, out, sizeof out), 7);
    ck_assert_ptr_nonnull(strstr(out, "rank 1"));
    ck_assert_ptr_nonnull(strstr(out, "exited with status 7"));
    for (int r = 0; r < 3; r++)
        ck_assert_msg(gone_within(read_pid(r), 2000), "rank %d outlived tutti-run", r);
}
END_TEST

/* Ranks that would choose algorithms differently must not start. */
START_TEST(ranks_must_agree_on_what_steers_the_algorithm_choice)
{
    char out[8192], args[2048];
    snprintf(args, sizeof args,
             "-n 2 sh -c 'if [ $TUTTI_RANK = 1 ]; then export TUTTI_ALGO=rabenseifner; fi; exec \"$0\" check "
             "\"$1\"' "
             "'%s/tests/lib/rank-helper' '%s'",
             builddir, workdir);
    ck_assert_int_eq(launch(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "rank 1 and rank 0 steer the algorithm choice differently") ||
                      strstr(out, "rank 0 and rank 1 steer the algorithm choice differently"),
                  "%s", out);
}
END_TEST

START_TEST(a_killed_rank_stops_the_job)
{
    char out[16384], args[2048];
    snprintf(args, sizeof args, "-n 3 '%s/tests/lib/rank-helper' die '%s'", builddir, workdir);
    ck_assert_int_eq(launch(args, out, sizeof out), 128 + SIGKILL);
    ck_assert_msg(strstr(out, "rank 1") && strstr(out, "killed by signal 9"), "%s", out);
    for (int r = 0; r < 3; r++)
        ck_assert_msg(gone_within(read_pid(r), 2000), "rank %d outlived tutti-run", r);
    /* The survivors reported the dead rank themselves before being stopped. */
    for (int r = 0; r < 3; r += 2) {
        char path[1024], msg[1024] = "";
        snprintf(path, sizeof path, "%s/err.%d", workdir, r);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "rank %d wrote no error report", r);
        ck_assert_ptr_nonnull(fgets(msg, sizeof msg, f));
        fclose(f);
        ck_assert_msg(strstr(msg, "rank 1 died"), "rank %d reported: %s", r, msg);
    }
    ck_assert_int_eq(tt_count_job_segments(job_tag()), 0);
}
END_TEST

/* A rank killed by a signal is the cause, not the rank that exits 1 a
 * moment later because of it, even when the killed rank takes longer to
 * end (a large memory to free) and its end is seen second. */
START_TEST(the_signalled_rank_is_blamed_first)
{
    for (int run = 0; run < 5; run++) {
        char out[16384], args[2048];
        snprintf(args, sizeof args, "-n 3 --grace 0.2 '%s/tests/lib/rank-helper' blame '%s'", builddir, workdir);
        int code = launch(args, out, sizeof out);
        ck_assert_msg(code == 128 + SIGKILL && strstr(out, "rank 0 (pid") &&
                          strstr(out, "killed by signal 9") && !strstr(out, "rank 1 (pid"),
                      "run %d: tutti-run exited %d and said: %s", run, code, out);
        char ready[1100];
        snprintf(ready, sizeof ready, "%s/ready.0", workdir);
        unlink(ready);
    }
}
END_TEST

/* A rank that ended but is not reaped yet (a zombie) has not said how it
 * ended: rank 1's exit must not be blamed before it is. Rank 0 shows as a
 * zombie while a thread of it runs on, until rank 2 kills it. */
START_TEST(an_unreaped_rank_is_not_passed_over)
{
    char out[16384], args[2048], ready[1100];
    snprintf(args, sizeof args, "-n 3 --grace 0.2 '%s/tests/lib/rank-helper' zombie '%s'", builddir, workdir);
    int code = launch(args, out, sizeof out);
    ck_assert_msg(code == 128 + SIGKILL && strstr(out, "rank 0 (pid") && strstr(out, "killed by signal 9") &&
                      !strstr(out, "rank 1 (pid"),
                  "tutti-run exited %d and said: %s", code, out);
    snprintf(ready, sizeof ready, "%s/ready.0", workdir);
    unlink(ready);
}
END_TEST

START_TEST(no_orphans_when_the_launcher_is_killed)
{
    char exe[1024], dir[1024];
    snprintf(exe, sizeof exe, "%s/tutti-run", builddir);
    snprintf(dir, sizeof dir, "%s/tests/lib/rank-helper", builddir);
    pid_t launcher = fork();
    ck_assert_int_ge(launcher, 0);
    if (launcher == 0) {
        execl(exe, exe, "-n", "3", dir, "sleep", workdir, (char *)NULL);
        _exit(127);
    }
    /* Kill only once every rank has joined: a rank killed inside set-up
     * could leave its shm segment behind, which is not what this tests. */
    pid_t pids[3];
    for (int r = 0; r < 3; r++) {
        char ready[1100];
        snprintf(ready, sizeof ready, "%s/ready.%d", workdir, r);
        for (int t = 0; access(ready, F_OK) != 0 && t < 1000; t++)
            usleep(10000);
        ck_assert_msg(access(ready, F_OK) == 0, "rank %d never joined", r);
        pids[r] = read_pid(r);
        ck_assert_int_gt(pids[r], 0);
    }
    kill(launcher, SIGKILL);
    waitpid(launcher, NULL, 0);
    for (int r = 0; r < 3; r++)
        ck_assert_msg(gone_within(pids[r], 3000), "rank %d survived its launcher", r);
}
END_TEST

START_TEST(bad_command_lines_are_rejected)
{
    char out[4096];
    ck_assert_int_eq(launch("-n 0 true", out, sizeof out), 2);
    ck_assert_int_eq(launch("-n 2 --nodes 3 true", out, sizeof out), 2);
    ck_assert_int_eq(launch("-n 2", out, sizeof out), 2);
    ck_assert_int_eq(launch("-n 2 /nonexistent/program", out, sizeof out), 127);
    ck_assert_ptr_nonnull(strstr(out, "cannot run"));
}
END_TEST

START_TEST(np_as_mpirun_users_type_it)
{
    char out[4096], args[2048];
    const char *forms[] = {"-np 2", "-np2", "--np 2", "--np=2"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(args, sizeof args, "%s '%s/tests/lib/rank-helper' check '%s'", forms[i], builddir, workdir);
        ck_assert_msg(launch(args, out, sizeof out) == 0, "%s: %s", forms[i], out);
        ck_assert_msg(strstr(out, "rank 1 of 2 ok") && !strstr(out, "rank 2"), "%s: %s", forms[i], out);
    }
    ck_assert_int_eq(launch("-np x true", out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "-n takes a number of ranks >= 1, not 'x'"));
    ck_assert_int_eq(launch("-n 2x true", out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "not '2x'"));
}
END_TEST

/* Lines of out that contain every one of the strings. */
static int lines_with(const char *out, const char *a, const char *b)
{
    int n = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        n += strstr(buf, a) && (!b || strstr(buf, b));
        line += len + (end != NULL);
    }
    return n;
}

/* A bad variable stops every rank with one message each, under config;
 * an unknown name is one warning per rank; nothing under coll. */
START_TEST(configuration_errors_are_logged_once_per_rank_under_config)
{
    char out[16384], args[2048];
    snprintf(args, sizeof args,
             "-n 2 --grace 5 env TUTTI_PIPELINE=99 TUTTI_ALGOO=ring '%s/tests/lib/rank-helper' check '%s'",
             builddir, workdir);
    ck_assert_int_eq(launch(args, out, sizeof out), 1);
    for (int r = 0; r < 2; r++) {
        char error[128], warning[128];
        snprintf(error, sizeof error, "tutti[%d] error config: TUTTI_PIPELINE=99 is not allowed", r);
        snprintf(warning, sizeof warning, "tutti[%d] warn config: TUTTI_ALGOO is not a tutti variable", r);
        ck_assert_msg(lines_with(out, error, "an integer from 1 to 16") == 1, "rank %d:\n%s", r, out);
        ck_assert_msg(lines_with(out, warning, "did you mean TUTTI_ALGO?") == 1, "rank %d:\n%s", r, out);
    }
    ck_assert_msg(lines_with(out, "tutti[", "TUTTI_PIPELINE") == 2, "one log line per rank:\n%s", out);
    ck_assert_msg(!strstr(out, " coll: "), "%s", out);
}
END_TEST

START_TEST(an_empty_variable_means_its_default)
{
    char out[8192], args[2048];
    snprintf(args, sizeof args,
             "-n 2 env TUTTI_TRANSPORTS= TUTTI_TIMEOUT= TUTTI_PIPELINE= '%s/tests/lib/rank-helper' check '%s'",
             builddir, workdir);
    ck_assert_msg(launch(args, out, sizeof out) == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "rank 1 of 2 ok"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("launcher");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, sets_the_environment_and_tags_output);
    tcase_add_test(tc, exports_what_torch_env_rendezvous_reads);
    tcase_add_test(tc, tagged_output_keeps_every_line);
    tcase_add_test(tc, propagates_the_first_failing_exit_code);
    tcase_add_test(tc, ranks_must_agree_on_what_steers_the_algorithm_choice);
    tcase_add_test(tc, a_killed_rank_stops_the_job);
    tcase_add_test(tc, the_signalled_rank_is_blamed_first);
    tcase_add_test(tc, an_unreaped_rank_is_not_passed_over);
    tcase_add_test(tc, no_orphans_when_the_launcher_is_killed);
    tcase_add_test(tc, bad_command_lines_are_rejected);
    tcase_add_test(tc, np_as_mpirun_users_type_it);
    tcase_add_test(tc, configuration_errors_are_logged_once_per_rank_under_config);
    tcase_add_test(tc, an_empty_variable_means_its_default);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
