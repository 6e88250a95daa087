/* SPDX-License-Identifier: MIT */
/*
 * One rank of perf/scale/kill-bench: makes a communicator from its
 * launcher's environment and all-reduces 1 KiB in a loop. Rank $KILL_VICTIM,
 * after $KILL_AFTER all-reduces, writes the time (CLOCK_REALTIME: the ranks
 * share one machine's clock) to $KILL_OUT/killed and sends itself SIGKILL,
 * as kill -9 would, while the others are on their way into the next call.
 * Every other rank writes one JSON line to $KILL_OUT/rank.<rank>.json: when
 * its call failed, how long that call waited, its status and error message
 * (the bench checks that the message names the victim).
 *
 *     cc -I<srcdir>/src/include -I<builddir>/src/include kill-probe.c -L<builddir>/.libs -ltutti
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static FILE *out_file(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", getenv("KILL_OUT") ? getenv("KILL_OUT") : ".", name);
    return fopen(path, "w");
}

/* The message as a JSON string's body: quotes, backslashes and control bytes escaped. */
static void json_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
}

int main(void)
{
    int victim = getenv("KILL_VICTIM") ? atoi(getenv("KILL_VICTIM")) : 1;
    int after = getenv("KILL_AFTER") ? atoi(getenv("KILL_AFTER")) : 20;
    float a[256] = {0}, b[256];
    tutti_comm_t comm;
    int rank, nranks;
    if (tutti_comm_init_env(&comm, NULL) != TUTTI_SUCCESS) {
        fprintf(stderr, "kill-probe: %s\n", tutti_comm_last_error(NULL));
        return 1;
    }
    tutti_comm_rank(comm, &rank);
    tutti_comm_size(comm, &nranks);
    for (int i = 0;; i++) {
        if (rank == victim && i == after) {
            FILE *f = out_file("killed");
            if (f) {
                fprintf(f, "%.6f\n", now());
                fclose(f);
            }
            kill(getpid(), SIGKILL);
        }
        double t0 = now();
        tutti_status_t st = tutti_allreduce(a, b, 256, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        if (st == TUTTI_SUCCESS)
            continue;
        double t1 = now();
        char name[64];
        snprintf(name, sizeof name, "rank.%d.json", rank);
        FILE *f = out_file(name);
        if (f) {
            fprintf(f,
                    "{\"rank\": %d, \"nranks\": %d, \"call\": %d, \"failed_at\": %.6f, \"waited_s\": %.6f, ",
                    rank, nranks, i, t1, t1 - t0);
            fprintf(f, "\"status\": \"%s\", \"error\": \"", tutti_status_name(st));
            json_text(f, tutti_comm_last_error(comm));
            fprintf(f, "\"}\n");
            fclose(f);
        }
        tutti_comm_abort(comm);
        return 0;
    }
}
