/* SPDX-License-Identifier: MIT */
/*
 * One rank of perf/scale/scale-bench: makes a communicator (tutti from its
 * launcher's environment, or MPI_Init when built with -DSCALE_MPI), runs a
 * first collective (an all-reduce of one int), and writes what that cost
 * this process as one JSON line into $SCALE_OUT/rank.<rank>.json: when
 * creation started and ended (CLOCK_REALTIME, so that the ranks' clocks
 * compare on one machine), RSS and PSS, open descriptors, the shared-memory
 * segments it maps (device:inode and bytes, so that the bench counts each
 * segment of a host once) and, where perf/scale/sockcount.c is preloaded,
 * the bytes it sent and received on sockets until then. It then waits for
 * every rank (a second collective) and leaves.
 *
 *     cc -I<srcdir>/src/include -I<builddir>/src/include scale-probe.c -L<builddir>/.libs -ltutti
 *     mpicc -DSCALE_MPI scale-probe.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef SCALE_MPI
#include <mpi.h>
#else
#include "tutti.h"
#endif

typedef struct {
    unsigned long long sent, received, send_calls, recv_calls;
} sockcount_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A "Name:   123 kB" line of a /proc file, in kB; -1 when absent. */
static long proc_kb(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    char line[256];
    long kb = -1;
    size_t len = strlen(name);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, name, len) == 0 && line[len] == ':')
            kb = strtol(line + len + 1, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1; /* the one opendir holds */
}

/* Shared-memory mappings (/dev/shm files, memfds, System V): "dev:inode": bytes, ... */
static void shm_segments(FILE *out)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int first = 1;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, inode;
        char dev[32], path[4000] = "";
        if (sscanf(line, "%llx-%llx %*s %*s %31s %llu %3999[^\n]", &lo, &hi, dev, &inode, path) < 4)
            continue;
        char *p = path;
        while (*p == ' ')
            p++;
        if (strncmp(p, "/dev/shm/", 9) && strncmp(p, "/memfd:", 7) && strncmp(p, "/SYSV", 5))
            continue;
        fprintf(out, "%s\"%s:%llu\": %llu", first ? "" : ", ", dev, inode, hi - lo);
        first = 0;
    }
    if (f)
        fclose(f);
}

static void report(const char *system, int rank, int nranks, double start, double end)
{
    sockcount_t (*mark)(void) = (sockcount_t(*)(void))dlsym(RTLD_DEFAULT, "sockcount_mark");
    sockcount_t sc = mark ? mark() : (sockcount_t){0};
    const char *dir = getenv("SCALE_OUT");
    char path[4096], net[64] = "";
    snprintf(path, sizeof path, "%s/rank.%d.json", dir ? dir : ".", rank);
    ssize_t n = readlink("/proc/self/ns/net", net, sizeof net - 1); /* the simulated host */
    net[n > 0 ? n : 0] = '\0';
    FILE *out = fopen(path, "w");
    if (!out) {
        perror(path);
        return;
    }
    fprintf(out,
            "{\"system\": \"%s\", \"rank\": %d, \"nranks\": %d, \"host\": \"%s\", \"start\": %.6f, "
            "\"end\": %.6f, \"rss_kb\": %ld, \"pss_kb\": %ld, \"fds\": %d, \"counted\": %s, "
            "\"sent\": %llu, \"received\": %llu, \"send_calls\": %llu, \"recv_calls\": %llu, \"shm\": {",
            system, rank, nranks, net, start, end, proc_kb("/proc/self/status", "VmRSS"),
            proc_kb("/proc/self/smaps_rollup", "Pss"), open_fds(), mark ? "true" : "false", sc.sent,
            sc.received, sc.send_calls, sc.recv_calls);
    shm_segments(out);
    fprintf(out, "}}\n");
    fclose(out);
}

int main(int argc, char **argv)
{
    int one = 1, sum = 0, rank, nranks;
    double start = now();
#ifdef SCALE_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return 1;
    report("mpi", rank, nranks, start, now());
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
#else
    (void)argc;
    (void)argv;
    tutti_comm_t comm;
    if (tutti_comm_init_env(&comm, NULL) != TUTTI_SUCCESS ||
        tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL) != TUTTI_SUCCESS) {
        fprintf(stderr, "scale-probe: %s\n", tutti_comm_last_error(NULL));
        return 1;
    }
    tutti_comm_rank(comm, &rank);
    tutti_comm_size(comm, &nranks);
    report("tutti", rank, nranks, start, now());
    tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL);
    tutti_comm_destroy(comm);
#endif
    return sum == nranks ? 0 : 1;
}
