/* SPDX-License-Identifier: MIT */
/*
 * nccl-tests runs -t threads x -g GPUs ranks in each process; tutti runs one
 * rank per process. Started by hand with a product above 1, tutti-perf
 * starts that many ranks through the tutti-run beside it, with the same
 * arguments less -t and -g; under a launcher it says to start more processes.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

static int under_launcher(void)
{
    static const char *const vars[] = {"TUTTI_RANK", "RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

/* Whether argv[i] is -t/-g or their long forms; *skip: how many words it takes. */
static int is_rank_flag(char **argv, int i, int *skip)
{
    const char *a = argv[i];
    static const char *const longs[] = {"--nthreads", "--ngpus"};
    *skip = 1;
    for (int k = 0; k < 2; k++) {
        size_t n = strlen(longs[k]);
        if (strncmp(a, longs[k], n) == 0 && (a[n] == '=' || a[n] == '\0')) {
            *skip = a[n] == '=' ? 1 : 2;
            return 1;
        }
    }
    if (a[0] == '-' && (a[1] == 't' || a[1] == 'g')) {
        *skip = a[2] ? 1 : 2;
        return 1;
    }
    return 0;
}

void perf_relaunch(int argc, char **argv, int ranks)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", argv[0]);
    const char *prog = basename(copy);
    if (under_launcher()) {
        fprintf(
            stderr,
            "%s: -t and -g ask for %d ranks in this process, but tutti runs one rank per process: have the "
            "launcher start %d times as many processes (mpirun -np, tutti-run -n, torchrun "
            "--nproc-per-node)\n",
            prog, ranks, ranks);
        return;
    }
    char self[PATH_MAX], run[PATH_MAX + 16], count[16];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "%s: cannot find its own program to start %d ranks\n", prog, ranks);
        return;
    }
    self[len] = '\0';
    snprintf(run, sizeof run, "%s/tutti-run", dirname(self));
    snprintf(count, sizeof count, "%d", ranks);
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args)
        return;
    int n = 0;
    args[n++] = run;
    args[n++] = "-n";
    args[n++] = count;
    args[n++] = argv[0]; /* its own name: all_reduce_perf picks its collective again */
    for (int i = 1, skip; i < argc; i += skip)
        if (!is_rank_flag(argv, i, &skip))
            args[n++] = argv[i];
    fprintf(stderr, "%s: -t/-g: %d ranks, one per process, through %s\n", prog, ranks, run);
    execv(run, args);
    execvp("tutti-run", args);
    perror("tutti-perf: starting tutti-run");
    free(args);
}
