/* SPDX-License-Identifier: MIT */
/*
 * tutti-run: starts N local ranks of a program with the TUTTI_* environment
 * that tutti_comm_init_env reads. It owns the bootstrap root's listening
 * socket and hands it to rank 0, so no port can be stolen in between. When a
 * rank fails it names the rank and the cause, lets the others report their
 * own errors for a grace period, then stops them. No rank outlives it: each
 * rank runs in its own process group, killed as a whole, and asks the kernel
 * to kill it should tutti-run itself die.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/key.h"
#include "core/load.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "core/shm_names.h"
#include "core/sock.h"
#include "tools/run_output.h"

#define TT_RUN_MAX_ROOTS 4096 /* --roots: listeners tutti-run holds while the ranks start */

typedef struct {
    pid_t pid;
    int exited;
} rank_proc_t;

static volatile sig_atomic_t got_signal;
static int wake_pipe[2] = {-1, -1}; /* SIGCHLD wakes the main loop through it */

static void on_signal(int sig)
{
    got_signal = sig;
}

static void on_child(int sig)
{
    (void)sig;
    int saved = errno;
    if (write(wake_pipe[1], "c", 1) < 0) {
        /* full pipe: a wake-up is already pending */
    }
    errno = saved;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tutti-run -n N [--nodes K] [--roots R] [-t|--tag-output] [--grace S] [--bind core|none]\n"
            "                 prog [args...]\n"
            "  -n N            number of ranks (>= 1); -np N and --np N as in mpirun\n"
            "  --nodes K       treat the ranks as K hosts (consecutive blocks of ranks);\n"
            "                  ranks on different simulated hosts talk over tcp (default 1)\n"
            "  --roots R       spread the ranks' join over R roots, each admitting a block\n"
            "                  of ranks (tutti_comm_init_roots; default 1)\n"
            "  -t, --tag-output  prefix every output line with [rank]\n"
            "  --grace S       seconds the other ranks get to report after one fails\n"
            "                  before they are stopped (default 3)\n"
            "  --bind core|none  pin each rank to one CPU of those tutti-run may use\n"
            "                  (default core when a host's ranks do not outnumber them)\n"
            "Exit status: 0 when every rank exits 0, else the first failing rank's\n"
            "status (128 + signal number for a rank killed by a signal).\n");
}

static void hex_key(const unsigned char *key, char *out)
{
    for (int i = 0; i < TT_KEY_BYTES; i++)
        sprintf(out + 2 * i, "%02x", key[i]);
}

static void setenv_int(const char *name, long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    setenv(name, buf, 1);
}

/* MASTER_ADDR (the root's host) and a port free now for torch's store. */
static int export_master(const tt_sockaddr_t *root)
{
    tt_sockaddr_t probe = *root;
    int v6 = probe.u.sa.sa_family == AF_INET6, fd;
    char host[INET6_ADDRSTRLEN];
    if (v6)
        probe.u.in6.sin6_port = 0;
    else
        probe.u.in4.sin_port = 0;
    if (tt_sock_listen(&probe, &fd))
        return -1;
    close(fd);
    inet_ntop(probe.u.sa.sa_family, v6 ? (void *)&probe.u.in6.sin6_addr : (void *)&probe.u.in4.sin_addr, host,
              sizeof host);
    setenv("MASTER_ADDR", host, 1);
    setenv_int("MASTER_PORT", ntohs(v6 ? probe.u.in6.sin6_port : probe.u.in4.sin_port));
    return 0;
}

static void signal_all(rank_proc_t *procs, int n, int sig)
{
    for (int r = 0; r < n; r++) /* pid 0: never started, and kill(-0) is our own group */
        if (!procs[r].exited && procs[r].pid > 0)
            kill(-procs[r].pid, sig);
}

/* Tasks running now besides this one: the least of a few samples 10 ms
 * apart, so a kernel thread passing by does not count as a busy core. */
static int others_running(void)
{
    int least = -1;
    for (int i = 0; i < 5; i++) {
        int r = tt_load_runnable();
        if (r >= 0 && (least < 0 || r < least))
            least = r;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return least > 1 ? least - 1 : 0;
}

/* Pins the calling process to the k-th CPU it may run on (modulo their number). */
static void bind_to_cpu(int k)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed))
        return;
    int count = CPU_COUNT(&allowed), seen = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count > 0; cpu++)
        if (CPU_ISSET(cpu, &allowed) && seen++ == k % count) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            sched_setaffinity(0, sizeof one, &one);
            return;
        }
}

/* The bootstrap's roots: one listener each, and the job's key. */
typedef struct {
    int n;
    int fd[TT_RUN_MAX_ROOTS];
} roots_t;

static pid_t start_rank(char **argv, int rank, int n, int nodes, const roots_t *roots, tt_run_output_t *o,
                        int bind, rank_proc_t *p)
{
    int tag = o->rank != NULL, child[2] = {-1, -1};
    if (tag && tt_run_output_pipes(o, rank, child))
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("tutti-run: fork");
        if (tag)
            tt_run_output_watch(o, rank, child); /* closes the write ends; the rest goes at the end */
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* Dies with tutti-run, even if tutti-run is killed with SIGKILL. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        int per_node = (n + nodes - 1) / nodes;
        setenv_int("TUTTI_RANK", rank);
        setenv_int("TUTTI_NRANKS", n);
        setenv_int("TUTTI_LOCAL_RANK", rank % per_node);
        /* torch's env:// rendezvous (MASTER_* are set once, in main). */
        setenv_int("RANK", rank);
        setenv_int("WORLD_SIZE", n);
        setenv_int("LOCAL_RANK", rank % per_node);
        int on_node = n - rank / per_node * per_node; /* the last simulated host may hold fewer */
        setenv_int("LOCAL_WORLD_SIZE", on_node < per_node ? on_node : per_node);
        /* A rank that stays on its own core waits for peers without being
         * descheduled and keeps its caches (as mpirun binds by default). */
        if (bind)
            bind_to_cpu(rank % per_node);
        setenv_int("TUTTI_NODE_ID", nodes > 1 ? rank / per_node : -1);
        int root = tt_root_of(rank, n, roots->n);
        if (rank == tt_root_first(root, n, roots->n)) { /* this rank serves its block's root */
            int flags = fcntl(roots->fd[root], F_GETFD);
            fcntl(roots->fd[root], F_SETFD, flags & ~FD_CLOEXEC);
            setenv_int("TUTTI_ROOT_FD", roots->fd[root]);
        }
        if (tag) { /* every pipe is close-on-exec but these two copies */
            dup2(child[0], STDOUT_FILENO);
            dup2(child[1], STDERR_FILENO);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "tutti-run: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: no race with the first signal_all */
    p->pid = pid;
    return tag && tt_run_output_watch(o, rank, child) ? -1 : pid;
}

static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void describe(int status, char *out, size_t len)
{
    if (WIFEXITED(status))
        snprintf(out, len, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(out, len, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
}

/* A signal mask from /proc/PID/status ("SigPnd:\t0000000000000100"). */
static unsigned long long status_mask(const char *text, const char *field)
{
    const char *p = strstr(text, field);
    return p ? strtoull(p + strlen(field), NULL, 16) : 0;
}

/*
 * Whether process pid is on its way out: the kernel's PF_EXITING flag
 * (field 9 of /proc/PID/stat: killed, still freeing its memory), a signal
 * that will end it pending but not yet acted on (a loaded machine may not
 * have run it since the kill), or ended and not yet reaped (a zombie: how
 * it ended is known only once it is).
 */
static int dying(pid_t pid)
{
    char path[64], text[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *end = strrchr(text, ')'); /* the command name may hold spaces */
    unsigned flags = 0;
    char state = 0;
    if (!end || sscanf(end + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
        return 0;
    if (state == 'Z' || (flags & 0x4u))
        return 1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    unsigned long long pending = status_mask(text, "SigPnd:") | status_mask(text, "ShdPnd:");
    pending &= ~(status_mask(text, "SigBlk:") | status_mask(text, "SigIgn:") | status_mask(text, "SigCgt:"));
    /* Signals whose default action does not end a process. */
    static const int harmless[] = {SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGWINCH};
    for (size_t i = 0; i < sizeof harmless / sizeof *harmless; i++)
        pending &= ~(1ull << (harmless[i] - 1));
    return pending != 0;
}

static int any_dying(const rank_proc_t *procs, int n)
{
    for (int r = 0; r < n; r++)
        if (!procs[r].exited && dying(procs[r].pid))
            return 1;
    return 0;
}

/*
 * Who failed first. A rank that exits non-zero usually does so because it
 * saw another rank die; a killed rank with much memory to free is reaped
 * after it. So a plain exit is held while some rank is already dying (up
 * to HOLD_MS), and a death by signal seen meanwhile is named instead.
 */
#define HOLD_MS 3000
typedef struct {
    int rank, status;
    int64_t until; /* -1: nothing held */
} blame_t;

/* Takes the end of rank (its wait status) into account. */
static void blame_note(blame_t *b, int rank, int status)
{
    if (exit_code(status) == 0)
        return;
    if (b->rank < 0 || (WIFSIGNALED(status) && !WIFSIGNALED(b->status))) {
        b->rank = rank;
        b->status = status;
    }
}

static int blame_decided(blame_t *b, const rank_proc_t *procs, int n)
{
    if (b->rank < 0)
        return 0;
    if (WIFSIGNALED(b->status))
        return 1;
    int64_t now = tt_now_ms();
    if (b->until < 0)
        b->until = now + HOLD_MS;
    return now >= b->until || !any_dying(procs, n);
}

/* What the command line asked for. */
typedef struct {
    int n, nodes, roots, tag, bind; /* bind -1: decide from the CPU count */
    double grace;
    char **program; /* the program and its arguments */
} run_args_t;

/* Reads the options into a; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, run_args_t *a)
{
    *a = (run_args_t){.nodes = 1, .roots = 1, .bind = -1, .grace = 3.0};
    static const struct option longopts[] = {
        {"nodes", required_argument, NULL, 'N'}, {"roots", required_argument, NULL, 'R'},
        {"tag-output", no_argument, NULL, 't'},  {"grace", required_argument, NULL, 'g'},
        {"bind", required_argument, NULL, 'b'},  {"np", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "+n:th", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': {
            /* mpirun's -np N (and -npN): getopt reads it as -n "p". */
            const char *count = optarg;
            if (count[0] == 'p')
                count = count[1] ? count + 1 : optind < argc ? argv[optind++] : "";
            int64_t v;
            if (tt_parse_int(count, &v) || v < 1 || v > 1 << 20) {
                fprintf(stderr, "tutti-run: -n takes a number of ranks >= 1, not '%s'\n", count);
                return 2;
            }
            a->n = (int)v;
            break;
        }
        case 'N': a->nodes = atoi(optarg); break;
        case 'R': a->roots = atoi(optarg); break;
        case 't': a->tag = 1; break;
        case 'g': a->grace = atof(optarg); break;
        case 'b':
            if (strcmp(optarg, "core") && strcmp(optarg, "none")) {
                fprintf(stderr, "tutti-run: --bind takes core or none\n");
                return 2;
            }
            a->bind = strcmp(optarg, "core") == 0;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (a->n < 1 || a->nodes < 1 || a->nodes > a->n || optind >= argc || a->grace < 0 || a->roots < 1 ||
        a->roots > a->n || a->roots > TT_RUN_MAX_ROOTS) {
        fprintf(stderr, "tutti-run: %s\n",
                optind >= argc ? "no program given"
                               : "-n must be >= 1, 1 <= --nodes <= n and 1 <= --roots <= n (and <= 4096)");
        usage(stderr);
        return 2;
    }
    a->program = argv + optind;
    return -1;
}

/* Pinned ranks win where each has a core to itself; where other work
 * runs, a rank pinned beside it stalls its peers, while the scheduler
 * could have moved it to whichever core is free. */
static int bind_by_default(const run_args_t *a)
{
    cpu_set_t allowed;
    int per_node = (a->n + a->nodes - 1) / a->nodes;
    return sched_getaffinity(0, sizeof allowed, &allowed) == 0 &&
           per_node + others_running() <= CPU_COUNT(&allowed);
}

/* The job's key and the bootstrap roots' listeners, exported to the ranks
 * (TUTTI_KEY, TUTTI_ROOT_ADDR, with several roots TUTTI_ROOT_ADDRS,
 * MASTER_ADDR/PORT); each listener is left open across exec for the rank
 * that serves it (start_rank). */
static int open_bootstrap(unsigned char key[TT_KEY_BYTES], roots_t *roots)
{
    char keyhex[2 * TT_KEY_BYTES + 1], addrtext[96];
    size_t cap = (size_t)roots->n * sizeof addrtext;
    char *all = calloc(1, cap);
    tt_sockaddr_t root, first;
    if (!all || tt_random_key(key))
        return -1;
    for (int i = 0; i < roots->n; i++) {
        if (tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), &root) ||
            tt_sock_listen(&root, &roots->fd[i])) {
            fprintf(stderr, "tutti-run: cannot open the bootstrap listener\n");
            free(all);
            return -1;
        }
        first = i ? first : root;
        tt_sock_addr_str(&root, addrtext, sizeof addrtext);
        snprintf(all + strlen(all), cap - strlen(all), "%s%s", i ? "," : "", addrtext);
    }
    hex_key(key, keyhex);
    tt_sock_addr_str(&first, addrtext, sizeof addrtext);
    setenv("TUTTI_KEY", keyhex, 1);
    setenv("TUTTI_ROOT_ADDR", addrtext, 1);
    if (roots->n > 1)
        setenv("TUTTI_ROOT_ADDRS", all, 1);
    free(all);
    if (export_master(&first)) {
        fprintf(stderr, "tutti-run: cannot find a free port for MASTER_PORT\n");
        return -1;
    }
    return 0;
}

/* A stopping signal is passed on to the ranks; SIGCHLD wakes the main
 * loop through wake_pipe. */
static int catch_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK)) {
        perror("tutti-run: pipe");
        return -1;
    }
    struct sigaction sc = {.sa_handler = on_child, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
    sigaction(SIGCHLD, &sc, NULL);
    return 0;
}

/* The ranks from their start to the last one's end: reaps them, names the
 * first failure, and stops the rest after the grace period (SIGTERM, then
 * SIGKILL 2 s later), or at once on a signal to tutti-run. Returns the
 * job's exit code. */
static int supervise(const run_args_t *a, rank_proc_t *procs, int running, int failed, tt_run_output_t *out)
{
    int n = a->n, first_code = failed;
    int64_t term_at = failed ? tt_now_ms() : -1, kill_at = -1;
    blame_t blame = {.rank = -1, .until = -1};
    while (running > 0) {
        tt_run_output_wait(out, 50);

        /* Reap everything that ended; of several failures seen together
         * (or while a rank is dying), a death by signal is more likely the
         * cause than the exits of ranks that noticed it. */
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            for (int r = 0; r < n; r++) {
                if (procs[r].pid != pid || procs[r].exited)
                    continue;
                procs[r].exited = 1;
                running--;
                kill(-pid, SIGKILL); /* whatever the rank left behind in its group */
                if (first_code == 0)
                    blame_note(&blame, r, status);
            }
        }
        if (first_code == 0 && blame_decided(&blame, procs, n)) {
            int cause = blame.rank;
            char why[128];
            describe(blame.status, why, sizeof why);
            first_code = exit_code(blame.status);
            if (running > 0)
                fprintf(stderr, "tutti-run: rank %d (pid %d) %s; stopping the other %d rank(s) in %.1f s\n",
                        cause, (int)procs[cause].pid, why, running, a->grace);
            else
                fprintf(stderr, "tutti-run: rank %d (pid %d) %s\n", cause, (int)procs[cause].pid, why);
            term_at = tt_now_ms() + (int64_t)(a->grace * 1000);
        }
        if (got_signal && term_at < 0) {
            fprintf(stderr, "tutti-run: got signal %d; stopping all ranks\n", (int)got_signal);
            first_code = first_code ? first_code : 128 + got_signal;
            signal_all(procs, n, (int)got_signal);
            term_at = tt_now_ms();
        }
        int64_t now = tt_now_ms();
        if (term_at >= 0 && now >= term_at && kill_at < 0) {
            signal_all(procs, n, SIGTERM);
            kill_at = now + 2000;
        }
        if (kill_at >= 0 && now >= kill_at) {
            signal_all(procs, n, SIGKILL);
            kill_at = now + 1000000;
        }
    }
    return first_code;
}

/* Shared segments (and doorbells) are unlinked once mapped; sweeps any
 * left by a rank that died during set-up. */
static void sweep_segments(const unsigned char key[TT_KEY_BYTES], int n)
{
    unsigned long long tag = (unsigned long long)tt_key_tag(key);
    for (int r = 0; r < n; r++) {
        char name[96];
        snprintf(name, sizeof name, TT_SHM_NAME_FORMAT, tag, r);
        shm_unlink(name);
        snprintf(name, sizeof name, TT_IPC_NAME_FORMAT, tag, r);
        shm_unlink(name);
        snprintf(name, sizeof name, TT_SHM_BELL_FORMAT, tag, r);
        unlink(name);
    }
}

int main(int argc, char **argv)
{
    run_args_t a;
    int code = parse_args(argc, argv, &a);
    if (code >= 0)
        return code;
    if (tt_run_fd_limit(a.n, a.tag))
        return 1;
    if (a.bind < 0)
        a.bind = bind_by_default(&a);

    unsigned char key[TT_KEY_BYTES];
    roots_t roots = {.n = a.roots};
    if (open_bootstrap(key, &roots) || catch_signals())
        return 1;
    rank_proc_t *procs = calloc((size_t)a.n, sizeof *procs);
    tt_run_output_t out;
    if (!procs || tt_run_output_init(&out, a.n, a.tag, wake_pipe[0]))
        return 1;
    int running = 0, failed = 0;
    for (int r = 0; r < a.n && !failed; r++) {
        if (start_rank(a.program, r, a.n, a.nodes, &roots, &out, a.bind, &procs[r]) < 0)
            failed = 1;
        else
            running++;
    }
    for (int i = 0; i < roots.n; i++)
        close(roots.fd[i]);
    code = supervise(&a, procs, running, failed, &out);
    tt_run_output_finish(&out);
    sweep_segments(key, a.n);
    free(procs);
    return code;
}
