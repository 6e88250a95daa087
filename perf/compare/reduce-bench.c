/* SPDX-License-Identifier: MIT */
/*
 * reduce-bench: the CPU reduction kernels' speed, per instruction set, dtype
 * and op, on a cache-resident and a memory-sized buffer, next to memcpy
 * measured in the same run (this project's machines change speed from one
 * minute to the next, so only the ratio to memcpy compares across runs).
 * GB/s counts the three streams a kernel touches (read a, read b, write
 * dst); memcpy's counts two. Every round runs every kernel once; the
 * table shows medians of -r rounds.
 *
 *     perf/compare/reduce-bench [-r 7] [-s 64M]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "reduce/reduce.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* GB/s of one pass of reps calls of fn (3 streams), or of memcpy (2) when fn is NULL. */
static double once(tt_reduce_fn fn, char *d, const char *a, const char *b, size_t bytes, size_t elem)
{
    size_t n = bytes / elem, reps = (size_t)(1 << 25) / bytes + 1;
    int64_t t0 = tt_now_ns();
    for (size_t i = 0; i < reps; i++) {
        if (fn)
            fn(d, a, b, n);
        else
            memcpy(d, a, bytes);
        __asm__ volatile("" ::"r"(d) : "memory"); /* keep every pass */
    }
    return (fn ? 3.0 : 2.0) * (double)bytes * (double)reps / (double)(tt_now_ns() - t0);
}

int main(int argc, char **argv)
{
    int rounds = 7, opt;
    size_t big = (size_t)64 << 20;
    while ((opt = getopt(argc, argv, "r:s:h")) != -1) {
        if (opt == 'r')
            rounds = atoi(optarg);
        else if (opt == 's')
            big = (size_t)strtoull(optarg, NULL, 0) << 20;
        else {
            fprintf(stderr, "usage: reduce-bench [-r ROUNDS (7)] [-s MIB (64)]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    if (rounds < 1 || rounds > 64 || big < 4096) {
        fprintf(stderr, "reduce-bench: -r 1..64, -s at least 1\n");
        return 2;
    }
    char *a = malloc(big), *b = malloc(big), *d = malloc(big);
    if (!a || !b || !d) {
        fprintf(stderr, "reduce-bench: no memory for 3 x %zu bytes\n", big);
        return 1;
    }
    for (size_t i = 0; i < big; i++) { /* small finite values in every dtype */
        a[i] = (char)(i % 7 + 1);
        b[i] = (char)(i % 5 + 1);
    }
    static const size_t sizes[] = {(size_t)64 << 10, 0};
    static const struct {
        tutti_dtype_t t;
        tutti_op_t op;
    } kinds[] = {{TUTTI_FP32, TUTTI_SUM}, {TUTTI_FP32, TUTTI_MAX}, {TUTTI_FP64, TUTTI_SUM},
                 {TUTTI_FP16, TUTTI_SUM}, {TUTTI_BF16, TUTTI_SUM}, {TUTTI_INT32, TUTTI_SUM}};
    enum { MAX_KERNELS = 1 + TT_ISA_COUNT * 6 };
    static double g[2][MAX_KERNELS][64];
    /* Round by round, every kernel once, so that a slow moment of the
     * machine falls on all of them alike. */
    for (int r = 0; r < rounds; r++)
        for (size_t si = 0; si < 2; si++) {
            size_t bytes = sizes[si] ? sizes[si] : big;
            int j = 0;
            g[si][j++][r] = once(NULL, d, a, b, bytes, 1);
            for (int isa = 0; isa < TT_ISA_COUNT; isa++)
                for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
                    tt_reduce_fn fn = tt_reduce_get_isa((tt_isa_t)isa, kinds[k].t, kinds[k].op);
                    if (fn)
                        g[si][j++][r] = once(fn, d, a, b, bytes, tutti_dtype_size(kinds[k].t));
                }
        }
    printf("| isa | kernel | size | GB/s | / memcpy |\n|---|---|---|---|---|\n");
    for (size_t si = 0; si < 2; si++) {
        size_t bytes = sizes[si] ? sizes[si] : big;
        for (int j = 0; j < MAX_KERNELS; j++)
            qsort(g[si][j], (size_t)rounds, sizeof(double), by_value);
        double mc = g[si][0][rounds / 2];
        printf("| - | memcpy | %zu KiB | %.1f | 1.00 |\n", bytes >> 10, mc);
        int j = 1;
        for (int isa = 0; isa < TT_ISA_COUNT; isa++)
            for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
                if (!tt_reduce_get_isa((tt_isa_t)isa, kinds[k].t, kinds[k].op))
                    continue;
                double m = g[si][j++][rounds / 2];
                printf("| %s | %s %s | %zu KiB | %.1f | %.2f |\n", tt_isa_name((tt_isa_t)isa),
                       tutti_dtype_name(kinds[k].t), tutti_op_name(kinds[k].op), bytes >> 10, m, m / mc);
            }
    }
    free(a);
    free(b);
    free(d);
    return 0;
}
