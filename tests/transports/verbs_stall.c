/* SPDX-License-Identifier: MIT */
/* The verbs set-up suites' shared waits and accounting (verbs_stall.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/exact.h"
#include "tests/transports/verbs_stall.h"

/* The real close, under suites that wrap close(). */
int __real_close(int fd);

int tt_stall_wait_flag(const int *flag)
{
    for (int t = 0; t < TT_STALL_WAIT_MS && !__atomic_load_n(flag, __ATOMIC_SEQ_CST); t++)
        usleep(1000);
    return __atomic_load_n(flag, __ATOMIC_SEQ_CST);
}

/* Whether pid is stopped (its state in /proc is T). */
static int is_stopped(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    const char *paren = f && fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
    if (f)
        fclose(f);
    return paren && paren[1] == ' ' && paren[2] == 'T';
}

int tt_stall_wait_stopped(const int *stopping, const pid_t *pid)
{
    if (!tt_stall_wait_flag(stopping))
        return -1;
    for (int t = 0; t < TT_STALL_WAIT_MS && !is_stopped(__atomic_load_n(pid, __ATOMIC_SEQ_CST)); t++)
        usleep(1000);
    return is_stopped(__atomic_load_n(pid, __ATOMIC_SEQ_CST)) ? 0 : -1;
}

/* The entries of /proc/self/DIR as ",name,name," into out. */
static void entries(const char *dir, char *out, size_t len)
{
    char path[300], what[200];
    snprintf(path, sizeof path, "/proc/self/%s", dir);
    DIR *d = opendir(path);
    size_t used = (size_t)snprintf(out, len, ",");
    int fds = strcmp(dir, "fd") == 0;
    for (struct dirent *e; d && (e = readdir(d)) && used < len;) {
        if (e->d_name[0] == '.' || (fds && atoi(e->d_name) == dirfd(d)))
            continue;
        snprintf(path, sizeof path, "/proc/self/%s/%s", dir, e->d_name);
        ssize_t n = fds ? readlink(path, what, sizeof what - 1) : 0;
        what[n > 0 ? n : 0] = '\0';
        if (strcmp(what, "/proc/loadavg") == 0) /* the process's, from its first idle spell (core/load.c) */
            continue;
        used += (size_t)snprintf(out + used, len - used, "%s%s%s,", e->d_name, n > 0 ? ":" : "", what);
    }
    if (d)
        closedir(d);
}

void tt_stall_holdings(char *fds, size_t fds_len, char *tasks, size_t tasks_len)
{
    entries("fd", fds, fds_len);
    entries("task", tasks, tasks_len);
}

/* The first entry of /proc/self/DIR not in before, into out ("" when none). */
static void entry_new(const char *dir, const char *before, char *out, size_t len)
{
    char now[8192];
    entries(dir, now, sizeof now);
    out[0] = '\0';
    for (char *e = now + 1, *end; !out[0] && (end = strchr(e, ',')); e = end + 1) {
        snprintf(out, len, ",%.*s,", (int)(end - e), e);
        if (strstr(before, out))
            out[0] = '\0';
    }
}

int tt_stall_nothing_left(int r, const char *fds, const char *tasks)
{
    char extra[300];
    for (int t = 0; t < 1000 && (entry_new("task", tasks, extra, sizeof extra), extra[0]); t++)
        usleep(1000);
    TT_FAIL_IF(extra[0], "rank %d: thread %s is left after closing the communicator; before: %s", r, extra,
               tasks);
    entry_new("fd", fds, extra, sizeof extra);
    TT_FAIL_IF(extra[0], "rank %d: descriptor %s is open after closing the communicator; before: %s", r,
               extra, fds);
    return 0;
}

int tt_stall_decoy(int fd, int *peer)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return -1;
    /* The lowest numbers free are often the one just closed, or one below
     * it (then the pair's second end has it); otherwise the first end
     * moves onto it. */
    *peer = sv[1] == fd ? sv[0] : sv[1];
    if (sv[0] == fd || sv[1] == fd)
        return 0;
    if (dup2(sv[0], fd) != fd) {
        __real_close(sv[0]);
        __real_close(sv[1]);
        return -1;
    }
    __real_close(sv[0]);
    return 0;
}
