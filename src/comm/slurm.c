/* SPDX-License-Identifier: MIT */
/*
 * Joining under srun when no PMIx server is there (srun --mpi=none, or a
 * tutti built without PMIx): rank and size from SLURM_PROCID and
 * SLURM_STEP_NUM_TASKS, the root on the first node of SLURM_STEP_NODELIST
 * (Slurm's compressed host list) at a port Slurm reserved for the step or
 * one derived from the job and step ids.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "comm/join.h"
#include "core/env_config.h"
#include "core/log.h"

#define MAX_GROUPS 8         /* bracket groups in one host list entry */
#define MAX_HOSTS (1L << 24) /* far beyond any cluster; keeps products from overflowing */

/*
 * Derived ports lie in [PORT_BASE, PORT_BASE + PORT_SPAN): below Linux's
 * ephemeral ports (32768 up), which outgoing connections take, and below
 * torch's customary MASTER_PORT, 29500. Consecutive jobs and a job's first
 * eight steps get distinct ports, so only jobs about 1200 ids apart whose
 * steps start on one node at one time can meet, and then rank 0 names the
 * port it cannot take.
 */
#define PORT_BASE 20000
#define PORT_SPAN 9500
#define PORT_STEPS 8

/* One range of a bracket group: lo..hi, printed at least width digits wide
 * ("01-04" keeps its zero). */
typedef struct {
    unsigned long lo, hi;
    int width;
} range_t;

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The range at *s, which ends at ',' or ']': 0 and *s past it, or -1. */
static int read_range(const char **s, range_t *r)
{
    const char *p = *s;
    char *end;
    if (!is_digit(*p))
        return -1;
    r->lo = r->hi = strtoul(p, &end, 10);
    r->width = (int)(end - p);
    if (*end == '-') {
        if (!is_digit(end[1]))
            return -1;
        r->hi = strtoul(end + 1, &end, 10);
    }
    if (r->hi < r->lo || r->hi - r->lo >= (unsigned long)MAX_HOSTS || (*end != ',' && *end != ']'))
        return -1;
    *s = end;
    return 0;
}

/* The number of hosts in the group whose '[' is at s, or -1. */
static long group_size(const char *s)
{
    long n = 0;
    range_t r;
    for (s++;; s++) {
        if (read_range(&s, &r))
            return -1;
        n += (long)(r.hi - r.lo + 1);
        if (n > MAX_HOSTS)
            return -1;
        if (*s == ']')
            return n;
    }
}

/* Writes the k-th number of the group at s (k < its size) at out. */
static int group_pick(const char *s, long k, char *out, size_t len)
{
    range_t r;
    for (s++;; s++) {
        read_range(&s, &r); /* group_size read it already */
        long n = (long)(r.hi - r.lo + 1);
        if (k < n) {
            int w = snprintf(out, len, "%0*lu", r.width, r.lo + (unsigned long)k);
            return w < 0 || (size_t)w >= len ? -1 : w;
        }
        k -= n;
    }
}

/*
 * The hosts of one entry, [s, end), such as "node[01-04,07]-ib": every
 * combination of its groups' numbers, the last group varying fastest.
 * Returns their count (-1 when malformed) and, when out is not NULL and
 * k < count, writes host k there (-1 when it does not fit).
 */
static long entry_hosts(const char *s, const char *end, long k, char *out, size_t len)
{
    const char *groups[MAX_GROUPS];
    long sizes[MAX_GROUPS], count = 1;
    int ngroups = 0;
    for (const char *p = s; p < end; p++) {
        if (*p != '[')
            continue;
        if (ngroups == MAX_GROUPS || (sizes[ngroups] = group_size(p)) < 0)
            return -1;
        count *= sizes[ngroups];
        if (count > MAX_HOSTS)
            return -1;
        groups[ngroups++] = p;
        p = strchr(p, ']');
    }
    if (!out || k >= count)
        return count;
    long pick[MAX_GROUPS];
    for (int g = ngroups - 1; g >= 0; g--) {
        pick[g] = k % sizes[g];
        k /= sizes[g];
    }
    size_t at = 0;
    int g = 0;
    for (const char *p = s; p < end; p++) {
        if (at + 1 >= len)
            return -1;
        if (*p != '[') {
            out[at++] = *p;
            continue;
        }
        int w = group_pick(groups[g], pick[g], out + at, len - at);
        if (w < 0)
            return -1;
        at += (size_t)w;
        p = strchr(p, ']');
        g++;
    }
    out[at] = '\0';
    return count;
}

/* Host n of list into out (when out is not NULL); returns the list's
 * length, or -1 when it is malformed or host n does not fit. */
static long hostlist_walk(const char *list, long n, char *out, size_t len)
{
    long total = 0;
    const char *start = list;
    int depth = 0;
    for (const char *p = list;; p++) {
        if (*p == '[' || *p == ']') {
            depth += *p == '[' ? 1 : -1;
            if (depth < 0 || depth > 1)
                return -1;
            continue;
        }
        if (*p && (*p != ',' || depth))
            continue;
        if (depth || p == start)
            return -1; /* an open bracket, or an empty entry */
        long k = n - total;
        long here = entry_hosts(start, p, k, k >= 0 ? out : NULL, len);
        if (here < 0)
            return -1;
        total += here;
        if (total > MAX_HOSTS)
            return -1;
        if (!*p)
            return total;
        start = p + 1;
    }
}

long tt_slurm_hostlist_count(const char *list)
{
    return list && *list ? hostlist_walk(list, -1, NULL, 0) : -1;
}

int tt_slurm_hostlist_nth(const char *list, long n, char *out, size_t len)
{
    if (!list || !*list || n < 0 || len < 2)
        return -1;
    out[0] = '\0';
    long total = hostlist_walk(list, n, out, len);
    return total > n && out[0] ? 0 : -1;
}

/* The first port of SLURM_STEP_RESV_PORTS ("12000-12003"), or 0. */
static int reserved_port(const char *resv)
{
    unsigned long first = resv && is_digit(*resv) ? strtoul(resv, NULL, 10) : 0;
    return first <= 65535 ? (int)first : 0;
}

int tt_slurm_root_port(unsigned long job, unsigned long step, const char *resv)
{
    int port = reserved_port(resv);
    return port ? port : PORT_BASE + (int)((job * PORT_STEPS + step % PORT_STEPS) % PORT_SPAN);
}

/* An unsigned Slurm id (job, step) from variable name: 0, or -1. */
static int env_id(const char *name, unsigned long *out)
{
    const char *v = getenv(name);
    int64_t x;
    if (!v || tt_parse_int(v, &x) || x < 0)
        return -1;
    *out = (unsigned long)x;
    return 0;
}

int tt_slurm_step_tasks(void)
{
    static const char *const others[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    int tasks, rank, n;
    if (tt_join_env_int("SLURM_STEP_NUM_TASKS", &tasks) || tt_join_env_int("SLURM_PROCID", &rank))
        return 0;
    /* mpirun started inside a step leaves the step's variables to its
     * ranks; they then describe the step, not mpirun's job. */
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (tt_join_env_int(others[i], &n) == 0 && n != tasks)
            return 0;
    return tasks;
}

/* Rank 0 serves on the step's first node; under an odd distribution
 * (arbitrary, plane) it may be elsewhere, and every rank would wait. */
static tutti_status_t check_rank0_node(const char *first)
{
    const char *here = getenv("SLURMD_NODENAME");
    if (!here || strcmp(here, first) == 0)
        return TUTTI_SUCCESS;
    return tt_comm_error_in(
        NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
        "srun placed rank 0 on %s, not on the step's first node %s, where the other ranks "
        "look for it: use srun --mpi=pmix, or a distribution that puts task 0 on the first node",
        here, first);
}

/*
 * Slurm hands a step's tasks no secret of their own: the job and step ids,
 * the node list and the task count are public (squeue), srun's port shows in
 * /proc/net/tcp on the host srun runs on. So the derived key separates jobs
 * and steps but does not keep out another user; TUTTI_KEY exported before
 * srun does, since srun passes its environment only to the step's tasks.
 */
static void derive_step_key(tt_join_t *j, unsigned long job, unsigned long step, const char *nodes)
{
    char material[1024];
    const char *host = getenv("SLURM_SRUN_COMM_HOST"), *port = getenv("SLURM_SRUN_COMM_PORT");
    snprintf(material, sizeof material, "slurm|%lu|%lu|%d|%s|%s|%s|%u", job, step, j->nranks, nodes,
             host ? host : "", port ? port : "", (unsigned)getuid());
    tt_join_derive_key(material, j->key);
    if (j->rank == 0)
        TT_INFO(TT_SUB_INIT,
                "srun without TUTTI_KEY: the job key is derived from job %lu step %lu, which keeps "
                "jobs apart but is no secret (tutti(7), SECURITY)",
                job, step);
}

tutti_status_t tt_slurm_join(tt_join_t *j, int have_key)
{
    const char *nodes = getenv("SLURM_STEP_NODELIST"), *given = tt_config_str(TT_CFG_ROOT_ADDR);
    unsigned long job, step;
    if (tt_join_env_int("SLURM_PROCID", &j->rank) || tt_join_env_int("SLURM_STEP_NUM_TASKS", &j->nranks) ||
        env_id("SLURM_JOB_ID", &job) || env_id("SLURM_STEP_ID", &step) || !nodes)
        return tt_comm_error_in(
            NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
            "started by srun without a PMIx server, but SLURM_PROCID, SLURM_STEP_NUM_TASKS, "
            "SLURM_JOB_ID, SLURM_STEP_ID or SLURM_STEP_NODELIST is missing: use srun "
            "--mpi=pmix, or set TUTTI_RANK, TUTTI_NRANKS, TUTTI_ROOT_ADDR and TUTTI_KEY");
    char first[256], text[300];
    if (tt_slurm_hostlist_nth(nodes, 0, first, sizeof first))
        return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                "SLURM_STEP_NODELIST=%s is not a Slurm host list: use srun --mpi=pmix",
                                nodes);
    const char *resv = getenv("SLURM_STEP_RESV_PORTS"), *note;
    if (*given) {
        snprintf(text, sizeof text, "%s", given);
        note = "under srun tutti's root listens at TUTTI_ROOT_ADDR";
    } else {
        snprintf(text, sizeof text, "%s:%d", first, tt_slurm_root_port(job, step, resv));
        note = reserved_port(resv)
                   ? "under srun without PMIx tutti's root listens on the step's first node, at "
                     "the first port Slurm reserved for the step (SLURM_STEP_RESV_PORTS)"
                   : "under srun without PMIx tutti's root listens on the step's first node, at "
                     "a port derived from the job and step ids; if another program holds it, "
                     "use srun --mpi=pmix or set TUTTI_ROOT_ADDR=host:port for every task";
    }
    if (tt_sock_parse_addr(text, &j->root)) /* it said why */
        return tt_comm_error_logged(NULL, TUTTI_ERR_CONFIG, "%s cannot be resolved (%s)", text, note);
    tutti_status_t st = j->rank == 0 && !*given ? check_rank0_node(first) : TUTTI_SUCCESS;
    if (st)
        return st;
    if (!have_key)
        derive_step_key(j, job, step, nodes);
    return tt_join_serve_root(j, text, note);
}
