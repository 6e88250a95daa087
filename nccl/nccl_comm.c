/* SPDX-License-Identifier: MIT */
/*
 * The handles behind ncclComm_t: a registry of live ones (a destroyed or
 * garbage handle is refused, not used), and the count of calls inside each,
 * so that ncclCommAbort from another thread frees a communicator only once
 * the calls that were inside it have returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "nccl/nccl_int.h"

#define TT_NCCL_MAGIC 0x7474636f6d6d6e63ull /* "ttcommnc" */
#define TT_NCCL_MAX_COMMS 4096

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ncclComm_t registry[TT_NCCL_MAX_COMMS];

static int find(ncclComm_t comm)
{
    for (int i = 0; comm && i < TT_NCCL_MAX_COMMS; i++)
        if (registry[i] == comm)
            return i;
    return -1;
}

ncclComm_t tt_nccl_new(int nranks, int rank, int blocking)
{
    ncclComm_t comm = calloc(1, sizeof *comm);
    if (!comm)
        return NULL;
    comm->magic = TT_NCCL_MAGIC;
    comm->nranks = nranks;
    comm->rank = rank;
    comm->device = -1;
    comm->blocking = blocking;
    comm->state = ncclInProgress;
    pthread_mutex_init(&comm->lock, NULL);
    pthread_cond_init(&comm->changed, NULL);
    return comm;
}

void tt_nccl_register(ncclComm_t comm)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < TT_NCCL_MAX_COMMS; i++)
        if (!registry[i]) {
            registry[i] = comm;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

void tt_nccl_free(ncclComm_t comm)
{
    comm->magic = 0;
    pthread_cond_destroy(&comm->changed);
    pthread_mutex_destroy(&comm->lock);
    free(comm);
}

void tt_nccl_join(ncclComm_t comm)
{
    pthread_mutex_lock(&comm->lock);
    int has = comm->has_worker;
    comm->has_worker = 0;
    pthread_mutex_unlock(&comm->lock);
    if (has)
        pthread_join(comm->worker, NULL);
}

/* Waits for a background init or finalize; its outcome. */
static ncclResult_t settled(ncclComm_t comm)
{
    pthread_mutex_lock(&comm->lock);
    while (comm->state == ncclInProgress && comm->has_worker)
        pthread_cond_wait(&comm->changed, &comm->lock);
    ncclResult_t res = comm->state;
    pthread_mutex_unlock(&comm->lock);
    return res;
}

ncclResult_t tt_nccl_enter(ncclComm_t comm, const char *call)
{
    tt_nccl_once();
    pthread_mutex_lock(&registry_lock);
    int ok = find(comm) >= 0;
    if (ok) {
        pthread_mutex_lock(&comm->lock);
        ok = !comm->closing;
        comm->users += ok;
        pthread_mutex_unlock(&comm->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    if (!ok)
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "%s: comm: not a live communicator (NULL, destroyed or aborted)", call);
    ncclResult_t res = settled(comm);
    if (res == ncclSuccess && comm->finalized)
        res = tt_nccl_error(comm, ncclInvalidUsage,
                            "%s: the communicator was finalized; only ncclCommDestroy is left", call);
    else if (res == ncclInProgress) /* no worker yet: its init waits for the end of the open group */
        res = tt_nccl_error(comm, ncclInvalidUsage,
                            "%s: the communicator is still being created by the open group; call it after "
                            "ncclGroupEnd",
                            call);
    else if (res != ncclSuccess) /* the init logged why */
        res = tt_nccl_context(res, "%s: the communicator's initialization failed: %s", call, comm->error);
    if (res)
        tt_nccl_leave(comm);
    return res;
}

void tt_nccl_leave(ncclComm_t comm)
{
    pthread_mutex_lock(&comm->lock);
    comm->users--;
    pthread_cond_broadcast(&comm->changed);
    pthread_mutex_unlock(&comm->lock);
}

int tt_nccl_retire(ncclComm_t comm, int aborting)
{
    pthread_mutex_lock(&registry_lock);
    int i = find(comm);
    if (i >= 0)
        registry[i] = NULL;
    pthread_mutex_unlock(&registry_lock);
    if (i < 0)
        return 0;
    pthread_mutex_lock(&comm->lock);
    comm->closing = 1;
    pthread_mutex_unlock(&comm->lock);
    /* An abort first interrupts what the calls inside wait for; they then
     * leave at once. A destroy waits for them to finish. */
    tutti_comm_t tc = tt_nccl_tc(comm);
    if (aborting && tc) {
        __atomic_store_n(&comm->tc, NULL, __ATOMIC_RELEASE);
        tutti_comm_abort(tc);
    }
    pthread_mutex_lock(&comm->lock);
    while (comm->users > 0)
        pthread_cond_wait(&comm->changed, &comm->lock);
    pthread_mutex_unlock(&comm->lock);
    return 1;
}

int tt_nccl_copy_error(ncclComm_t comm, char *out, size_t len)
{
    pthread_mutex_lock(&registry_lock);
    int ok = find(comm) >= 0;
    if (ok) {
        pthread_mutex_lock(&comm->lock);
        snprintf(out, len, "%s", comm->error);
        pthread_mutex_unlock(&comm->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    return ok && out[0];
}

int tt_nccl_snapshot(ncclComm_t comm, ncclResult_t *state, int *nranks, int *rank, int *device)
{
    pthread_mutex_lock(&registry_lock);
    int ok = find(comm) >= 0;
    if (ok) {
        pthread_mutex_lock(&comm->lock);
        *state = comm->state;
        *nranks = comm->nranks;
        *rank = comm->rank;
        *device = comm->device;
        /* While registered, tc is not freed: abort retires first, finalize
         * clears tc under the lock before destroying it. */
        tutti_comm_t tc = comm->tc;
        tutti_comm_t inner = tt_nccl_inner(tc);
        tutti_status_t failed = inner ? __atomic_load_n(&inner->failed, __ATOMIC_RELAXED) : TUTTI_SUCCESS;
        if (*state == ncclSuccess && failed) {
            *state = tt_nccl_result(failed);
            if (!comm->error[0])
                snprintf(comm->error, sizeof comm->error, "%s", tutti_comm_last_error(tc));
        }
        pthread_mutex_unlock(&comm->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

int tt_nccl_live_in_job(uint64_t key_tag)
{
    int n = 0;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < TT_NCCL_MAX_COMMS; i++) {
        ncclComm_t c = registry[i];
        if (!c)
            continue;
        pthread_mutex_lock(&c->lock);
        tutti_comm_t inner = tt_nccl_inner(c->tc);
        n += inner && inner->env.key_tag == key_tag;
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    return n;
}
