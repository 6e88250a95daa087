/* SPDX-License-Identifier: MIT */
/*
 * A rank program for the launcher suites, started under tutti-run, torchrun's
 * variables or mpirun.
 * usage: rank-helper MODE DIR
 *   die      rank 1 kills itself with SIGKILL during a large all-reduce loop;
 *            the others report their error in DIR/err.<rank> and exit 3
 *   exit7    rank 1 exits with status 7, the others sleep
 *   blame    rank 0 fills 256 MiB (so its death takes a while), writes
 *            DIR/ready.0 and sleeps; rank 1 then kills it with SIGKILL and
 *            exits 1 a millisecond later; the others sleep
 *   zombie   rank 0's main thread ends while another runs on, so that its
 *            process shows as a zombie not yet reaped, and writes
 *            DIR/ready.0; rank 1 then exits 1, and rank 2 kills rank 0
 *            with SIGKILL half a second later; the others sleep
 *   echo     prints "hello from rank R of N node K" and exits 0
 *   sleep    joins, writes DIR/ready.<rank>, then sleeps
 *   check    joins, checks an all-reduce, prints "rank R of N ok"
 * Every mode writes its pid to DIR/pid.<rank> first (rank -1 when no
 * TUTTI_RANK is set) and the job key to DIR/key.<rank>.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static int blame(const char *dir, int rank)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ready.0", dir);
    if (rank == 0) {
        size_t n = (size_t)256 << 20;
        char *mem = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            return 2;
        madvise(mem, n, MADV_NOHUGEPAGE); /* small pages: slow to free */
        memset(mem, 1, n);
        write_file(dir, "ready", 0, "filled\n");
        for (;;)
            pause();
    }
    if (rank != 1)
        for (;;)
            pause();
    int pid = -1;
    for (int t = 0; t < 3000 && access(path, F_OK) != 0; t++)
        usleep(10000);
    snprintf(path, sizeof path, "%s/pid.0", dir);
    FILE *f = fopen(path, "r");
    if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0)
        return 2;
    fclose(f);
    kill(pid, SIGKILL);
    usleep(1000);
    return 1;
}

/* Rank 0's second thread: waits until the main thread has ended (the
 * process's state is Z), says so, and sleeps. */
static void *zombie_leader(void *arg)
{
    const char *dir = arg;
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)getpid());
    for (;;) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = '\0';
        const char *end = strrchr(text, ')');
        if (end && end[1] == ' ' && end[2] == 'Z')
            break;
        usleep(1000);
    }
    write_file(dir, "ready", 0, "zombie\n");
    for (;;)
        pause();
    return NULL;
}

static int zombie(const char *dir, int rank)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ready.0", dir);
    if (rank == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, zombie_leader, (void *)dir))
            return 2;
        pthread_exit(NULL);
    }
    for (int t = 0; t < 3000 && access(path, F_OK) != 0; t++)
        usleep(10000);
    if (rank == 1)
        return 1;
    if (rank == 2) {
        int pid = -1;
        usleep(500000);
        snprintf(path, sizeof path, "%s/pid.0", dir);
        FILE *f = fopen(path, "r");
        if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0)
            return 2;
        fclose(f);
        kill(pid, SIGKILL);
    }
    for (;;)
        pause();
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
    const char *key = getenv("TUTTI_KEY");
    write_file(dir, "key", rank, key ? key : "");
    if (strcmp(mode, "echo") == 0) {
        printf("hello from rank %d of %s node %s\n", rank, getenv("TUTTI_NRANKS"), getenv("TUTTI_NODE_ID"));
        return 0;
    }
    if (strcmp(mode, "blame") == 0)
        return blame(dir, rank);
    if (strcmp(mode, "zombie") == 0)
        return zombie(dir, rank);
    if (strcmp(mode, "exit7") == 0) {
        if (rank == 1)
            return 7;
        for (;;)
            pause();
    }
    tutti_comm_t comm;
    tutti_status_t st = tutti_comm_init_env(&comm, NULL);
    if (st) {
        fprintf(stderr, "rank-helper %d: init failed: %s\n", rank, tutti_comm_last_error(NULL));
        return 1;
    }
    if (strcmp(mode, "sleep") == 0) {
        write_file(dir, "ready", rank, "joined\n");
        for (;;)
            pause();
    }
    if (strcmp(mode, "check") == 0) {
        int r, p, v, sum = 0;
        tutti_comm_rank(comm, &r);
        tutti_comm_size(comm, &p);
        v = r + 1;
        st = tutti_allreduce(&v, &sum, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL);
        if (st || sum != p * (p + 1) / 2) {
            fprintf(stderr, "rank %d: allreduce gave %d: %s\n", r, sum, tutti_comm_last_error(comm));
            return 1;
        }
        printf("rank %d of %d ok\n", r, p);
        return tutti_comm_destroy(comm) ? 1 : 0;
    }
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
