/* SPDX-License-Identifier: MIT */
/*
 * The state of the machine tutti-bw measures on, which its verdicts must
 * take into account: the CPUs the job's ranks may run on, how many ranks
 * share them, the load, and how much CPU other processes took while a
 * transport was measured.
 */
#ifndef TT_BW_MACHINE_H
#define TT_BW_MACHINE_H

#include <sched.h>

typedef struct {
    cpu_set_t *masks; /* [rank]: the CPUs each rank may run on */
    int cpus;         /* CPUs the ranks on rank 0's machine may run on, together */
    int ranks_here;   /* ranks on rank 0's machine (simulated hosts included) */
    double load1;     /* the 1-minute load average; < 0: unknown */
} tt_bw_machine_t;

/* CPU time on the job's CPUs of rank 0's machine, and its ranks' own share. */
typedef struct {
    long long busy, total; /* ticks of /proc/stat's per-CPU lines */
    long long own;         /* ticks the ranks of this host used (/proc/PID/stat) */
    int ok;
} tt_bw_cpu_mark_t;

struct tt_bw_job;
/* Every rank: gathers the ranks' CPU masks; rank 0 fills the rest. */
int tt_bw_machine_init(struct tt_bw_job *job, tt_bw_machine_t *m);
void tt_bw_machine_free(tt_bw_machine_t *m);
/* Rank 0: the machine's state as one line: "2 ranks on 2 CPUs ...". */
void tt_bw_machine_describe(const struct tt_bw_job *job, char *out, size_t len);
/* Rank 0: a mark to measure other processes' CPU time from. */
void tt_bw_cpu_mark(const struct tt_bw_job *job, tt_bw_cpu_mark_t *mark);
/* Rank 0: the CPUs other processes kept busy on average since mark; < 0: unknown. */
double tt_bw_others_cpus(const struct tt_bw_job *job, const tt_bw_cpu_mark_t *since);
/* Whether rank r runs on rank 0's machine: its host, or one of the same
 * name (the simulated hosts of tutti-run --nodes share one machine). */
int tt_bw_on_this_machine(const struct tt_bw_job *job, int r);
/* Whether ranks a and b may run on one CPU only, the same one. */
int tt_bw_shared_cpu(const tt_bw_machine_t *m, int a, int b);

#endif
