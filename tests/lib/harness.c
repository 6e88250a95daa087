/* SPDX-License-Identifier: MIT */
/* Fork-based multi-rank runner for the test suites. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/env_config.h"
#include "tests/lib/harness.h"

static int ranks_per_node;
static int64_t rank_timeout_ms;
static uint64_t last_job_tag;

uint64_t tt_last_job_tag(void)
{
    return last_job_tag;
}

void tt_set_ranks_per_node(int n)
{
    ranks_per_node = n;
}

void tt_set_rank_timeout_ms(int64_t ms)
{
    rank_timeout_ms = ms;
}

/* Check reports no skipped case: a case that cannot run here fails with a
 * message that starts with this, and tt_run_suite reports it as skipped. */
#define TT_SKIP_MARK "cannot run here: "

void tt_skip(const char *why)
{
    ck_abort_msg(TT_SKIP_MARK "%s", why);
}

void tt_spawn_ranks(int nranks, tt_rank_fn fn, void *arg, pid_t *pids)
{
    tutti_unique_id_t id;
    ck_assert_int_eq(tutti_get_unique_id(&id), TUTTI_SUCCESS);
    tt_id_t tid;
    memcpy(&tid, id.internal, sizeof tid);
    last_job_tag = tt_key_tag(tid.key);
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < nranks; r++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            tutti_comm_t comm;
            tutti_comm_params_t params = {0};
            if (ranks_per_node > 0) {
                params.field_mask = TUTTI_PARAM_NODE_ID;
                params.node_id = r / ranks_per_node;
            }
            if (rank_timeout_ms > 0) {
                params.field_mask |= TUTTI_PARAM_TIMEOUT_MS;
                params.timeout_ms = rank_timeout_ms + r;
            }
            tutti_status_t st = tutti_comm_init(&comm, nranks, r, &id, &params);
            if (st) {
                fprintf(stderr, "rank %d: init failed: %s: %s\n", r, tutti_strerror(st),
                        tutti_comm_last_error(NULL));
                _exit(100);
            }
            int rc = fn(comm, r, nranks, arg);
            if (rc == 0 && tutti_comm_destroy(comm) != TUTTI_SUCCESS)
                rc = 101;
            _exit(rc < 0 ? 0 : rc);
        }
        pids[r] = pid;
    }
}

int tt_wait_ranks(int nranks, const pid_t *pids, int *codes, int timeout_s)
{
    int left = nranks, timed_out = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int r = 0; r < nranks; r++)
        codes[r] = -1;
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (int r = 0; r < nranks; r++)
                if (pids[r] == pid) {
                    codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                    left--;
                }
            continue;
        }
        if (pid < 0 && errno == ECHILD)
            break;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > timeout_s && !timed_out) {
            timed_out = 1;
            for (int r = 0; r < nranks; r++)
                if (codes[r] < 0)
                    kill(pids[r], SIGKILL);
        }
        usleep(2000);
    }
    return timed_out;
}

void tt_run_ranks(int nranks, tt_rank_fn fn, void *arg, int timeout_s)
{
    pid_t *pids = calloc((size_t)nranks, sizeof *pids);
    int *codes = calloc((size_t)nranks, sizeof *codes);
    ck_assert(pids && codes);
    tt_spawn_ranks(nranks, fn, arg, pids);
    int timed_out = tt_wait_ranks(nranks, pids, codes, timeout_s);
    ck_assert_msg(!timed_out, "ranks did not finish within %d s", timeout_s);
    /* Every rank that failed is named: the first to fail is often not the
     * cause (a rank killed by a signal says nothing; the others report it lost). */
    char failed[512] = "";
    size_t len = 0;
    for (int r = 0; r < nranks && len < sizeof failed; r++)
        if (codes[r] != 0)
            len += (size_t)snprintf(failed + len, sizeof failed - len, "%srank %d of %d %s %d", len ? "; " : "",
                                    r, nranks, codes[r] > 128 ? "was killed by signal" : "exited with",
                                    codes[r] > 128 ? codes[r] - 128 : codes[r]);
    ck_assert_msg(!failed[0], "%s", failed);
    free(pids);
    free(codes);
}

/* Copies Check's TAP to stdout, a case failed by tt_skip written as a
 * skipped one ("ok N - CASE # SKIP why"); returns how many there were. */
static int copy_tap(FILE *tap)
{
    char line[4096];
    int skipped = 0;
    while (fgets(line, sizeof line, tap)) {
        char *mark = strstr(line, ": " TT_SKIP_MARK);
        if (strncmp(line, "not ok ", 7) == 0 && mark) {
            *mark = '\0';
            printf("ok %s # SKIP %s", line + 7, mark + 2 + strlen(TT_SKIP_MARK));
            skipped++;
        } else {
            fputs(line, stdout);
        }
    }
    return skipped;
}

int tt_run_suite(Suite *s)
{
    char path[] = "/tmp/tutti-tap-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(s);
    srunner_set_tap(sr, path);
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    FILE *tap = fdopen(fd, "r");
    unlink(path);
    failed -= tap ? copy_tap(tap) : 0;
    if (tap)
        fclose(tap);
    fflush(stdout);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tt_run_cases(const char *suite, const tt_case_t *cases, size_t n, int timeout_s, int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", cases[i].name);
        return EXIT_SUCCESS;
    }
    Suite *s = suite_create(suite);
    for (size_t i = 0; i < n; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, timeout_s);
        if (cases[i].to > cases[i].from)
            tcase_add_loop_test(tc, cases[i].test, cases[i].from, cases[i].to);
        else
            tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return tt_run_suite(s);
}

int tt_count_job_segments(uint64_t tag)
{
    char prefix[64];
    /* The name format is TT_SHM_NAME_FORMAT (core/shm_names.h) without its leading slash. */
    snprintf(prefix, sizeof prefix, "tutti-%016llx-", (unsigned long long)tag);
    DIR *d = opendir("/dev/shm");
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

int tt_run_tool(const char *tool, const char *args, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/%s %s 2>&1", getenv("TT_BUILDDIR") ? getenv("TT_BUILDDIR") : ".", tool,
             args);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char fabric_name[64];

void tt_fabric_begin(const char *tag)
{
    static int serial;
    static pid_t registered;
    /* A failed check ends the test's process: clean up at its exit too
     * (ranks are separate processes and leave before, by _exit). */
    if (registered != getpid()) {
        registered = getpid();
        atexit(tt_fabric_end);
    }
    tt_fabric_end();
    snprintf(fabric_name, sizeof fabric_name, "ttfake-%s-%d-%d", tag, (int)getpid(), serial++);
    setenv("TTFAKE_FABRIC", fabric_name, 1);
    const char *lib = getenv("TT_FAKEVERBS");
    if (lib)
        setenv("TUTTI_IBVERBS_LIB", lib, 1);
}

void tt_fabric_end(void)
{
    DIR *d = fabric_name[0] ? opendir("/dev/shm") : NULL;
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, fabric_name, strlen(fabric_name)) == 0 &&
            (e->d_name[strlen(fabric_name)] == '\0' || e->d_name[strlen(fabric_name)] == '-')) {
            char path[300];
            snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
            unlink(path);
        }
    closedir(d);
}

int tt_named_as_dead(const char *msg, int rank)
{
    const char *died = strstr(msg, " died");
    if (!died)
        return 0;
    const char *start = died;
    while (start > msg && strncmp(start, "rank", 4) != 0)
        start--;
    for (const char *p = start; p < died; p++)
        if ((p[-1] == ' ' || p[-1] == ',') && atoi(p) == rank && p[0] >= '0' && p[0] <= '9')
            return 1;
    return 0;
}

int tt_size_of(tutti_comm_t comm)
{
    int p = -1;
    tutti_comm_size(comm, &p);
    return p;
}

int tt_rank_of(tutti_comm_t comm)
{
    int r = -1;
    tutti_comm_rank(comm, &r);
    return r;
}
