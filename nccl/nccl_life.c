/* SPDX-License-Identifier: MIT */
/*
 * A communicator's life after init: split, finalize, destroy and abort
 * (which may come from another thread while a call waits), and the
 * queries that must not wait (ncclCommGetAsyncError, the watchdog's poll).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "nccl/nccl_int.h"

/* Under the registry's and comm's locks: whether comm is live, and what
 * it knows without waiting. */
typedef struct {
    ncclResult_t state;
    int nranks, rank, device;
} peek_t;

static ncclResult_t peek(ncclComm_t comm, peek_t *out, const char *call)
{
    tt_nccl_once();
    if (!tt_nccl_snapshot(comm, &out->state, &out->nranks, &out->rank, &out->device))
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "%s: comm: not a live communicator (NULL, destroyed or aborted)", call);
    return ncclSuccess;
}

TT_NCCL_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    peek_t p;
    if (!asyncError)
        return tt_nccl_error(NULL, ncclInvalidArgument, "ncclCommGetAsyncError: asyncError: NULL pointer");
    ncclResult_t res = peek(comm, &p, "ncclCommGetAsyncError");
    if (!res)
        *asyncError = p.state;
    return res;
}
TT_NCCL_ALIAS(ncclCommGetAsyncError)

/* Count and rank are known from the init's arguments, except for a split
 * still running: then they wait for it. */
static ncclResult_t query(ncclComm_t comm, int *out, int which, const char *call)
{
    peek_t p;
    if (!out)
        return tt_nccl_error(NULL, ncclInvalidArgument, "%s: NULL output pointer", call);
    ncclResult_t res = peek(comm, &p, call);
    ncclComm_t inside = comm;
    if (!res && p.nranks == 0 && (res = tt_nccl_enter(&inside, call)) == ncclSuccess) {
        tt_nccl_leave(inside);
        res = peek(comm, &p, call);
    }
    if (!res)
        *out = which == 0 ? p.nranks : which == 1 ? p.rank : p.device;
    return res;
}

TT_NCCL_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
    return query(comm, count, 0, "ncclCommCount");
}
TT_NCCL_ALIAS(ncclCommCount)

TT_NCCL_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
    return query(comm, rank, 1, "ncclCommUserRank");
}
TT_NCCL_ALIAS(ncclCommUserRank)

TT_NCCL_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
    return query(comm, device, 2, "ncclCommCuDevice");
}
TT_NCCL_ALIAS(ncclCommCuDevice)

/*
 * Destroyed communicators waiting for the other ranks of their job in this
 * process (ncclCommInitAll, or ranks on threads): tutti_comm_destroy waits
 * for every rank, so a thread that destroys its ranks one after the other
 * would wait forever in the first. As NCCL does, the last rank of the job
 * in this process to be destroyed destroys them all, side by side.
 */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static ncclComm_t pending[TT_NCCL_MAX_PENDING];

static void *destroy_main(void *arg)
{
    ncclComm_t comm = arg;
    tutti_status_t st = tutti_comm_destroy(comm->tc);
    comm->state = st ? tt_nccl_failed(NULL, st) : ncclSuccess;
    return NULL;
}

/* comm and the pending ranks of its job, destroyed together. */
static ncclResult_t destroy_job(ncclComm_t comm, ncclComm_t *others, int n)
{
    pthread_t threads[TT_NCCL_MAX_PENDING];
    int started[TT_NCCL_MAX_PENDING] = {0};
    for (int i = 0; i < n; i++)
        started[i] = pthread_create(&threads[i], NULL, destroy_main, others[i]) == 0;
    destroy_main(comm);
    for (int i = 0; i < n; i++) /* a thread that could not start: here, after the others */
        started[i] ? (void)pthread_join(threads[i], NULL) : (void)destroy_main(others[i]);
    ncclResult_t res = comm->state;
    for (int i = 0; i < n; i++) {
        res = res ? res : others[i]->state;
        tt_nccl_free(others[i]);
    }
    return res;
}

/* Destroys comm now, or leaves it to the last rank of its job here. */
static ncclResult_t destroy_or_wait(ncclComm_t comm)
{
    uint64_t tag = tt_nccl_inner(comm->tc)->env.key_tag;
    ncclComm_t others[TT_NCCL_MAX_PENDING];
    int n = 0;
    pthread_mutex_lock(&pending_lock);
    if (tt_nccl_live_in_job(tag) > 0)
        for (int i = 0; i < TT_NCCL_MAX_PENDING; i++)
            if (!pending[i]) {
                pending[i] = comm;
                pthread_mutex_unlock(&pending_lock);
                return ncclSuccess;
            }
    for (int i = 0; i < TT_NCCL_MAX_PENDING; i++)
        if (pending[i] && tt_nccl_inner(pending[i]->tc)->env.key_tag == tag) {
            others[n++] = pending[i];
            pending[i] = NULL;
        }
    pthread_mutex_unlock(&pending_lock);
    ncclResult_t res = destroy_job(comm, others, n);
    tt_nccl_free(comm);
    return res;
}

/* In a forked child the communicator is the parent's: only this process's
 * copy is released (tutti_comm(3), FORK), waiting for nothing the parent's
 * threads were doing at the fork. */
static ncclResult_t release_copy(ncclComm_t comm)
{
    tutti_comm_t tc = comm->tc;
    if (tc)
        tutti_comm_destroy(tc); /* here it releases the copy and tells no one */
    free(comm);
    return ncclSuccess;
}

/* Frees comm, its tutti communicator destroyed (collective) or aborted. */
static ncclResult_t close_comm(ncclComm_t handle, int aborting, const char *call)
{
    tt_nccl_once();
    if (!handle)
        return ncclSuccess; /* as NCCL: nothing to do */
    ncclComm_t comm = tt_nccl_retire_handle(handle, aborting);
    if (!comm)
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "%s: comm: not a live communicator (destroyed or aborted)", call);
    if (tt_nccl_forked(comm))
        return release_copy(comm);
    tt_nccl_join(comm); /* an init or finalize still running: it cannot be interrupted */
    tutti_comm_t tc = tt_nccl_tc(comm);
    if (tc && !aborting && comm->state == ncclSuccess)
        return destroy_or_wait(comm);
    tutti_status_t st = tc ? tutti_comm_abort(tc) : TUTTI_SUCCESS;
    ncclResult_t res = st ? tt_nccl_failed(NULL, st) : ncclSuccess;
    tt_nccl_free(comm);
    return res;
}

TT_NCCL_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
    return close_comm(comm, 0, "ncclCommDestroy");
}
TT_NCCL_ALIAS(ncclCommDestroy)

TT_NCCL_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm)
{
    return close_comm(comm, 1, "ncclCommAbort");
}
TT_NCCL_ALIAS(ncclCommAbort)

static void *finalize_main(void *arg)
{
    ncclComm_t comm = arg;
    pthread_mutex_lock(&comm->lock);
    tutti_comm_t tc = comm->tc;
    atomic_store_explicit(&comm->tc, NULL, memory_order_release); /* before it goes: see tt_nccl_snapshot */
    pthread_mutex_unlock(&comm->lock);
    tutti_status_t st = tc ? tutti_comm_destroy(tc) : TUTTI_SUCCESS;
    pthread_mutex_lock(&comm->lock);
    comm->finalized = 1;
    comm->state = tt_nccl_result(st);
    if (st)
        snprintf(comm->error, sizeof comm->error, "%s", tutti_comm_last_error(NULL));
    pthread_cond_broadcast(&comm->changed);
    pthread_mutex_unlock(&comm->lock);
    return NULL;
}

ncclResult_t tt_nccl_start_finalize(ncclComm_t comm)
{
    tt_nccl_join(comm); /* a non-blocking init's worker, done by now: joined before the next one starts */
    pthread_mutex_lock(&comm->lock);
    comm->state = ncclInProgress;
    comm->has_worker = pthread_create(&comm->worker, NULL, finalize_main, comm) == 0;
    pthread_mutex_unlock(&comm->lock);
    if (!comm->has_worker)
        finalize_main(comm); /* here, then */
    return ncclSuccess;
}

/* The collective half of destroy: the last barrier and the connections;
 * ncclCommDestroy then only frees. Non-blocking, or in a group (where the
 * finalizes of ranks driven by one thread must run together): on a worker
 * thread. */
TT_NCCL_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommFinalize");
    if (res)
        return res;
    tt_nccl_leave(comm); /* the communicator is no longer used by calls */
    if (comm->revoked)   /* as NCCL: a revocation finalized it */
        return tt_nccl_error(comm, ncclInvalidArgument,
                             "ncclCommFinalize: the communicator was revoked; destroy or abort it");
    if (tt_nccl_group_defer_finalize(comm))
        return ncclSuccess;
    if (!comm->blocking) {
        tt_nccl_start_finalize(comm);
        return ncclInProgress;
    }
    finalize_main(comm);
    return comm->state ? tt_nccl_context(comm->state, "ncclCommFinalize: %s", comm->error) : ncclSuccess;
}
TT_NCCL_ALIAS(ncclCommFinalize)

TT_NCCL_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                           ncclConfig_t *config)
{
    ncclResult_t res = tt_nccl_enter(&comm, "ncclCommSplit");
    if (res)
        return res;
    int blocking;
    res = newcomm ? tt_nccl_config(config, comm->blocking, &blocking, "ncclCommSplit")
                  : tt_nccl_error(comm, ncclInvalidArgument, "ncclCommSplit: newcomm: NULL pointer");
    if (!res)
        res = tt_nccl_split(comm, color, key, blocking,
                            tt_nccl_config_share(config, offsetof(ncclConfig_t, splitShare),
                                                 "NCCL_COMM_SPLIT_SHARE_RESOURCES"),
                            newcomm);
    tt_nccl_leave(comm);
    return res;
}
TT_NCCL_ALIAS(ncclCommSplit)
