/* SPDX-License-Identifier: MIT */
/*
 * Joining under mpirun or srun through PMIx: the launcher tells each process
 * its rank and the job size; rank 0 publishes a unique id with PMIx_Put and
 * every rank reads it after a fence. PMIx is needed for nothing else, so it
 * is finalized right after (launchers treat a process that initialized PMIx
 * and never finalized it as failed). Built where configure found PMIx's
 * headers; the library itself is opened at run time (libpmix.so.2), so
 * neither libtutti.so nor libnccl.so.2 needs it to load.
 */
#ifdef TT_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "comm/join.h"
#include "core/dl.h"
#include "core/log.h"

#define TT_PMIX_ID_KEY "tutti.unique_id"
/* PMIx 3, 4 and 5 all keep this ABI name. */
#define PMIX_SONAME "libpmix.so.2"

/* The entry points used, typed as pmix.h declares them. */
static struct {
    __typeof__(PMIx_Init) *init;
    __typeof__(PMIx_Finalize) *finalize;
    __typeof__(PMIx_Get) *get;
    __typeof__(PMIx_Put) *put;
    __typeof__(PMIx_Commit) *commit;
    __typeof__(PMIx_Fence) *fence;
    __typeof__(PMIx_Value_destruct) *value_destruct;
    __typeof__(PMIx_Info_load) *info_load;
} px;
static pthread_once_t px_once = PTHREAD_ONCE_INIT;
static int px_loaded;
static char px_why[160];

/* RTLD_GLOBAL: PMIx's own plug-ins resolve its symbols from the global scope. */
static void px_load(void)
{
    const tt_dl_sym_t syms[] = {
        {(void **)&px.init, "PMIx_Init", 0},
        {(void **)&px.finalize, "PMIx_Finalize", 0},
        {(void **)&px.get, "PMIx_Get", 0},
        {(void **)&px.put, "PMIx_Put", 0},
        {(void **)&px.commit, "PMIx_Commit", 0},
        {(void **)&px.fence, "PMIx_Fence", 0},
        {(void **)&px.value_destruct, "PMIx_Value_destruct", 0},
        {(void **)&px.info_load, "PMIx_Info_load", 0},
    };
    px_loaded = tt_dl_open(PMIX_SONAME, RTLD_NOW | RTLD_GLOBAL, syms, sizeof syms / sizeof syms[0],
                           "libpmix2", px_why, sizeof px_why) != NULL;
}

int tt_comm_pmix_usable(char *why, size_t len)
{
    pthread_once(&px_once, px_load);
    snprintf(why, len, "%s", px_loaded ? PMIX_SONAME " opens" : px_why);
    return px_loaded;
}

static void value_release(pmix_value_t *val)
{
    px.value_destruct(val);
    free(val);
}

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
        if (px.put(PMIX_GLOBAL, TT_PMIX_ID_KEY, &v) != PMIX_SUCCESS || px.commit() != PMIX_SUCCESS)
            return tt_comm_error(NULL, TUTTI_ERR_SYSTEM, "PMIx: publishing the unique id failed");
    }
    pmix_info_t collect;
    bool yes = true;
    memset(&collect, 0, sizeof collect);
    px.info_load(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    if (px.fence(&all, 1, &collect, 1) != PMIX_SUCCESS)
        return tt_comm_error(NULL, TUTTI_ERR_SYSTEM, "PMIx: fence failed");
    if (me->rank == 0)
        return TUTTI_SUCCESS;
    PMIX_LOAD_PROCID(&root, me->nspace, 0);
    tutti_status_t st = TUTTI_SUCCESS;
    if (px.get(&root, TT_PMIX_ID_KEY, NULL, 0, &val) != PMIX_SUCCESS || !val ||
        val->type != PMIX_BYTE_OBJECT || val->data.bo.size != sizeof id->internal)
        st = tt_comm_error(NULL, TUTTI_ERR_SYSTEM, "PMIx: reading rank 0's unique id failed");
    else
        memcpy(id->internal, val->data.bo.bytes, sizeof id->internal);
    if (val)
        value_release(val);
    return st;
}

tutti_status_t tt_comm_init_pmix(tutti_comm_t *comm, const tutti_comm_params_t *params)
{
    pmix_proc_t me, all;
    pmix_value_t *val = NULL;
    tutti_unique_id_t id;
    pthread_once(&px_once, px_load);
    if (!px_loaded)
        return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "PMIx: %s", px_why);
    if (px.init(&me, NULL, 0) != PMIX_SUCCESS)
        return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "PMIx_Init failed: not started by a PMIx launcher?");
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    tutti_status_t st = TUTTI_SUCCESS;
    int nranks = 0;
    if (px.get(&all, PMIX_JOB_SIZE, NULL, 0, &val) != PMIX_SUCCESS || !val)
        st = tt_comm_error(NULL, TUTTI_ERR_CONFIG, "PMIx: the launcher did not give the job size");
    else
        nranks = (int)val->data.uint32;
    if (val)
        value_release(val);
    if (!st)
        st = exchange_id(&me, &id);
    int rank = (int)me.rank;
    px.finalize(NULL, 0);
    if (st)
        return st;
    TT_DEBUG(TT_SUB_INIT, "PMIx: rank %d of %d", rank, nranks);
    return tutti_comm_init(comm, nranks, rank, &id, params);
}
#endif
