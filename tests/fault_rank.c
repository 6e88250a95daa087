/* SPDX-License-Identifier: MIT */
/*
 * A rank program for the launcher and fault suites, started under tutti-run.
 * usage: fault-rank MODE DIR
 *   die      rank 1 kills itself with SIGKILL during a large all-reduce loop;
 *            the others report their error in DIR/err.<rank> and exit 3
 *   exit7    rank 1 exits with status 7, the others sleep
 *   echo     prints "hello from rank R of N node K" and exits 0
 *   sleep    joins, writes DIR/pid.<rank>, then sleeps
 * Every mode writes its pid to DIR/pid.<rank> first.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutti.h"

static void write_file(const char *dir, const char *what, int rank, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%d", dir, what, rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *mode = argv[1], *dir = argv[2];
    const char *rank_env = getenv("TUTTI_RANK");
    int rank = rank_env ? atoi(rank_env) : -1;
    char text[1024];
    snprintf(text, sizeof text, "%d\n", (int)getpid());
    write_file(dir, "pid", rank, text);
    if (strcmp(mode, "echo") == 0) {
        printf("hello from rank %d of %s node %s\n", rank, getenv("TUTTI_NRANKS"), getenv("TUTTI_NODE_ID"));
        return 0;
    }
    if (strcmp(mode, "exit7") == 0) {
        if (rank == 1)
            return 7;
        for (;;)
            pause();
    }
    tutti_comm_t comm;
    tutti_status_t st = tutti_comm_init_env(&comm, NULL);
    if (st) {
        fprintf(stderr, "fault-rank %d: init failed: %s\n", rank, tutti_comm_last_error(NULL));
        return 1;
    }
    if (strcmp(mode, "sleep") == 0)
        for (;;)
            pause();
    size_t n = 8 << 20;
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    for (int iter = 0; iter < 100000; iter++) {
        if (rank == 1 && iter == 3)
            raise(SIGKILL);
        st = tutti_allreduce(a, b, n, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        if (st) {
            write_file(dir, "err", rank, tutti_comm_last_error(comm));
            tutti_comm_abort(comm);
            return 3;
        }
    }
    tutti_comm_destroy(comm);
    return 0;
}
