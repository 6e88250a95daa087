/* SPDX-License-Identifier: MIT */
/*
 * tutti_comm_init_env under srun without a PMIx server: Slurm's compressed
 * host lists, the root's port, and ranks started here with the variables
 * srun gives its tasks, alone and beside tutti-run's, torchrun's, PMIx's and
 * mpirun's. .ci/slurm runs the same under a real Slurm.
 */
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/join.h"

#include "tests/lib/harness.h"

#define MAX_RANKS 4
#define TEXT_BYTES 4096

extern char **environ;

static void expect_hosts(const char *list, int n, const char *const *want)
{
    char host[64];
    ck_assert_int_eq(tt_slurm_hostlist_count(list), n);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(tt_slurm_hostlist_nth(list, i, host, sizeof host) == 0, "%s: no host %d", list, i);
        ck_assert_msg(strcmp(host, want[i]) == 0, "%s: host %d is %s, not %s", list, i, host, want[i]);
    }
    ck_assert_int_eq(tt_slurm_hostlist_nth(list, n, host, sizeof host), -1);
}

START_TEST(host_lists_expand_as_slurm_writes_them)
{
    expect_hosts("vm", 1, (const char *const[]){"vm"});
    expect_hosts("node[01-04,07]", 5,
                 (const char *const[]){"node01", "node02", "node03", "node04", "node07"});
    expect_hosts("a[8-10]", 3, (const char *const[]){"a8", "a9", "a10"});
    expect_hosts("gpu[1-2]-ib,login", 3, (const char *const[]){"gpu1-ib", "gpu2-ib", "login"});
    expect_hosts("r[1-2]n[01-02]", 4, (const char *const[]){"r1n01", "r1n02", "r2n01", "r2n02"});
    expect_hosts("c[7],d[009-011],e", 5, (const char *const[]){"c7", "d009", "d010", "d011", "e"});
    ck_assert_int_eq(tt_slurm_hostlist_count("node[0001-1024]"), 1024);
    char host[64];
    ck_assert_int_eq(tt_slurm_hostlist_nth("node[0001-1024]", 1023, host, sizeof host), 0);
    ck_assert_str_eq(host, "node1024");
}
END_TEST

START_TEST(malformed_host_lists_are_refused)
{
    static const char *const bad[] = {"",      "node[01-", "node[4-2]",    "node]", "a,,b",
                                      "a,",    "n[[1]]",   "n[1-x]",       "n[]",   "n[1,]",
                                      "n[-3]", "n[1-2]]",  "n[1-99999999]"};
    char host[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(tt_slurm_hostlist_count(bad[i]) == -1, "'%s' was read as a host list", bad[i]);
        ck_assert_msg(tt_slurm_hostlist_nth(bad[i], 0, host, sizeof host) == -1, "'%s' gave a host", bad[i]);
    }
    /* a name that does not fit is refused, not cut */
    ck_assert_int_eq(tt_slurm_hostlist_nth("node[01-02]", 1, host, 6), -1);
    ck_assert_int_eq(tt_slurm_hostlist_nth("node[01-02]", 1, host, 7), 0);
    ck_assert_str_eq(host, "node02");
}
END_TEST

START_TEST(the_port_comes_from_the_job_and_step_or_slurm)
{
    static int seen[65536];
    memset(seen, 0, sizeof seen);
    /* consecutive jobs and a job's first steps get ports of their own */
    for (unsigned long job = 4000; job < 5000; job++)
        for (unsigned long step = 0; step < 8; step++) {
            int port = tt_slurm_root_port(job, step, NULL);
            ck_assert_msg(port >= 20000 && port < 29500, "job %lu step %lu: port %d", job, step, port);
            ck_assert_msg(!seen[port], "job %lu step %lu: port %d taken twice", job, step, port);
            seen[port] = 1;
        }
    ck_assert_int_eq(tt_slurm_root_port(77, 3, NULL), tt_slurm_root_port(77, 3, ""));
    ck_assert_int_eq(tt_slurm_root_port(77, 3, NULL), tt_slurm_root_port(77, 3, "none"));
    ck_assert_int_ne(tt_slurm_root_port(77, 3, NULL), tt_slurm_root_port(77, 4, NULL));
    /* ports Slurm reserved for the step (MpiParams=ports) come first */
    ck_assert_int_eq(tt_slurm_root_port(77, 3, "12000-12003"), 12000);
    ck_assert_int_eq(tt_slurm_root_port(77, 3, "12345"), 12345);
    ck_assert_int_eq(tt_slurm_root_port(77, 3, "0"), tt_slurm_root_port(77, 3, NULL));
}
END_TEST

/* Leaves no launcher's variable in the environment: SLURM_*, PMIx's,
 * mpirun's, torchrun's and tutti-run's (make check may run under srun). */
static void clear_launchers(void)
{
    static const char *const prefixes[] = {"SLURM", "PMIX_", "PMI_", "OMPI_", "TUTTI_"};
    static const char *const names[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e && !again; e++)
            for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !again; i++)
                if (strncmp(*e, prefixes[i], strlen(prefixes[i])) == 0 && strchr(*e, '=')) {
                    char name[256];
                    snprintf(name, sizeof name, "%.*s", (int)(strchr(*e, '=') - *e), *e);
                    unsetenv(name);
                    again = 1; /* environ changed under us */
                }
    }
}

/* Sets "NAME=value NAME=value ...", '@' in a value standing for rank. */
static void set_vars(const char *vars, int rank)
{
    char copy[2048], *save = NULL;
    snprintf(copy, sizeof copy, "%s", vars);
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '='), value[256];
        ck_assert_ptr_nonnull(eq);
        *eq = '\0';
        snprintf(value, sizeof value, "%s", eq + 1);
        if (strcmp(value, "@") == 0)
            snprintf(value, sizeof value, "%d", rank);
        setenv(tok, value, 1);
    }
}

/*
 * Starts n ranks of rank-helper check with only the launcher variables in
 * vars, waits for them, and gives each one's exit code and output (stdout
 * and stderr).
 */
static void run_job(int n, const char *vars, int *codes, char (*text)[TEXT_BYTES])
{
    const char *b = getenv("TT_BUILDDIR");
    char exe[1024], paths[MAX_RANKS][64];
    snprintf(exe, sizeof exe, "%s/tests/lib/rank-helper", b ? b : ".");
    pid_t pids[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        snprintf(paths[r], sizeof paths[r], "/tmp/tutti-launch-slurm-%d.%d", (int)getpid(), r);
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            clear_launchers();
            set_vars(vars, r);
            setenv("TUTTI_TIMEOUT", "30", 1);
            int fd = open(paths[r], O_WRONLY | O_CREAT | O_TRUNC, 0600);
            dup2(fd, 1);
            dup2(fd, 2);
            execl(exe, exe, "check", "/tmp", (char *)NULL);
            _exit(127);
        }
    }
    ck_assert(!tt_wait_ranks(n, pids, codes, 60));
    for (int r = 0; r < n; r++) {
        FILE *f = fopen(paths[r], "r");
        size_t got = f ? fread(text[r], 1, TEXT_BYTES - 1, f) : 0;
        text[r][got] = '\0';
        if (f)
            fclose(f);
        unlink(paths[r]);
    }
}

/* A job id whose derived port (step 0) is free on the loopback now. */
static unsigned long job_with_free_port(void)
{
    for (unsigned long job = 1000 + (unsigned long)getpid() % 50000;; job++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                .sin_port = htons((uint16_t)tt_slurm_root_port(job, 0, NULL))};
        int ok = bind(s, (struct sockaddr *)&a, sizeof a) == 0;
        close(s);
        if (ok)
            return job;
    }
}

/* A TUTTI_KEY of this run's own: a fixed one would name the same shared
 * memory as the same test running in another build tree at the same time. */
static const char *fresh_key(void)
{
    static char hex[33];
    unsigned char raw[16] = {0};
    FILE *f = fopen("/dev/urandom", "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(raw, 1, sizeof raw, f), sizeof raw);
    fclose(f);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    return hex;
}

/* What srun gives the tasks of step 0 of job, n tasks on localhost. */
static void srun_vars(char *out, size_t len, int n, unsigned long job, const char *more)
{
    snprintf(out, len,
             "SLURM_JOB_ID=%lu SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=%d SLURM_NTASKS=%d SLURM_PROCID=@ "
             "SLURM_LOCALID=@ SLURM_NODEID=0 SLURM_STEP_NODELIST=localhost SLURMD_NODENAME=localhost "
             "SLURM_SRUN_COMM_HOST=127.0.0.1 SLURM_SRUN_COMM_PORT=40001 %s",
             job, n, n, more);
}

static void expect_joined(int n, const int *codes, char (*text)[TEXT_BYTES], int size)
{
    for (int r = 0; r < n; r++) {
        char want[64];
        snprintf(want, sizeof want, "rank %d of %d ok", r, size);
        ck_assert_msg(codes[r] == 0 && strstr(text[r], want), "rank %d exited %d, saying:\n%s", r, codes[r],
                      text[r]);
    }
}

START_TEST(srun_variables_with_a_derived_key)
{
    char vars[1024], text[MAX_RANKS][TEXT_BYTES];
    int codes[MAX_RANKS];
    srun_vars(vars, sizeof vars, 3, job_with_free_port(), "");
    run_job(3, vars, codes, text);
    expect_joined(3, codes, text, 3);
}
END_TEST

START_TEST(srun_variables_with_tutti_key_and_a_reserved_port)
{
    char vars[1024], more[128], text[MAX_RANKS][TEXT_BYTES];
    int codes[MAX_RANKS];
    unsigned long job = job_with_free_port();
    snprintf(more, sizeof more, "TUTTI_KEY=%s SLURM_STEP_RESV_PORTS=%d-%d", fresh_key(),
             tt_slurm_root_port(job, 0, NULL), tt_slurm_root_port(job, 0, NULL) + 1);
    srun_vars(vars, sizeof vars, 2, job + 1, more); /* the reserved port, not job + 1's own */
    run_job(2, vars, codes, text);
    expect_joined(2, codes, text, 2);
}
END_TEST

/*
 * Inside a step, tutti-run's and torchrun's variables win: the step says 4
 * tasks on hosts that do not exist, the job is 2 ranks on this one.
 */
START_TEST(tutti_run_and_torchrun_inside_a_step_win)
{
    const char *step = "SLURM_JOB_ID=5 SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=3 "
                       "SLURM_STEP_NODELIST=nosuchnode[1-4] SLURMD_NODENAME=nosuchnode4 ";
    char vars[1024], text[MAX_RANKS][TEXT_BYTES];
    int codes[MAX_RANKS], port = tt_slurm_root_port(job_with_free_port(), 0, NULL);
    snprintf(vars, sizeof vars, "%sTUTTI_RANK=@ TUTTI_NRANKS=2 TUTTI_ROOT_ADDR=127.0.0.1:%d TUTTI_KEY=%s",
             step, port, fresh_key());
    run_job(2, vars, codes, text);
    expect_joined(2, codes, text, 2);
    snprintf(vars, sizeof vars, "%sRANK=@ WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=%d", step, port - 1);
    run_job(2, vars, codes, text);
    expect_joined(2, codes, text, 2);
}
END_TEST

/* srun --mpi=pmix: PMIx's variables beside the step's send a PMIx build to
 * its PMIx server (here: none, so it says so); one without PMIx reads the
 * step's variables. */
START_TEST(pmix_inside_a_step_wins_when_built_with_it)
{
    char vars[1024], text[MAX_RANKS][TEXT_BYTES];
    int codes[MAX_RANKS];
    srun_vars(vars, sizeof vars, 2, job_with_free_port(), "PMIX_RANK=@ PMIX_NAMESPACE=slurm.pmix.1.0");
    run_job(2, vars, codes, text);
#ifdef TT_HAVE_PMIX
    for (int r = 0; r < 2; r++)
        ck_assert_msg(codes[r] != 0 && strstr(text[r], "PMIx_Init failed"), "rank %d exited %d, saying:\n%s",
                      r, codes[r], text[r]);
#else
    expect_joined(2, codes, text, 2);
#endif
}
END_TEST

/* mpirun started inside a one-task step: its ranks carry the step's
 * variables, which are not theirs; with no PMIx either, the message says
 * what to use. */
START_TEST(mpirun_inside_a_step_is_not_taken_for_srun)
{
    char vars[1024], text[MAX_RANKS][TEXT_BYTES];
    int codes[MAX_RANKS];
    snprintf(vars, sizeof vars,
             "SLURM_JOB_ID=9 SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0 "
             "SLURM_STEP_NODELIST=localhost OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=@");
    run_job(1, vars, codes, text);
    ck_assert_msg(codes[0] != 0 && strstr(text[0], "started by mpirun or srun as one of 4 ranks") &&
                      strstr(text[0], "srun --mpi=pmix"),
                  "exited %d, saying:\n%s", codes[0], text[0]);
}
END_TEST

/* A program run by the batch script itself, outside any srun step, runs
 * alone whatever the job's task count. */
START_TEST(a_batch_script_outside_a_step_runs_alone)
{
    char text[MAX_RANKS][TEXT_BYTES];
    int codes[MAX_RANKS];
    run_job(1, "SLURM_JOB_ID=9 SLURM_NTASKS=2 SLURM_PROCID=0 SLURM_JOB_NODELIST=localhost", codes, text);
    expect_joined(1, codes, text, 1);
}
END_TEST

/* Each way the step's variables can lead nowhere is named at once, with
 * what to do instead. */
START_TEST(a_step_tutti_cannot_join_is_named)
{
    char vars[1024], text[MAX_RANKS][TEXT_BYTES];
    int codes[MAX_RANKS];
    unsigned long job = job_with_free_port();
    snprintf(vars, sizeof vars,
             "SLURM_JOB_ID=%lu SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0 "
             "SLURM_STEP_NODELIST=node[1-",
             job);
    run_job(1, vars, codes, text);
    ck_assert_msg(codes[0] &&
                      strstr(text[0], "SLURM_STEP_NODELIST=node[1- is not a Slurm host list: use srun "
                                      "--mpi=pmix"),
                  "%s", text[0]);
    srun_vars(vars, sizeof vars, 2, job, "SLURMD_NODENAME=elsewhere");
    run_job(1, vars, codes, text);
    ck_assert_msg(codes[0] && strstr(text[0], "srun placed rank 0 on elsewhere, not on the step's first node "
                                              "localhost"),
                  "%s", text[0]);
    /* another program holds the derived port */
    int s = socket(AF_INET, SOCK_STREAM, 0), port = tt_slurm_root_port(job, 0, NULL);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = htons((uint16_t)port)};
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(s, 4), 0);
    /* and on ::1, where localhost may name it first (no IPv6: nothing to hold) */
    int s6 = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a6 = {
        .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT, .sin6_port = a.sin_port};
    if (s6 >= 0 && (bind(s6, (struct sockaddr *)&a6, sizeof a6) || listen(s6, 4)))
        close(s6), s6 = -1;
    srun_vars(vars, sizeof vars, 2, job, "");
    run_job(1, vars, codes, text);
    close(s);
    if (s6 >= 0)
        close(s6);
    char want[128];
    snprintf(want, sizeof want, "rank 0 cannot listen on localhost:%d for tutti's bootstrap", port);
    ck_assert_msg(codes[0] && strstr(text[0], want) && strstr(text[0], "derived from the job and step ids") &&
                      strstr(text[0], "use srun --mpi=pmix or set TUTTI_ROOT_ADDR=host:port"),
                  "%s", text[0]);
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"host-lists", host_lists_expand_as_slurm_writes_them, 0, 0},
        {"malformed-host-lists", malformed_host_lists_are_refused, 0, 0},
        {"port", the_port_comes_from_the_job_and_step_or_slurm, 0, 0},
        {"derived-key", srun_variables_with_a_derived_key, 0, 0},
        {"tutti-key-reserved-port", srun_variables_with_tutti_key_and_a_reserved_port, 0, 0},
        {"tutti-run-torchrun-win", tutti_run_and_torchrun_inside_a_step_win, 0, 0},
        {"pmix-wins", pmix_inside_a_step_wins_when_built_with_it, 0, 0},
        {"mpirun-in-step", mpirun_inside_a_step_is_not_taken_for_srun, 0, 0},
        {"batch-script-alone", a_batch_script_outside_a_step_runs_alone, 0, 0},
        {"named-failures", a_step_tutti_cannot_join_is_named, 0, 0},
    };
    return tt_run_cases("launch-slurm", cases, sizeof cases / sizeof cases[0], 120, argc, argv);
}
