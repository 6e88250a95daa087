/* SPDX-License-Identifier: MIT */
/*
 * The machine's state for tutti-bw's verdicts. Other processes' CPU time is
 * what the job's CPUs spent busy (/proc/stat) less what the job's ranks on
 * this machine spent (/proc/PID/stat); interrupt time is left out on both
 * sides, since the kernel charges loopback traffic's to no process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bw.h"
#include "comm/comm.h"

int tt_bw_on_this_machine(const tt_bw_job_t *job, int r)
{
    const tt_endpoint_t *e = job->in->endpoints;
    return e[r].host_id == e[0].host_id || strcmp(e[r].hostname, e[0].hostname) == 0;
}

int tt_bw_machine_init(tt_bw_job_t *job, tt_bw_machine_t *m)
{
    memset(m, 0, sizeof *m);
    m->load1 = -1;
    m->masks = calloc((size_t)job->nranks, sizeof *m->masks);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (!m->masks || sched_getaffinity(0, sizeof mine, &mine))
        CPU_ZERO(&mine); /* unknown: no rank is taken to share a CPU */
    if (!m->masks || tt_bootstrap_allgather(&job->in->bs, &mine, m->masks, sizeof mine))
        return -1;
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int r = 0; r < job->nranks; r++)
        if (tt_bw_on_this_machine(job, r)) {
            CPU_OR(&all, &all, &m->masks[r]);
            m->ranks_here++;
        }
    m->cpus = CPU_COUNT(&all);
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &m->load1) != 1)
            m->load1 = -1;
        fclose(f);
    }
    return 0;
}

void tt_bw_machine_free(tt_bw_machine_t *m)
{
    free(m->masks);
    m->masks = NULL;
}

void tt_bw_machine_describe(const tt_bw_job_t *job, char *out, size_t len)
{
    const tt_bw_machine_t *m = &job->machine;
    int n = snprintf(out, len, "%d rank%s on %d CPU%s of this host (%.1f per CPU)", m->ranks_here,
                     m->ranks_here == 1 ? "" : "s", m->cpus, m->cpus == 1 ? "" : "s",
                     m->cpus ? (double)m->ranks_here / m->cpus : 0.0);
    if (n > 0 && (size_t)n < len && m->load1 >= 0)
        n += snprintf(out + n, len - (size_t)n, "; load average %.1f over the last minute", m->load1);
    if (n > 0 && (size_t)n < len && m->ranks_here > m->cpus)
        snprintf(out + n, len - (size_t)n,
                 "; each pair is measured while the other ranks sleep, but a collective over all of them "
                 "shares the CPUs");
}

/* Busy and total ticks of the CPUs in set, from /proc/stat. */
static int cpu_ticks(const cpu_set_t *set, long long *busy, long long *total)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[512];
    int found = 0;
    *busy = *total = 0;
    while (f && fgets(line, sizeof line, f)) {
        int cpu;
        long long user, nice, sys, idle, iowait, irq, softirq, steal = 0;
        if (sscanf(line, "cpu%d %lld %lld %lld %lld %lld %lld %lld %lld", &cpu, &user, &nice, &sys, &idle,
                   &iowait, &irq, &softirq, &steal) < 8 ||
            cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, set))
            continue;
        /* steal: the hypervisor ran someone else's machine on this CPU */
        *busy += user + nice + sys + steal;
        *total += user + nice + sys + steal + idle + iowait;
        found++;
    }
    if (f)
        fclose(f);
    return found ? 0 : -1;
}

/* utime + stime of process pid, in ticks; -1 when it cannot be read. */
static long long proc_ticks(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    long long utime, stime;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &utime, &stime) != 2)
        return -1;
    return utime + stime;
}

void tt_bw_cpu_mark(const tt_bw_job_t *job, tt_bw_cpu_mark_t *mark)
{
    const tt_bw_machine_t *m = &job->machine;
    cpu_set_t all;
    CPU_ZERO(&all);
    memset(mark, 0, sizeof *mark);
    for (int r = 0; r < job->nranks; r++)
        if (tt_bw_on_this_machine(job, r))
            CPU_OR(&all, &all, &m->masks[r]);
    mark->ok = CPU_COUNT(&all) > 0 && cpu_ticks(&all, &mark->busy, &mark->total) == 0;
    for (int r = 0; mark->ok && r < job->nranks; r++) {
        if (!tt_bw_on_this_machine(job, r))
            continue;
        long long t = proc_ticks(job->in->endpoints[r].pid);
        mark->ok = t >= 0;
        mark->own += t;
    }
}

double tt_bw_others_cpus(const tt_bw_job_t *job, const tt_bw_cpu_mark_t *since)
{
    tt_bw_cpu_mark_t now;
    tt_bw_cpu_mark(job, &now);
    long long total = now.total - since->total;
    if (!since->ok || !now.ok || total <= 0)
        return -1;
    double others = (double)(now.busy - since->busy - (now.own - since->own)) / (double)total;
    return (others > 0 ? others : 0) * job->machine.cpus;
}

int tt_bw_shared_cpu(const tt_bw_machine_t *m, int a, int b)
{
    return CPU_COUNT(&m->masks[a]) == 1 && CPU_EQUAL(&m->masks[a], &m->masks[b]);
}
