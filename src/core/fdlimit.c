/* SPDX-License-Identifier: MIT */
/* Descriptor limits: raised once at start, and explained when exhausted. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "core/fdlimit.h"
#include "core/log.h"

static pthread_once_t raised = PTHREAD_ONCE_INIT;

/* A rank holds a few descriptors per peer it talks to (tcp: one socket per
 * slice in flight), and rank 0 admits every rank at once while a
 * communicator forms: the default soft limit (often 1024) is too low for
 * large jobs, while the hard limit is what the administrator allows. */
static void raise_once(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        TT_DEBUG(TT_SUB_INIT, "descriptor limit raised from %llu to the hard limit %llu",
                 (unsigned long long)was, (unsigned long long)rl.rlim_max);
}

void tt_fd_limit_raise(void)
{
    pthread_once(&raised, raise_once);
}

int tt_fd_exhausted(int err)
{
    return err == EMFILE || err == ENFILE;
}

static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = -1; /* the directory's own descriptor */
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

const char *tt_fd_strerror(int err, char *buf, size_t len)
{
    struct rlimit rl;
    if (err == ENFILE) {
        snprintf(buf, len, "%s: the system's table of open files is full (fs.file-max)", strerror(err));
        return buf;
    }
    if (err != EMFILE || getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(buf, len, "%s", strerror(err));
        return buf;
    }
    long open = open_fds();
    char held[48] = "";
    if (open >= 0)
        snprintf(held, sizeof held, "%ld open, ", open);
    snprintf(buf, len,
             "%s: this process may hold %llu descriptors (%shard limit %llu); raise the limit where the "
             "job starts (ulimit -n, limits.conf's nofile, docker run --ulimit nofile=N:N) or use fewer "
             "ranks per host",
             strerror(err), (unsigned long long)rl.rlim_cur, held, (unsigned long long)rl.rlim_max);
    return buf;
}
