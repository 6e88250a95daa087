/* SPDX-License-Identifier: MIT */
/*
 * Making communicators: unique ids, ncclCommInitRank and its config form
 * (blocking = 0 runs the init on a worker thread and returns
 * ncclInProgress), the scalable form, ncclCommInitAll (several ranks of one
 * process, each joining on its own thread), and the queries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "device/memkind.h"
#include "nccl/nccl_int.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

_Static_assert(sizeof(ncclUniqueId) == sizeof(tutti_unique_id_t), "ncclUniqueId holds a tutti_unique_id_t");

/* The CUDA device current on this thread, as NCCL binds a communicator
 * to it; -1 without a usable GPU. */
static int current_device(void)
{
    int dev = -1;
    char why[160];
    if (tt_device_usable(why, sizeof why) != TUTTI_SUCCESS)
        return -1;
#ifdef TT_HAVE_CUDA
    if (cudaGetDevice(&dev) != cudaSuccess)
        dev = -1;
#endif
    return dev;
}

TT_NCCL_EXPORT ncclResult_t pncclGetVersion(int *version)
{
    tt_nccl_once();
    if (!version)
        return tt_nccl_error(NULL, ncclInvalidArgument, "ncclGetVersion: version: NULL pointer");
    *version = TT_NCCL_VERSION_CODE;
    return ncclSuccess;
}
TT_NCCL_ALIAS(ncclGetVersion)

TT_NCCL_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
    tt_nccl_once();
    if (!uniqueId)
        return tt_nccl_error(NULL, ncclInvalidArgument, "ncclGetUniqueId: uniqueId: NULL pointer");
    tutti_unique_id_t id;
    tutti_status_t st = tutti_get_unique_id(&id);
    if (st)
        return tt_nccl_failed(NULL, st);
    memcpy(uniqueId->internal, id.internal, sizeof id.internal);
    return ncclSuccess;
}
TT_NCCL_ALIAS(ncclGetUniqueId)

ncclResult_t tt_nccl_config(const ncclConfig_t *config, int inherit, int *blocking, const char *call)
{
    *blocking = inherit;
    if (!config)
        return ncclSuccess;
    if (config->magic != NCCL_CONFIG_MAGIC || config->size < offsetof(ncclConfig_t, cgaClusterSize))
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "%s: config: not set up with NCCL_CONFIG_INITIALIZER (magic %#x, size %zu)",
                             call, config->magic, config->size);
    if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
        *blocking = config->blocking != 0;
    } else {
        const char *env = getenv("NCCL_COMM_BLOCKING"); /* NCCL's default for an unset field */
        if (env && *env)
            *blocking = atoi(env) != 0;
    }
    return ncclSuccess;
}

int tt_nccl_config_share(const ncclConfig_t *config, size_t off, const char *env)
{
    int v = NCCL_CONFIG_UNDEF_INT;
    if (config && config->size >= off + sizeof v)
        memcpy(&v, (const char *)config + off, sizeof v);
    if (v == NCCL_CONFIG_UNDEF_INT) { /* NCCL's default for an unset field */
        const char *e = getenv(env);
        v = e && *e ? atoi(e) : 0;
    }
    return v == 1;
}

/* The worker: joins (or splits), then publishes the outcome. */
static void *init_main(void *arg)
{
    ncclComm_t comm = arg;
    tutti_comm_t tc = NULL;
    tutti_status_t st;
#ifdef TT_HAVE_CUDA
    if (comm->device >= 0)
        cudaSetDevice(comm->device);
#endif
    if (comm->init.parent && comm->init.how == TT_NCCL_SHRINK)
        st = tutti_comm_shrink(comm->init.parent, comm->init.exclude, comm->init.nexclude, comm->init.flags,
                               &tc);
    else if (comm->init.parent && comm->init.how == TT_NCCL_GROW)
        st = tutti_comm_grow(comm->init.parent, comm->init.nranks, comm->init.has_id ? &comm->init.id : NULL,
                             &tc);
    else if (comm->init.parent)
        st = tutti_comm_split_flags(comm->init.parent, comm->init.color, comm->init.key, comm->init.flags,
                                    &tc);
    else if (comm->init.ids)
        st = tutti_comm_init_roots(&tc, comm->init.nranks, comm->init.rank, comm->init.nids, comm->init.ids,
                                   NULL);
    else
        st = tutti_comm_init(&tc, comm->init.nranks, comm->init.rank, &comm->init.id, NULL);
    if (comm->init.split_of)
        tt_nccl_leave(comm->init.split_of);
    pthread_mutex_lock(&comm->lock);
    if (st) {
        snprintf(comm->error, sizeof comm->error, "%s", tutti_comm_last_error(NULL));
        comm->state = tt_nccl_result(st);
    } else {
        tutti_comm_size(tc, &comm->nranks);
        tutti_comm_rank(tc, &comm->rank);
        atomic_store_explicit(&comm->tc, tc, memory_order_release);
        comm->state = ncclSuccess;
    }
    pthread_cond_broadcast(&comm->changed);
    pthread_mutex_unlock(&comm->lock);
    return NULL;
}

ncclResult_t tt_nccl_start_init(ncclComm_t comm)
{
    pthread_mutex_lock(&comm->lock);
    comm->state = ncclInProgress;
    comm->has_worker = pthread_create(&comm->worker, NULL, init_main, comm) == 0;
    if (!comm->has_worker)
        comm->state = ncclSystemError;
    pthread_mutex_unlock(&comm->lock);
    if (!comm->has_worker) {
        if (comm->init.split_of)
            tt_nccl_leave(comm->init.split_of);
        snprintf(comm->error, sizeof comm->error, "could not start a thread for the communicator's init");
        return tt_nccl_error(comm, ncclSystemError, "%s", comm->error);
    }
    return ncclSuccess;
}

/* The outcome of comm's init once it finished; a failed blocking init
 * frees comm. */
static ncclResult_t wait_init(ncclComm_t comm, ncclComm_t *out)
{
    tt_nccl_join(comm);
    if (comm->state == ncclSuccess)
        return ncclSuccess;
    ncclResult_t res = tt_nccl_context(comm->state, "%s", comm->error);
    tt_nccl_retire(comm, 1);
    tt_nccl_free(comm);
    *out = NULL;
    return res;
}

ncclResult_t tt_nccl_launch(ncclComm_t comm, ncclComm_t *out)
{
    *out = tt_nccl_register(comm);
    if (!*out) {
        if (comm->init.split_of)
            tt_nccl_leave(comm->init.split_of);
        tt_nccl_free(comm);
        return tt_nccl_error(NULL, ncclSystemError, "too many live communicators in this process");
    }
    if (tt_nccl_group_defer_init(comm))
        return ncclSuccess;
    ncclResult_t res = tt_nccl_start_init(comm);
    if (res || !comm->blocking)
        return res ? res : ncclInProgress;
    return wait_init(comm, out);
}

ncclResult_t tt_nccl_split(ncclComm_t parent, int color, int key, int blocking, int share, ncclComm_t *out)
{
    *out = NULL;
    tutti_comm_t ptc = tt_nccl_tc(parent);
    if (color < 0) { /* NCCL_SPLIT_NOCOLOR: this rank takes part, and joins nothing */
        tutti_comm_t none = NULL;
        tutti_status_t st = tutti_comm_split(ptc, -1, key, &none);
        return st ? tt_nccl_failed(parent, st) : ncclSuccess;
    }
    ncclComm_t comm = tt_nccl_child(parent, blocking);
    if (!comm)
        return tt_nccl_error(parent, ncclSystemError, "ncclCommSplit: no memory for a communicator");
    comm->init.color = color;
    comm->init.key = key;
    comm->init.flags = share ? TUTTI_SPLIT_SHARE : 0;
    return tt_nccl_launch(comm, out);
}

ncclComm_t tt_nccl_child(ncclComm_t parent, int blocking)
{
    ncclComm_t comm = tt_nccl_new(0, -1, blocking);
    if (!comm)
        return NULL;
    comm->device = parent->device;
    comm->init.parent = tt_nccl_tc(parent);
    /* The parent stays in use until the child is made, even in the
     * background: an abort of the parent then interrupts it. */
    pthread_mutex_lock(&parent->lock);
    parent->users++;
    pthread_mutex_unlock(&parent->lock);
    comm->init.split_of = parent;
    return comm;
}

/* Joins through nids roots (ids[0] alone: the common form). */
static ncclResult_t init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *ids, int nids, int rank,
                              const ncclConfig_t *config, const char *call)
{
    tt_nccl_once();
    int blocking;
    if (!out)
        return tt_nccl_error(NULL, ncclInvalidArgument, "%s: comm: NULL pointer", call);
    *out = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return tt_nccl_error(NULL, ncclInvalidArgument, "%s: rank %d of %d ranks is out of range", call, rank,
                             nranks);
    ncclResult_t res = tt_nccl_config(config, 1, &blocking, call);
    if (res)
        return res;
    ncclComm_t comm = tt_nccl_new(nranks, rank, blocking);
    if (!comm)
        return tt_nccl_error(NULL, ncclSystemError, "%s: no memory for a communicator", call);
    comm->device = current_device();
    comm->init.nranks = nranks;
    comm->init.rank = rank;
    memcpy(comm->init.id.internal, ids[0].internal, sizeof comm->init.id.internal);
    if (nids > 1) {
        _Static_assert(sizeof(ncclUniqueId) == sizeof(tutti_unique_id_t), "the ids are alike");
        if (!(comm->init.ids = malloc(sizeof(tutti_unique_id_t) * (size_t)nids))) {
            tt_nccl_free(comm);
            return tt_nccl_error(NULL, ncclSystemError, "%s: no memory for %d ids", call, nids);
        }
        memcpy(comm->init.ids, ids, sizeof(tutti_unique_id_t) * (size_t)nids);
        comm->init.nids = nids;
    }
    return tt_nccl_launch(comm, out);
}

TT_NCCL_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                                    int rank, ncclConfig_t *config)
{
    return init_rank(comm, nranks, &commId, 1, rank, config, "ncclCommInitRankConfig");
}
TT_NCCL_ALIAS(ncclCommInitRankConfig)

TT_NCCL_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank(comm, nranks, &commId, 1, rank, NULL, "ncclCommInitRank");
}
TT_NCCL_ALIAS(ncclCommInitRank)

/* Several ids spread the join over several roots (tutti_comm_init_roots),
 * with NCCL's blocks of ranks: commIds[i] made by a rank of block i. */
TT_NCCL_EXPORT ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                                      ncclUniqueId *commIds, ncclConfig_t *config)
{
    if (nId < 1 || nId > nranks || !commIds)
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "ncclCommInitRankScalable: nId %d / commIds %p: need 1..nranks ids", nId,
                             (void *)commIds);
    return init_rank(newcomm, nranks, commIds, nId, myrank, config, "ncclCommInitRankScalable");
}
TT_NCCL_ALIAS(ncclCommInitRankScalable)

/* ndev ranks in this process, each joining on its own thread; comms gets
 * their handles. */
TT_NCCL_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    tt_nccl_once();
    if (!comms || ndev < 1)
        return tt_nccl_error(NULL, ncclInvalidArgument,
                             "ncclCommInitAll: comms %p, ndev %d: need an array of ndev >= 1", (void *)comms,
                             ndev);
    tutti_unique_id_t id;
    tutti_status_t st = tutti_get_unique_id(&id);
    if (st)
        return tt_nccl_failed(NULL, st);
    ncclComm_t *made = calloc((size_t)ndev, sizeof *made);
    ncclResult_t res =
        made ? ncclSuccess
             : tt_nccl_error(NULL, ncclSystemError, "ncclCommInitAll: no memory for %d ranks", ndev);
    int dev0 = current_device();
    for (int i = 0; i < ndev && !res; i++) {
        comms[i] = NULL;
        made[i] = tt_nccl_new(ndev, i, 1);
        if (made[i] && !(comms[i] = tt_nccl_register(made[i]))) {
            tt_nccl_free(made[i]);
            made[i] = NULL;
        }
        if (!made[i]) {
            res = tt_nccl_error(NULL, ncclSystemError, "ncclCommInitAll: no memory or handle for rank %d", i);
            break;
        }
        made[i]->device = devlist ? devlist[i] : dev0 < 0 ? -1 : i;
        made[i]->init.nranks = ndev;
        made[i]->init.rank = i;
        made[i]->init.id = id;
        res = tt_nccl_start_init(made[i]); /* it says why it failed */
    }
    for (int i = 0; made && i < ndev && made[i]; i++) {
        tt_nccl_join(made[i]);
        if (!res && made[i]->state)
            res = tt_nccl_context(made[i]->state, "ncclCommInitAll: rank %d: %s", i, made[i]->error);
    }
    for (int i = 0; res && made && i < ndev && made[i]; i++) { /* all or none */
        tt_nccl_retire(made[i], 1);
        tt_nccl_free(made[i]);
    }
    for (int i = 0; res && i < ndev; i++)
        comms[i] = NULL;
    free(made);
    return res;
}
TT_NCCL_ALIAS(ncclCommInitAll)
