/* SPDX-License-Identifier: MIT */
/*
 * One transport's connections for tutti-bw: a communicator made with
 * TUTTI_TRANSPORTS naming that transport first (then tcp, for pairs it
 * cannot reach), whose peer connections tutti-bw drives through the
 * transport's ops table; and the link class of every pair.
 */
#include <stdlib.h>
#include <string.h>

#include "bw.h"
#include "comm/comm.h"
#include "comm/connect.h"
#include "comm/handle.h"

#define TP_SETUP_TIMEOUT_MS 30000 /* a rank that cannot start this transport fails the others this soon */

static const tt_transport_ops_t *find_ops(const char *name)
{
    for (int i = 0; tt_transports[i]; i++)
        if (strcmp(tt_transports[i]->name, name) == 0)
            return tt_transports[i];
    return NULL;
}

/* X, NODE (same NUMA node), SYS (other NUMA node of the host) or NET (other host). */
static void pair_class(const tt_endpoint_t *ea, const tt_endpoint_t *eb, int self, char *out)
{
    if (self)
        strcpy(out, "X");
    else if (ea->host_id != eb->host_id)
        strcpy(out, "NET");
    else if (ea->place >> 32 != eb->place >> 32)
        strcpy(out, "SYS");
    else
        strcpy(out, "NODE");
}

/* A communicator over the job's ranks made while var is value (NULL: as the
 * job's environment is), on every rank or none. */
tutti_status_t tt_bw_comm_with(tt_bw_job_t *job, const char *var, const char *value, int64_t timeout_ms,
                               tutti_comm_t *out, char *why, size_t len)
{
    tutti_unique_id_t id;
    tutti_status_t st = job->rank == 0 ? tutti_get_unique_id(&id) : TUTTI_SUCCESS;
    if (!st)
        st = tutti_broadcast(&id, &id, sizeof id, TUTTI_UINT8, 0, job->ctl, NULL);
    if (st) {
        snprintf(why, len, "sharing the job id failed: %s", tutti_comm_last_error(job->ctl));
        return st;
    }
    char *saved = var && getenv(var) ? strdup(getenv(var)) : NULL;
    if (var)
        setenv(var, value, 1);
    tutti_comm_params_t params = {.field_mask = TUTTI_PARAM_TIMEOUT_MS, .timeout_ms = timeout_ms};
    tutti_status_t mine = tutti_comm_init(out, job->nranks, job->rank, &id, &params);
    if (saved)
        setenv(var, saved, 1);
    else if (var)
        unsetenv(var);
    free(saved);
    if (mine) {
        fprintf(stderr, "tutti-bw: rank %d: %s%s%s: %s\n", job->rank, var ? var : "", var ? "=" : "",
                var ? value : "", tutti_comm_last_error(NULL));
        *out = NULL;
    }
    int ok = mine == TUTTI_SUCCESS, all = 0;
    st = tutti_allreduce(&ok, &all, 1, TUTTI_INT32, TUTTI_MIN, job->ctl, NULL);
    if (!st && !all) {
        snprintf(why, len, "could not connect on every rank (see the ranks' messages)");
        if (*out)
            tutti_comm_abort(*out);
        *out = NULL;
        return TUTTI_ERR_UNSUPPORTED;
    }
    return st;
}

tutti_status_t tt_bw_tp_open(tt_bw_job_t *job, const char *name, tt_bw_tp_t *tp, char *why, size_t len)
{
    memset(tp, 0, sizeof *tp);
    tp->name = name;
    const tt_transport_ops_t *ops = find_ops(name);
    if (!ops) {
        snprintf(why, len, "not built into this tutti");
        return TUTTI_ERR_UNSUPPORTED;
    }
    if (!(ops->caps & TT_CAP_HOST_MEM)) {
        snprintf(why, len, "moves device memory only (see the gpu rows)");
        return TUTTI_ERR_UNSUPPORTED;
    }
    if (job->nranks < 2) {
        snprintf(why, len, "one rank, no pair (start several: tutti-run -n 2 tutti-bw)");
        return TUTTI_ERR_UNSUPPORTED;
    }
    /* Every rank asks, so that all skip alike when one cannot offer it. */
    char mine[160] = "";
    int offered = !ops->probe || ops->probe(mine, sizeof mine), all = 0;
    TT_TRY(tutti_allreduce(&offered, &all, 1, TUTTI_INT32, TUTTI_MIN, job->ctl, NULL));
    if (!all) {
        snprintf(why, len, "not offered %s%s", offered ? "on every rank" : "here: ", offered ? "" : mine);
        return TUTTI_ERR_UNSUPPORTED;
    }
    char list[64];
    snprintf(list, sizeof list, strcmp(name, "tcp") == 0 ? "%s" : "%s,tcp", name);
    int64_t timeout = job->in->timeout_ms < TP_SETUP_TIMEOUT_MS ? job->in->timeout_ms : TP_SETUP_TIMEOUT_MS;
    TT_TRY(tt_bw_comm_with(job, "TUTTI_TRANSPORTS", list, timeout, &tp->comm, why, len));
    tp->in = tt_comm_lookup(tp->comm, NULL);
    int n = tp->n = job->nranks;
    TT_TRY(tt_bw_connect_all(tp->in));
    tp->uses = calloc((size_t)n * n, sizeof *tp->uses);
    tp->cls = calloc((size_t)n * n, sizeof *tp->cls);
    const tt_bw_opts_t *o = job->o;
    tp->buf_bytes = (size_t)(o->size > o->maxb ? o->size : o->maxb);
    tp->buf_bytes = tp->buf_bytes > o->lat_size ? tp->buf_bytes : (size_t)o->lat_size;
    tp->sendbuf = calloc(1, tp->buf_bytes + 64);
    tp->recvbuf = calloc(1, tp->buf_bytes + 64);
    int *row = calloc((size_t)n, sizeof *row);
    if (!tp->uses || !tp->cls || !tp->sendbuf || !tp->recvbuf || !row) {
        free(row);
        snprintf(why, len, "out of memory");
        return TUTTI_ERR_NO_MEMORY;
    }
    for (int q = 0; q < n; q++)
        row[q] = q != job->rank && tp->in->peers[q].ops == ops;
    tutti_status_t st = tt_bootstrap_allgather(&job->in->bs, row, tp->uses, (size_t)n * sizeof *row);
    free(row);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            pair_class(&tp->in->endpoints[a], &tp->in->endpoints[b], a == b, tp->cls[a * n + b]);
    if (st) {
        snprintf(why, len, "exchanging which pairs it serves failed");
        return st;
    }
    int any = 0;
    for (int i = 0; i < n * n; i++)
        any |= tp->uses[i];
    if (!any) {
        snprintf(why, len, "joins no pair of these ranks (shm: ranks of one host)");
        return TUTTI_ERR_UNSUPPORTED;
    }
    return TUTTI_SUCCESS;
}

void tt_bw_tp_close(tt_bw_tp_t *tp)
{
    if (tp->comm)
        tutti_comm_destroy(tp->comm);
    free(tp->uses);
    free(tp->cls);
    free(tp->sendbuf);
    free(tp->recvbuf);
    memset(tp, 0, sizeof *tp);
}

tutti_status_t tt_bw_connect_all(tt_comm_t *in)
{
    /* tutti-bw measures every pair: each rank connects to every other at
     * once, which a communicator otherwise does at first use. */
    int *all = malloc(sizeof(int) * (size_t)in->nranks);
    if (!all)
        return TUTTI_ERR_NO_MEMORY;
    for (int q = 0; q < in->nranks; q++)
        all[q] = q;
    tutti_status_t st = tt_comm_connect(in, all, in->nranks, UINT64_MAX);
    free(all);
    return st;
}
