/* SPDX-License-Identifier: MIT */
/*
 * The transports' part of set-up: the ones TUTTI_TRANSPORTS lists start
 * listening before the records go out; once every rank's record is in,
 * those not every rank offers are left out, the rest start (shm: the
 * host's shared segment), and the device transport connects its peers
 * (host pairs connect at first use, connect.c). The cost model prices a
 * pair by tt_comm_link, from the endpoints alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/connect.h"
#include "comm/error.h"
#include "comm/setup.h"
#include "core/hash.h"
#include "core/log.h"

static tutti_status_t pick_transports(tt_comm_t *comm)
{
    char list[128] = "";
    if (tt_config_is_set(TT_CFG_TRANSPORTS))
        snprintf(list, sizeof list, "%s", tt_config_str(TT_CFG_TRANSPORTS));
    else /* every transport built, in the table's order */
        for (int i = 0; tt_transports[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "," : "",
                     tt_transports[i]->name);
    char *save = NULL;
    for (char *name = strtok_r(list, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        const tt_transport_ops_t *ops = NULL;
        for (int i = 0; tt_transports[i]; i++)
            if (strcmp(tt_transports[i]->name, name) == 0)
                ops = tt_transports[i];
        if (!ops)
            return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                    "TUTTI_TRANSPORTS names '%s', which this build lacks", name);
        if (comm->ntransports == TT_MAX_TRANSPORTS)
            return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                    "TUTTI_TRANSPORTS lists too many transports");
        comm->tp_ops[comm->ntransports++] = ops;
    }
    if (comm->ntransports == 0)
        return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG, "TUTTI_TRANSPORTS is empty");
    return TUTTI_SUCCESS;
}

tutti_status_t tt_comm_tp_listen(tt_comm_t *comm, uint32_t *offered, uint64_t *hash,
                                 unsigned char (*blobs)[TT_ADDR_MAX])
{
    TT_TRY(pick_transports(comm));
    for (int t = 0; t < comm->ntransports; t++) {
        const tt_transport_ops_t *ops = comm->tp_ops[t];
        size_t len = 0;
        *hash = tt_hash(ops->name, strlen(ops->name), *hash + 1);
        tt_log_fault_mark();
        tutti_status_t st = ops->listen(&comm->env, &comm->tp_ctx[t], blobs[t], &len);
        if (st == TUTTI_ERR_UNSUPPORTED) {
            comm->tp_ctx[t] = NULL;
            continue;
        }
        if (st)
            return tt_comm_context(NULL, st, "rank %d: %s could not start listening", comm->rank, ops->name);
        *offered |= 1u << t;
    }
    return TUTTI_SUCCESS;
}

/* Every rank's blob of the device transport, which connects every pair at
 * set-up (the only exchange of N blobs left). */
static unsigned char *all_blobs(tt_comm_t *comm, const unsigned char *mine)
{
    unsigned char *addrs = malloc((size_t)comm->nranks * TT_ADDR_MAX);
    tutti_status_t st = addrs ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    if (st)
        tt_comm_error(NULL, st, "rank %d: no memory for %d ranks' addresses", comm->rank, comm->nranks);
    tt_log_fault_mark();
    if (!st && (st = tt_bootstrap_allgather(&comm->bs, mine, addrs, TT_ADDR_MAX)) != TUTTI_SUCCESS)
        tt_comm_context(NULL, st, "rank %d: exchanging addresses through the bootstrap failed", comm->rank);
    if (st) {
        free(addrs);
        return NULL;
    }
    return addrs;
}

/* Connects transport t to peers[0..n) now and records them in table. */
static tutti_status_t connect_now(tt_comm_t *comm, int t, const unsigned char *mine, const int *peers, int n,
                                  tt_peer_t *table)
{
    unsigned char *addrs = all_blobs(comm, mine);
    void **conns = calloc((size_t)n + 1, sizeof(void *));
    tutti_status_t st = addrs && conns ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    tt_log_fault_mark();
    if (!st)
        st = comm->tp_ops[t]->connect(comm->tp_ctx[t], peers, n, addrs, conns);
    if (st)
        tt_comm_context(NULL, st, "rank %d: %s connections failed", comm->rank, comm->tp_ops[t]->name);
    for (int i = 0; !st && i < n; i++)
        table[peers[i]] = (tt_peer_t){comm->tp_ops[t], conns[i]};
    if (!st)
        TT_DEBUG(TT_SUB_INIT, "%s connects %d peers at set-up", comm->tp_ops[t]->name, n);
    free(addrs);
    free(conns);
    return st;
}

/* The first device transport every rank offers, when it reaches every
 * pair: device calls may then run on the device buffers themselves.
 * Reaching is a matter of hosts (ranks that share one), so rank 0 reaching
 * every rank both ways says every pair does. */
static tutti_status_t connect_device(tt_comm_t *comm, unsigned char (*blobs)[TT_ADDR_MAX], int *peers)
{
    int n = 0;
    for (int r = 0; r < comm->nranks; r++)
        if (r != comm->rank)
            peers[n++] = r;
    for (int t = 0; t < comm->ntransports && comm->nranks > 1; t++) {
        if (!(comm->tp_ops[t]->caps & TT_CAP_DEVICE_MEM) || !(comm->tp_all >> t & 1))
            continue;
        int all = 1;
        for (int b = 1; b < comm->nranks && all; b++)
            all = tt_comm_reaches(comm, t, 0, b) && tt_comm_reaches(comm, t, b, 0);
        if (!all)
            continue;
        comm->device_peers = calloc((size_t)comm->nranks, sizeof *comm->device_peers);
        if (!comm->device_peers)
            return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d peers", comm->rank, n);
        comm->device_tp = t;
        return connect_now(comm, t, blobs[t], peers, n, comm->device_peers);
    }
    return TUTTI_SUCCESS;
}

static tt_link_t link_of(const void *arg, int a, int b)
{
    return tt_comm_link((tt_comm_t *)arg, a, b);
}

tutti_status_t tt_comm_tp_connect(tt_comm_t *comm, unsigned char (*blobs)[TT_ADDR_MAX])
{
    for (int t = 0; t < comm->ntransports; t++)
        if (comm->tp_ctx[t] && !(comm->tp_all >> t & 1)) {
            TT_INFO(TT_SUB_INIT, "%s is not used: some rank does not offer it", comm->tp_ops[t]->name);
            comm->tp_ops[t]->finalize(comm->tp_ctx[t]);
            comm->tp_ctx[t] = NULL;
        }
    for (int t = 0; t < comm->ntransports; t++) {
        tt_log_fault_mark();
        tutti_status_t st =
            comm->tp_ctx[t] && comm->tp_ops[t]->start ? comm->tp_ops[t]->start(comm->tp_ctx[t]) : 0;
        if (st)
            return tt_comm_context(NULL, st, "rank %d: %s could not start", comm->rank,
                                   comm->tp_ops[t]->name);
    }
    for (int q = 0; q < comm->nranks; q++)
        if (q != comm->rank && tt_comm_host_tp(comm, q, 0) < 0)
            return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                    "no transport in TUTTI_TRANSPORTS reaches rank %d from rank %d", q,
                                    comm->rank);
    int *peers = malloc(sizeof(int) * (size_t)comm->nranks);
    if (!peers)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d peers", comm->rank,
                             comm->nranks);
    tutti_status_t st = connect_device(comm, blobs, peers);
    free(peers);
    tt_cost_model_t *m = &comm->policy.tuner.model;
    if (!st && !m->classes_fixed)
        tt_cost_use_links(m, &comm->hosts, comm->nranks, link_of, comm);
    return st;
}

void tt_comm_teardown(tt_comm_t *comm, int local_only, int keep_host)
{
    tt_comm_pairs_free(comm, local_only); /* no answer to another rank runs past here */
    int dev = comm->device_tp;
    if (!keep_host)
        tt_comm_teardown_host(comm);
    for (int r = 0; comm->device_peers && r < comm->nranks && !local_only; r++)
        if (comm->device_peers[r].ops)
            comm->device_peers[r].ops->close(comm->device_peers[r].conn);
    if (dev >= 0 && comm->tp_ctx[dev] && !local_only)
        comm->tp_ops[dev]->finalize(comm->tp_ctx[dev]);
    if (dev >= 0)
        comm->tp_ctx[dev] = NULL;
    free(comm->device_peers);
    comm->device_peers = NULL;
    free(comm->listeners);
    comm->listeners = NULL;
    tt_hosts_free(&comm->hosts);
}

void tt_comm_teardown_host(tt_comm_t *comm)
{
    for (int i = 0; i < comm->nconnected; i++) {
        int q = comm->connected[i];
        if (!comm->borrowed || !comm->borrowed[q]) /* a borrowed one is its lender's to close */
            comm->peers[q].ops->close(comm->peers[q].conn);
    }
    for (int t = 0; t < comm->ntransports; t++)
        if (comm->tp_ctx[t] && t != comm->device_tp) {
            comm->tp_ops[t]->finalize(comm->tp_ctx[t]);
            comm->tp_ctx[t] = NULL; /* so that a second call does nothing */
        }
    free(comm->peers);
    free(comm->connected);
    free((void *)comm->joined);
    free(comm->borrowed);
    free(comm->lender_rank);
    comm->peers = NULL;
    comm->connected = NULL;
    comm->joined = NULL;
    comm->borrowed = NULL;
    comm->lender_rank = NULL;
    comm->nconnected = 0;
}
