/* SPDX-License-Identifier: MIT */
/*
 * Joining under mpirun or srun through PMIx: the launcher tells each process
 * its rank and the job size; rank 0 publishes a unique id with PMIx_Put and
 * every rank reads it after a fence. PMIx is needed for nothing else, so it
 * is finalized right after (launchers treat a process that initialized PMIx
 * and never finalized it as failed). Built only with --with-pmix, and
 * empty in libnccl.so.2, whose copy of the core needs no PMIx.
 */
#ifdef TT_HAVE_PMIX
#include <pmix.h>
#include <string.h>

#include "comm/comm.h"
#include "core/log.h"

#define TT_PMIX_ID_KEY "tutti.unique_id"

tutti_status_t tt_comm_init_pmix(tutti_comm_t *comm, const tutti_comm_params_t *params);

/* Rank 0 makes and publishes the id; everyone reads it after a fence. */
static tutti_status_t exchange_id(const pmix_proc_t *me, tutti_unique_id_t *id)
{
    pmix_proc_t all, root;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&all, me->nspace, PMIX_RANK_WILDCARD);
    if (me->rank == 0) {
        tutti_status_t st = tutti_get_unique_id(id);
        if (st)
            return st;
        pmix_value_t v;
        PMIX_VALUE_CONSTRUCT(&v);
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = (char *)id->internal;
        v.data.bo.size = sizeof id->internal;
        if (PMIx_Put(PMIX_GLOBAL, TT_PMIX_ID_KEY, &v) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS)
            return tt_comm_error(NULL, TUTTI_ERR_SYSTEM, "PMIx: publishing the unique id failed");
    }
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    if (PMIx_Fence(&all, 1, &collect, 1) != PMIX_SUCCESS)
        return tt_comm_error(NULL, TUTTI_ERR_SYSTEM, "PMIx: fence failed");
    if (me->rank == 0)
        return TUTTI_SUCCESS;
    PMIX_LOAD_PROCID(&root, me->nspace, 0);
    if (PMIx_Get(&root, TT_PMIX_ID_KEY, NULL, 0, &val) != PMIX_SUCCESS || !val ||
        val->type != PMIX_BYTE_OBJECT || val->data.bo.size != sizeof id->internal)
        return tt_comm_error(NULL, TUTTI_ERR_SYSTEM, "PMIx: reading rank 0's unique id failed");
    memcpy(id->internal, val->data.bo.bytes, sizeof id->internal);
    PMIX_VALUE_RELEASE(val);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_comm_init_pmix(tutti_comm_t *comm, const tutti_comm_params_t *params)
{
    pmix_proc_t me, all;
    pmix_value_t *val = NULL;
    tutti_unique_id_t id;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS)
        return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "PMIx_Init failed: not started by a PMIx launcher?");
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    tutti_status_t st = TUTTI_SUCCESS;
    int nranks = 0;
    if (PMIx_Get(&all, PMIX_JOB_SIZE, NULL, 0, &val) != PMIX_SUCCESS || !val)
        st = tt_comm_error(NULL, TUTTI_ERR_CONFIG, "PMIx: the launcher did not give the job size");
    else
        nranks = (int)val->data.uint32;
    if (val)
        PMIX_VALUE_RELEASE(val);
    if (!st)
        st = exchange_id(&me, &id);
    int rank = (int)me.rank;
    PMIx_Finalize(NULL, 0);
    if (st)
        return st;
    TT_DEBUG(TT_SUB_INIT, "PMIx: rank %d of %d", rank, nranks);
    return tutti_comm_init(comm, nranks, rank, &id, params);
}
#endif
