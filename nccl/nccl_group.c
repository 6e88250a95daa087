/* SPDX-License-Identifier: MIT */
/*
 * ncclGroupStart/ncclGroupEnd. Calls between them are kept on this thread
 * and run at the outermost end: communicator inits all at once (ranks of
 * one process driven by one thread), then each communicator's calls, the
 * communicators side by side on threads of their own (a blocking call on
 * one would otherwise wait for another that has not started). On one
 * communicator the collectives run in call order, then all its sends and
 * receives as one batch (exec.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "nccl/nccl_int.h"

typedef struct {
    int depth;
    tt_nccl_op_t *ops;
    int nops, ops_cap;
    struct job {
        ncclComm_t comm;
        int finalize; /* else an init */
    } * jobs;
    int njobs, jobs_cap;
    ncclResult_t error; /* the first call of the group that failed */
} group_t;

static _Thread_local group_t group;

void tt_nccl_group_note(ncclResult_t res)
{
    if (group.depth > 0 && res && !group.error)
        group.error = res;
}

ncclResult_t tt_nccl_submit(const tt_nccl_op_t *op, const char *call)
{
    if (group.depth == 0)
        return tt_nccl_run(op->comm, op, 1);
    if (tt_grow((void **)&group.ops, &group.ops_cap, group.nops + 1, sizeof *group.ops)) {
        tt_nccl_group_note(ncclSystemError);
        return tt_nccl_error(op->comm, ncclSystemError, "%s: no memory to keep the call for ncclGroupEnd",
                             call);
    }
    group.ops[group.nops++] = *op;
    return ncclSuccess;
}

static int defer(ncclComm_t comm, int finalize)
{
    if (group.depth == 0)
        return 0;
    if (tt_grow((void **)&group.jobs, &group.jobs_cap, group.njobs + 1, sizeof *group.jobs)) {
        tt_nccl_group_note(ncclSystemError);
        return 0; /* then it runs at once */
    }
    group.jobs[group.njobs++] = (struct job){comm, finalize};
    return 1;
}

int tt_nccl_group_defer_init(ncclComm_t comm)
{
    return defer(comm, 0);
}

int tt_nccl_group_defer_finalize(ncclComm_t comm)
{
    return defer(comm, 1);
}

TT_NCCL_EXPORT ncclResult_t pncclGroupStart(void)
{
    tt_nccl_once();
    group.depth++;
    return ncclSuccess;
}
TT_NCCL_ALIAS(ncclGroupStart)

/* Starts every init and finalize at once; waits for the blocking ones. */
static ncclResult_t run_jobs(struct job *jobs, int n, int *in_progress)
{
    ncclResult_t res = ncclSuccess;
    for (int i = 0; i < n; i++) {
        ncclResult_t r =
            jobs[i].finalize ? tt_nccl_start_finalize(jobs[i].comm) : tt_nccl_start_init(jobs[i].comm);
        res = res ? res : r;
    }
    for (int i = 0; i < n; i++) {
        ncclComm_t c = jobs[i].comm;
        if (!c->blocking) {
            *in_progress = 1;
            continue;
        }
        tt_nccl_join(c);
        if (!res && c->state)
            res = tt_nccl_context(c->state, "ncclGroupEnd: rank %d's %s: %s", c->rank,
                                  jobs[i].finalize ? "finalize" : "init", c->error);
    }
    return res;
}

typedef struct {
    ncclComm_t comm;
    tt_nccl_op_t *ops;
    int n;
    ncclResult_t res;
    char error[512]; /* the thread's last error, for the caller's */
    pthread_t thread;
    int threaded;
} part_t;

static void *run_part(void *arg)
{
    part_t *p = arg;
    p->res = tt_nccl_reenter(p->comm, "ncclGroupEnd");
    if (!p->res) {
        p->res = tt_nccl_run(p->comm, p->ops, p->n);
        tt_nccl_leave(p->comm);
    }
    if (p->res)
        snprintf(p->error, sizeof p->error, "%s", pncclGetLastError(NULL));
    return NULL;
}

/* Sorts ops by communicator (stably) into parts. */
static int split_by_comm(tt_nccl_op_t *ops, int n, tt_nccl_op_t *sorted, part_t *parts)
{
    int nparts = 0, k = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = ops[j].comm == ops[i].comm;
        if (seen)
            continue;
        parts[nparts] = (part_t){.comm = ops[i].comm, .ops = sorted + k};
        for (int j = i; j < n; j++)
            if (ops[j].comm == ops[i].comm)
                sorted[k++] = ops[j];
        parts[nparts].n = (int)(sorted + k - parts[nparts].ops);
        nparts++;
    }
    return nparts;
}

static ncclResult_t run_ops(tt_nccl_op_t *ops, int n)
{
    tt_nccl_op_t *sorted = malloc((size_t)n * sizeof *sorted);
    part_t *parts = calloc((size_t)n, sizeof *parts);
    if (!sorted || !parts) {
        free(sorted);
        free(parts);
        return tt_nccl_error(NULL, ncclSystemError, "ncclGroupEnd: no memory to run %d calls", n);
    }
    int nparts = split_by_comm(ops, n, sorted, parts);
    for (int i = 1; i < nparts; i++)
        parts[i].threaded = pthread_create(&parts[i].thread, NULL, run_part, &parts[i]) == 0;
    for (int i = 0; i < nparts; i++)
        if (i == 0 || !parts[i].threaded) /* here, when no thread could start */
            run_part(&parts[i]);
    ncclResult_t res = ncclSuccess;
    for (int i = 0; i < nparts; i++) {
        if (i > 0 && parts[i].threaded)
            pthread_join(parts[i].thread, NULL);
        if (!res && parts[i].res)
            res = tt_nccl_context(parts[i].res, "%s", parts[i].error);
    }
    free(sorted);
    free(parts);
    return res;
}

TT_NCCL_EXPORT ncclResult_t pncclGroupEnd(void)
{
    tt_nccl_once();
    if (group.depth == 0)
        return tt_nccl_error(NULL, ncclInvalidUsage, "ncclGroupEnd: no group is open (ncclGroupStart first)");
    if (--group.depth > 0)
        return ncclSuccess;
    group_t g = group; /* the calls below may open groups of their own */
    memset(&group, 0, sizeof group);
    ncclResult_t res = g.error;
    int in_progress = 0;
    if (!res && g.njobs)
        res = run_jobs(g.jobs, g.njobs, &in_progress);
    if (!res && g.nops)
        res = run_ops(g.ops, g.nops);
    free(g.ops);
    free(g.jobs);
    return res ? res : in_progress ? ncclInProgress : ncclSuccess;
}
TT_NCCL_ALIAS(ncclGroupEnd)

/* Nothing to simulate: tutti predicts times per algorithm (tutti-explain),
 * not per group. The group ends as NCCL ends it, its calls not run (its
 * inits and finalizes do run: their handles are out). */
TT_NCCL_EXPORT ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    (void)simInfo;
    tt_nccl_once();
    if (group.depth == 0)
        return tt_nccl_error(NULL, ncclInvalidUsage, "ncclGroupSimulateEnd: no group is open");
    if (--group.depth == 0) {
        group_t g = group;
        memset(&group, 0, sizeof group);
        int in_progress = 0;
        run_jobs(g.jobs, g.njobs, &in_progress);
        free(g.ops);
        free(g.jobs);
    }
    return tt_nccl_error(
        NULL, ncclInvalidUsage,
        "ncclGroupSimulateEnd: tutti does not simulate groups; the group's calls were not run "
        "(tutti-explain predicts each collective's time)");
}
TT_NCCL_ALIAS(ncclGroupSimulateEnd)
