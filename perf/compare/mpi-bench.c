/* SPDX-License-Identifier: MIT */
/*
 * The MPI side of perf/compare/compare: MPI_Allreduce, MPI_Reduce_scatter_block and
 * MPI_Allgather on fp32, timed exactly as tutti-perf times tutti (warm-up,
 * barrier, mean over iterations, slowest rank), with the same size
 * convention (the whole buffer) and busbw factors, and the processor time
 * each rank spends per call (tutti-perf --cpu).
 * usage: mpirun -np N perf/compare/mpi-bench [-C allreduce|reducescatter|allgather]
 *        [-b SIZE] [-e SIZE] [-f F] [-n ITERS] [-w WARMUP] [--csv]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/env_config.h"
#include "sched/schedule.h"

/* "64M" -> bytes, with the parser every tutti tool uses; bad input aborts the job. */
static size_t parse_size(const char *text)
{
    uint64_t bytes;
    if (tt_parse_size(text, &bytes)) {
        fprintf(stderr, "mpi-bench: bad size %s\n", text);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (size_t)bytes;
}

enum { ALLREDUCE, REDUCESCATTER, ALLGATHER };

/* Processor time of this process (every thread), in us: what a rank costs while it waits. */
static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void run(int coll, float *send, float *recv, int n, int p)
{
    switch (coll) {
    case ALLREDUCE: MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case REDUCESCATTER:
        MPI_Reduce_scatter_block(send, recv, n / p, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    default: MPI_Allgather(send, n / p, MPI_FLOAT, recv, n / p, MPI_FLOAT, MPI_COMM_WORLD); break;
    }
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"allreduce", "reducescatter", "allgather"};
    size_t minb = 64 << 20, maxb = 64 << 20;
    int iters = 20, warmup = 5, factor = 2, coll = ALLREDUCE, csv = 0;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--csv"))
            csv = 1;
        else if (!strcmp(a, "-b") && ++i)
            minb = parse_size(v);
        else if (!strcmp(a, "-e") && ++i)
            maxb = parse_size(v);
        else if (!strcmp(a, "-f") && ++i)
            factor = atoi(v);
        else if (!strcmp(a, "-n") && ++i)
            iters = atoi(v);
        else if (!strcmp(a, "-w") && ++i)
            warmup = atoi(v);
        else if (!strcmp(a, "-C") && ++i) {
            coll = -1;
            for (int k = 0; k < 3; k++)
                if (tt_coll_name_matches(v, names[k])) /* reduce_scatter, all-reduce too */
                    coll = k;
            if (coll < 0) {
                fprintf(stderr, "mpi-bench: -C takes allreduce, reducescatter or allgather, not '%s'\n", v);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else {
            fprintf(stderr, "mpi-bench: unknown argument %s\n", a);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    float *send = calloc(maxb / 4 + 4, 4), *recv = calloc(maxb / 4 + 4, 4);
    if (rank == 0)
        printf(csv ? "collective,size,count,time_us,algbw,busbw,cpu_us\n"
                   : "# MPI %s fp32 sum, %d ranks; cpu: processor time per call, the mean over ranks\n"
                     "# %10s %9s %7s %7s %9s\n",
               names[coll], p, "size(B)", "time(us)", "algbw", "busbw", "cpu(us)");
    for (size_t size = minb; size <= maxb && factor > 1; size *= (size_t)factor) {
        int n = (int)(size / 4);
        if (coll != ALLREDUCE)
            n -= n % p; /* whole blocks per rank, as tutti-perf rounds */
        size_t used = (size_t)n * 4;
        for (int i = 0; i < warmup; i++)
            run(coll, send, recv, n, p);
        MPI_Barrier(MPI_COMM_WORLD);
        double c0 = cpu_us(), t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            run(coll, send, recv, n, p);
        double local = (MPI_Wtime() - t0) / (iters > 0 ? iters : 1) * 1e6, us, cpu;
        double local_cpu = (cpu_us() - c0) / (iters > 0 ? iters : 1);
        MPI_Allreduce(&local, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&local_cpu, &cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        cpu /= p;
        double algbw = us > 0 ? (double)used / (us * 1e-6) / 1e9 : 0;
        double busbw = algbw * (coll == ALLREDUCE ? 2.0 * (p - 1) / p : (double)(p - 1) / p);
        if (rank == 0) {
            if (csv)
                printf("%s,%zu,%d,%.3f,%.4f,%.4f,%.3f\n", names[coll], used, n, us, algbw, busbw, cpu);
            else
                printf("  %10zu %9.2f %7.3f %7.3f %9.2f\n", used, us, algbw, busbw, cpu);
        }
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
