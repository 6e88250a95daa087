/* SPDX-License-Identifier: MIT */
/*
 * The reference tutti's host all-reduce is compared with: MPI_Allreduce of
 * fp32 sums, timed like tutti-perf (warm-up, barrier, mean of iterations,
 * slowest rank), printed with the same busbw factor 2(n-1)/n.
 * usage: mpirun -np 2 perf/mpi-allreduce-ref [-b SIZE] [-e SIZE] [-f F] [-n N] [-w N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K':
    case 'k': v *= 1 << 10; break;
    case 'M':
    case 'm': v *= 1 << 20; break;
    case 'G':
    case 'g': v *= 1 << 30; break;
    default: break;
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    size_t minb = 64 << 20, maxb = 64 << 20;
    int iters = 20, warmup = 5, factor = 2, opt;
    MPI_Init(&argc, &argv);
    while ((opt = getopt(argc, argv, "b:e:f:n:w:")) != -1) {
        switch (opt) {
        case 'b': minb = parse_size(optarg); break;
        case 'e': maxb = parse_size(optarg); break;
        case 'f': factor = atoi(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    float *send = malloc(maxb + 4), *recv = malloc(maxb + 4);
    memset(send, 0, maxb + 4);
    memset(recv, 0, maxb + 4);
    if (rank == 0)
        printf("# MPI_Allreduce fp32 sum, %d ranks\n# %10s %9s %7s %7s\n", p, "size(B)", "time(us)", "algbw",
               "busbw");
    for (size_t size = minb; size <= maxb && factor > 1; size *= (size_t)factor) {
        int n = (int)(size / sizeof(float));
        for (int i = 0; i < warmup; i++)
            MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double local = (MPI_Wtime() - t0) / iters * 1e6, us;
        MPI_Allreduce(&local, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double algbw = (double)size / (us * 1e-6) / 1e9;
        if (rank == 0)
            printf("  %10zu %9.2f %7.3f %7.3f\n", size, us, algbw, algbw * 2.0 * (p - 1) / p);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
