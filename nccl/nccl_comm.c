/* SPDX-License-Identifier: MIT */
/*
 * The handles behind ncclComm_t: a registry slot and a generation, never
 * the communicator's address, so a destroyed or garbage handle is refused
 * even when a new communicator is allocated where the old one was; and the
 * count of calls inside each, so that ncclCommAbort from another thread
 * frees a communicator only once the calls that were inside it have returned.
 * A communicator belongs to the process that made it: in a forked child
 * every call is refused, and destroy or abort release only the child's copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "nccl/nccl_int.h"

#define TT_NCCL_MAGIC 0x7474636f6d6d6e63ull /* "ttcommnc" */
#define TT_NCCL_MAX_COMMS 4096              /* a power of two: the slot is a bit field of the handle */
#define SLOT_BITS 13                        /* the slot and a tag bit below the generation */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    ncclComm_t comm;
    uintptr_t gen;
} registry[TT_NCCL_MAX_COMMS];
static uintptr_t next_gen = 1;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* The registry stays usable in a child forked while another thread held it. */
static void before_fork(void)
{
    pthread_mutex_lock(&registry_lock);
}

static void after_fork(void)
{
    pthread_mutex_unlock(&registry_lock);
}

/* After the core's: fork's handlers run last-installed first, so this lock
 * is taken before the core's registry lock, as every call here takes them. */
static void register_atfork(void)
{
    tt_comm_fork_handlers();
    pthread_atfork(before_fork, after_fork, after_fork);
}

/* An odd value: no real pointer to a communicator looks like one. */
static ncclComm_t encode(int slot, uintptr_t gen)
{
    return (ncclComm_t)(gen << SLOT_BITS | (uintptr_t)slot << 1 | 1u);
}

/* The slot of the live communicator behind handle, else -1; under
 * registry_lock. */
static int find(ncclComm_t handle)
{
    uintptr_t v = (uintptr_t)handle;
    int slot = (int)(v >> 1 & (TT_NCCL_MAX_COMMS - 1));
    return (v & 1u) && registry[slot].comm && registry[slot].gen == v >> SLOT_BITS ? slot : -1;
}

/* The slot of comm itself (the library's own pointer), else -1. */
static int find_comm(ncclComm_t comm)
{
    for (int i = 0; comm && i < TT_NCCL_MAX_COMMS; i++)
        if (registry[i].comm == comm)
            return i;
    return -1;
}

ncclComm_t tt_nccl_new(int nranks, int rank, int blocking)
{
    pthread_once(&atfork_once, register_atfork);
    ncclComm_t comm = calloc(1, sizeof *comm);
    if (!comm)
        return NULL;
    comm->magic = TT_NCCL_MAGIC;
    comm->nranks = nranks;
    comm->rank = rank;
    comm->device = -1;
    comm->blocking = blocking;
    comm->owner_pid = (int)getpid();
    comm->state = ncclInProgress;
    pthread_mutex_init(&comm->lock, NULL);
    pthread_cond_init(&comm->changed, NULL);
    return comm;
}

ncclComm_t tt_nccl_register(ncclComm_t comm)
{
    ncclComm_t handle = NULL;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < TT_NCCL_MAX_COMMS && !handle; i++)
        if (!registry[i].comm) {
            registry[i].comm = comm;
            registry[i].gen = next_gen++;
            handle = encode(i, registry[i].gen);
        }
    pthread_mutex_unlock(&registry_lock);
    return handle;
}

void tt_nccl_free(ncclComm_t comm)
{
    comm->magic = 0;
    free(comm->init.exclude);
    free(comm->init.ids);
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

/* Counts a call into the communicator at slot (-1: none), unless it is closing. */
static ncclComm_t enter_slot(int slot)
{
    ncclComm_t comm = slot >= 0 ? registry[slot].comm : NULL;
    int ok = comm != NULL;
    if (ok) {
        pthread_mutex_lock(&comm->lock);
        ok = !comm->closing;
        comm->users += ok;
        pthread_mutex_unlock(&comm->lock);
    }
    return ok ? comm : NULL;
}

/* The rest of enter, once the call is counted in. */
static ncclResult_t entered(ncclComm_t comm, const char *call)
{
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

int tt_nccl_forked(ncclComm_t comm)
{
    return comm->owner_pid != (int)getpid();
}

ncclResult_t tt_nccl_enter(ncclComm_t *comm, const char *call)
{
    tt_nccl_once();
    pthread_mutex_lock(&registry_lock);
    int slot = find(*comm), owner = slot >= 0 ? registry[slot].comm->owner_pid : 0;
    int forked = slot >= 0 && owner != (int)getpid();
    ncclComm_t c = forked ? NULL : enter_slot(slot);
    pthread_mutex_unlock(&registry_lock);
    if (forked) /* its threads, locks and init are the parent's: nothing here waits for them */
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "%s: comm belongs to process %d; this process (%d) is a fork of it and cannot "
                             "use it (make a new communicator here; see tutti_comm(3))",
                             call, owner, (int)getpid());
    if (!c)
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "%s: comm: not a live communicator (NULL, destroyed or aborted)", call);
    *comm = c;
    return entered(c, call);
}

ncclResult_t tt_nccl_reenter(ncclComm_t comm, const char *call)
{
    pthread_mutex_lock(&registry_lock);
    ncclComm_t c = enter_slot(find_comm(comm));
    pthread_mutex_unlock(&registry_lock);
    if (!c)
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "%s: the communicator was destroyed or aborted meanwhile", call);
    return entered(c, call);
}

void tt_nccl_leave(ncclComm_t comm)
{
    pthread_mutex_lock(&comm->lock);
    comm->users--;
    pthread_cond_broadcast(&comm->changed);
    pthread_mutex_unlock(&comm->lock);
}

/* Takes the communicator at slot (-1: none) out of the registry. */
static ncclComm_t take_slot(int slot)
{
    ncclComm_t comm = slot >= 0 ? registry[slot].comm : NULL;
    if (comm)
        registry[slot].comm = NULL;
    return comm;
}

/* No call enters comm any more: closes it to the calls inside. */
static void retired(ncclComm_t comm, int aborting)
{
    pthread_mutex_lock(&comm->lock);
    comm->closing = 1;
    pthread_mutex_unlock(&comm->lock);
    /* An abort first interrupts what the calls inside wait for; they then
     * leave at once. A destroy waits for them to finish. */
    tutti_comm_t tc = tt_nccl_tc(comm);
    if (aborting && tc) {
        atomic_store_explicit(&comm->tc, NULL, memory_order_release);
        tutti_comm_abort(tc);
    }
    pthread_mutex_lock(&comm->lock);
    while (comm->users > 0)
        pthread_cond_wait(&comm->changed, &comm->lock);
    pthread_mutex_unlock(&comm->lock);
}

ncclComm_t tt_nccl_retire_handle(ncclComm_t handle, int aborting)
{
    pthread_mutex_lock(&registry_lock);
    ncclComm_t comm = take_slot(find(handle));
    pthread_mutex_unlock(&registry_lock);
    if (comm && !tt_nccl_forked(comm))
        retired(comm, aborting);
    return comm;
}

int tt_nccl_retire(ncclComm_t comm, int aborting)
{
    pthread_mutex_lock(&registry_lock);
    int live = take_slot(find_comm(comm)) != NULL;
    pthread_mutex_unlock(&registry_lock);
    if (live)
        retired(comm, aborting);
    return live;
}

int tt_nccl_copy_error(ncclComm_t handle, char *out, size_t len)
{
    pthread_mutex_lock(&registry_lock);
    int slot = find(handle);
    ncclComm_t comm = slot >= 0 ? registry[slot].comm : NULL;
    int ok = comm != NULL;
    if (ok) {
        pthread_mutex_lock(&comm->lock);
        snprintf(out, len, "%s", comm->error);
        pthread_mutex_unlock(&comm->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    return ok && out[0];
}

int tt_nccl_snapshot(ncclComm_t handle, ncclResult_t *state, int *nranks, int *rank, int *device)
{
    pthread_mutex_lock(&registry_lock);
    int slot = find(handle);
    ncclComm_t comm = slot >= 0 ? registry[slot].comm : NULL;
    int ok = comm != NULL;
    if (ok) {
        pthread_mutex_lock(&comm->lock);
        *state = comm->state;
        *nranks = comm->nranks;
        *rank = comm->rank;
        *device = comm->device;
        /* While registered, tc is not freed: abort retires first, finalize
         * clears tc under the lock before destroying it. */
        tutti_comm_t tc = comm->tc;
        tt_comm_t *inner = tt_nccl_inner(tc);
        tutti_status_t failed =
            inner ? atomic_load_explicit(&inner->failed, memory_order_relaxed) : TUTTI_SUCCESS;
        /* A revoked communicator is quiescent, ready for shrink or destroy, as NCCL reports it. */
        if (inner && atomic_load_explicit(&inner->revoked_by, memory_order_relaxed) >= 0)
            failed = TUTTI_SUCCESS;
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
        ncclComm_t c = registry[i].comm;
        if (!c)
            continue;
        pthread_mutex_lock(&c->lock);
        tt_comm_t *inner = tt_nccl_inner(c->tc);
        n += inner && inner->env.key_tag == key_tag;
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    return n;
}
