/* SPDX-License-Identifier: MIT */
/*
 * From a joined bootstrap to a ready communicator: every rank publishes
 * where it runs, what steers its choices and where its transports listen;
 * all check that they agree, connect, and derive the same link class for
 * every pair, so every rank's tuner prices the same job.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/env_config.h"
#include "core/hash.h"
#include "core/load.h"
#include "core/log.h"
#include "topo/topo.h"

/* The variables the ranks must set alike (their rules' .agreed): across the
 * job (the channels of every connection), or among the ranks of one host
 * (the shared queues), from the core's table and every built transport's. */
#define TT_MAX_AGREED 16
typedef struct {
    const tt_config_table_t *table;
    int id;
} agreed_t;

static int agreed_vars(agreed_t *out)
{
    const tt_config_table_t *const *more = tt_transport_configs();
    int n = 0;
    for (int t = -1; t < 0 || more[t]; t++) {
        const tt_config_table_t *table = t < 0 ? &tt_config_core : more[t];
        for (int id = 0; id < table->count && n < TT_MAX_AGREED; id++)
            if (table->rules[id].agreed)
                out[n++] = (agreed_t){table, id};
    }
    return n;
}

/* What every rank publishes at start-up. */
typedef struct {
    tt_endpoint_t endpoint;
    uint64_t transports_hash;      /* TUTTI_TRANSPORTS */
    uint64_t policy_hash;          /* TUTTI_ALGO*, TUTTI_SLICE_BYTES, TUTTI_DETERMINISTIC, the cost model */
    int64_t agreed[TT_MAX_AGREED]; /* the values of agreed_vars(), in its order */
    uint32_t offered;              /* bit t: transport t listens on this rank */
    tt_sockaddr_t rescue;          /* where a later shrink's coordinator finds this rank */
    unsigned char addr[TT_MAX_TRANSPORTS][TT_ADDR_MAX];
} rank_record_t;

static void fill_endpoint(int node_id, tt_endpoint_t *ep)
{
    memset(ep, 0, sizeof *ep);
    gethostname(ep->hostname, sizeof ep->hostname - 1);
    ep->pid = (int32_t)getpid();
    ep->node_id = node_id;
    /* Ranks given different node ids on one machine count as different
     * hosts: that is how tutti-run --nodes simulates a cluster. */
    ep->host_id = tt_hash(ep->hostname, strlen(ep->hostname), TT_HASH_SEED);
    ep->host_id = tt_hash(&node_id, sizeof node_id, ep->host_id);
    cpu_set_t set;
    int cpu = 0;
    /* Pinned to one CPU (tutti-run --bind core): judge by the whole machine. */
    ep->cpus = (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        if (CPU_COUNT(&set) > 1)
            ep->cpus = CPU_COUNT(&set);
        while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
            cpu++;
    }
    int numa = tt_topo_cpu_numa(cpu);
    ep->place = (uint64_t)(numa < 0 ? 0 : numa) << 32 | (uint64_t)cpu;
}

/* Ranks per CPU on rank r's host, as r sees its CPUs. */
static int ranks_beside(tutti_comm_t comm, int r)
{
    int local = 0;
    for (int q = 0; q < comm->nranks; q++)
        local += comm->endpoints[q].host_id == comm->endpoints[r].host_id;
    return local;
}

static double ranks_per_cpu(tutti_comm_t comm, int r)
{
    return comm->endpoints[r].cpus > 0 ? (double)ranks_beside(comm, r) / comm->endpoints[r].cpus : 1;
}

/* How crowded the most crowded host is. Every rank computes it from the
 * same records, so the tuner's choices stay the same on every rank. */
static double job_crowding(tutti_comm_t comm)
{
    double most = 1;
    for (int r = 0; r < comm->nranks; r++) {
        double here = ranks_per_cpu(comm, r);
        most = here > most ? here : most;
    }
    return most;
}

static tutti_status_t hosts_from_endpoints(tutti_comm_t comm)
{
    uint64_t *ids = malloc(2 * (size_t)comm->nranks * sizeof *ids);
    if (!ids)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for the host layout", comm->rank);
    uint64_t *place = ids + comm->nranks;
    for (int r = 0; r < comm->nranks; r++) {
        ids[r] = comm->endpoints[r].host_id;
        place[r] = comm->endpoints[r].place;
    }
    tutti_status_t st = tt_hosts_init(&comm->hosts, comm->nranks, ids, place);
    free(ids);
    return st ? tt_comm_error(NULL, st, "rank %d: no memory for the host layout", comm->rank) : st;
}

static tutti_status_t pick_transports(tutti_comm_t comm)
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

/* Starts every listed transport; one that is not offered here (it said
 * why) is left out of mine->offered. */
static tutti_status_t listen_all(tutti_comm_t comm, rank_record_t *mine)
{
    for (int t = 0; t < comm->ntransports; t++) {
        const tt_transport_ops_t *ops = comm->tp_ops[t];
        size_t len = 0;
        mine->transports_hash = tt_hash(ops->name, strlen(ops->name), mine->transports_hash + 1);
        tt_log_fault_mark();
        tutti_status_t st = ops->listen(&comm->env, &comm->tp_ctx[t], mine->addr[t], &len);
        if (st == TUTTI_ERR_UNSUPPORTED) {
            comm->tp_ctx[t] = NULL;
            continue;
        }
        if (st)
            return tt_comm_context(NULL, st, "rank %d: %s could not start listening", comm->rank, ops->name);
        mine->offered |= 1u << t;
    }
    return TUTTI_SUCCESS;
}

/* Whether every rank's record says it offers transport t. */
static int offered_by_all(const tutti_comm_t comm, const rank_record_t *records, int t)
{
    for (int r = 0; r < comm->nranks; r++)
        if (!(records[r].offered >> t & 1))
            return 0;
    return comm->tp_ctx[t] != NULL;
}

/* Whether transport t reaches b from a: any rank can tell for any pair. */
static int reaches(const tutti_comm_t comm, int t, int a, int b)
{
    tt_tp_env_t as_a = comm->env;
    as_a.rank = a;
    return comm->tp_ops[t]->reachable(&as_a, b);
}

/* The first agreed variable that rank r sets otherwise than this rank
 * (and, for the per-host ones, shares its host): said once, naming both. */
static tutti_status_t check_settings(tutti_comm_t comm, const rank_record_t *mine,
                                     const rank_record_t *records)
{
    agreed_t agreed[TT_MAX_AGREED];
    int nagreed = agreed_vars(agreed);
    for (int r = 0; r < comm->nranks; r++)
        for (int v = 0; v < nagreed; v++) {
            int same_host = records[r].endpoint.host_id == mine->endpoint.host_id;
            int per_host = agreed[v].table->rules[agreed[v].id].agreed == TT_CFG_AGREE_HOST;
            if (records[r].agreed[v] == mine->agreed[v] || (per_host && !same_host))
                continue;
            return tt_comm_error_in(
                NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                "%s is %lld on rank %d but %lld on rank %d: every rank%s must set it alike",
                agreed[v].table->entries[agreed[v].id].name, (long long)mine->agreed[v], comm->rank,
                (long long)records[r].agreed[v], r, per_host ? " of a host" : "");
        }
    return TUTTI_SUCCESS;
}

static tutti_status_t check_agreement(tutti_comm_t comm, const rank_record_t *mine,
                                      const rank_record_t *records)
{
    TT_TRY(check_settings(comm, mine, records));
    for (int r = 0; r < comm->nranks; r++) {
        if (records[r].transports_hash != mine->transports_hash)
            return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                    "rank %d and rank %d have different TUTTI_TRANSPORTS", r, comm->rank);
        if (records[r].policy_hash != mine->policy_hash)
            return tt_comm_error_in(
                NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                "rank %d and rank %d steer the algorithm choice differently (TUTTI_ALGO*, "
                "TUTTI_SLICE_BYTES, TUTTI_DETERMINISTIC or TUTTI_TUNING_FILE differ)",
                r, comm->rank);
    }
    return TUTTI_SUCCESS;
}

/* Connects transport t to peers[0..n) and records them in table. */
static tutti_status_t connect_one(tutti_comm_t comm, int t, const rank_record_t *records, const int *peers,
                                  int n, tt_peer_t *table)
{
    unsigned char *addrs = malloc((size_t)comm->nranks * TT_ADDR_MAX);
    void **conns = calloc((size_t)comm->nranks, sizeof(void *));
    tutti_status_t st = addrs && conns ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    for (int r = 0; !st && r < comm->nranks; r++)
        memcpy(addrs + (size_t)r * TT_ADDR_MAX, records[r].addr[t], TT_ADDR_MAX);
    tt_log_fault_mark();
    if (!st)
        st = comm->tp_ops[t]->connect(comm->tp_ctx[t], peers, n, addrs, conns);
    if (st)
        tt_comm_context(NULL, st, "rank %d: %s connections failed", comm->rank, comm->tp_ops[t]->name);
    for (int i = 0; !st && i < n; i++)
        table[peers[i]] = (tt_peer_t){comm->tp_ops[t], conns[i]};
    if (!st)
        TT_DEBUG(TT_SUB_INIT, "%s connects %d peers", comm->tp_ops[t]->name, n);
    free(addrs);
    free(conns);
    return st;
}

/* Each peer over the first host transport, in TUTTI_TRANSPORTS order,
 * that every rank offers and that reaches it. */
static tutti_status_t connect_host(tutti_comm_t comm, const rank_record_t *records, int *peers)
{
    for (int t = 0; t < comm->ntransports; t++) {
        if (!(comm->tp_ops[t]->caps & TT_CAP_HOST_MEM) || !offered_by_all(comm, records, t))
            continue;
        int n = 0;
        for (int r = 0; r < comm->nranks; r++)
            if (r != comm->rank && !comm->peers[r].ops && reaches(comm, t, comm->rank, r))
                peers[n++] = r;
        TT_TRY(connect_one(comm, t, records, peers, n, comm->peers)); /* every rank calls it, n may be 0 */
    }
    for (int r = 0; r < comm->nranks; r++)
        if (r != comm->rank && !comm->peers[r].ops)
            return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                    "no transport in TUTTI_TRANSPORTS reaches rank %d from rank %d", r,
                                    comm->rank);
    return TUTTI_SUCCESS;
}

/* The first device transport every rank offers, when it reaches every
 * pair: device calls may then run on the device buffers themselves. */
static tutti_status_t connect_device(tutti_comm_t comm, const rank_record_t *records, int *peers)
{
    int n = 0;
    for (int r = 0; r < comm->nranks; r++)
        if (r != comm->rank)
            peers[n++] = r;
    for (int t = 0; t < comm->ntransports && comm->nranks > 1; t++) {
        if (!(comm->tp_ops[t]->caps & TT_CAP_DEVICE_MEM) || !offered_by_all(comm, records, t))
            continue;
        int all = 1;
        for (int a = 0; a < comm->nranks && all; a++)
            for (int b = 0; b < comm->nranks && all; b++)
                all = a == b || reaches(comm, t, a, b);
        if (!all)
            continue;
        comm->device_peers = calloc((size_t)comm->nranks, sizeof *comm->device_peers);
        if (!comm->device_peers)
            return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d peers", comm->rank, n);
        comm->device_tp = t;
        return connect_one(comm, t, records, peers, n, comm->device_peers);
    }
    return TUTTI_SUCCESS;
}

/* The class of the host link of every pair, from the transport that
 * connects it; it feeds the cost model unless the tuning file fixed the
 * classes. Every rank derives the same table from the same records. */
static tutti_status_t link_classes(tutti_comm_t comm, const rank_record_t *records)
{
    int p = comm->nranks;
    comm->links = calloc((size_t)p * (size_t)p, sizeof *comm->links);
    if (!comm->links)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for the link classes",
                             comm->rank);
    for (int a = 0; a < p; a++)
        for (int b = 0; b < p; b++) {
            tt_link_t *l = &comm->links[(size_t)a * (size_t)p + (size_t)b];
            *l = TT_LINK_SHM;
            for (int t = 0; a != b && t < comm->ntransports; t++)
                if ((comm->tp_ops[t]->caps & TT_CAP_HOST_MEM) && offered_by_all(comm, records, t) &&
                    reaches(comm, t, a, b)) {
                    *l = comm->tp_ops[t]->link;
                    break;
                }
        }
    tt_cost_model_t *m = &comm->policy.tuner.model;
    if (!m->classes_fixed)
        tt_cost_use_links(m, &comm->hosts, comm->links, p);
    return TUTTI_SUCCESS;
}

/* Leaves out the transports not every rank offers. */
static void drop_unused(tutti_comm_t comm, const rank_record_t *records)
{
    for (int t = 0; t < comm->ntransports; t++)
        if (comm->tp_ctx[t] && !offered_by_all(comm, records, t)) {
            TT_INFO(TT_SUB_INIT, "%s is not used: some rank does not offer it", comm->tp_ops[t]->name);
            comm->tp_ops[t]->finalize(comm->tp_ctx[t]);
            comm->tp_ctx[t] = NULL;
        }
}

static tutti_status_t connect_all(tutti_comm_t comm, const rank_record_t *records)
{
    int *peers = malloc(sizeof(int) * (size_t)comm->nranks);
    comm->peers = calloc((size_t)comm->nranks, sizeof *comm->peers);
    tutti_status_t st = peers && comm->peers ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    if (st)
        tt_comm_error(NULL, st, "rank %d: no memory for %d peers", comm->rank, comm->nranks);
    if (!st)
        drop_unused(comm, records);
    if (!st)
        st = connect_host(comm, records, peers);
    if (!st)
        st = connect_device(comm, records, peers);
    if (!st)
        st = link_classes(comm, records);
    free(peers);
    return st;
}

tutti_status_t tt_comm_setup(tutti_comm_t comm, int node_id)
{
    int p = comm->nranks;
    rank_record_t mine = {0}, *records = calloc((size_t)p, sizeof *records);
    if (!records)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d ranks", comm->rank, p);
    fill_endpoint(node_id, &mine.endpoint);
    /* Every rank must choose the same algorithms, so every rank must steer
     * the choice the same way: checked below with the other records. */
    char why[256];
    tutti_status_t st = tt_algo_policy_from_env(&comm->policy, why, sizeof why);
    if (st)
        tt_comm_error_in(NULL, TT_SUB_CONFIG, st, "%s", why);
    mine.policy_hash = tt_algo_policy_hash(&comm->policy);
    agreed_t agreed[TT_MAX_AGREED];
    for (int v = 0, n = agreed_vars(agreed); v < n; v++)
        mine.agreed[v] = tt_config_table_int(agreed[v].table, agreed[v].id);
    if (!st)
        st = pick_transports(comm);
    if (!st)
        st = listen_all(comm, &mine);
    if (!st && p > 1)
        st = tt_rescue_open(comm, &mine.rescue);
    tt_log_fault_mark(); /* the bootstrap says why it failed */
    if (!st && (st = tt_bootstrap_allgather(&comm->bs, &mine, records, sizeof mine)) != TUTTI_SUCCESS)
        tt_comm_context(NULL, st, "rank %d: exchanging addresses through the bootstrap failed", comm->rank);
    for (int r = 0; !st && r < p; r++) {
        comm->endpoints[r] = records[r].endpoint;
        if (comm->rescue)
            comm->rescue[r] = records[r].rescue;
    }
    if (!st)
        st = check_agreement(comm, &mine, records);
    if (!st) {
        /* More ranks here than CPUs: a waiting rank gives its CPU away at once. */
        comm->oversubscribed = ranks_per_cpu(comm, comm->rank) > 1;
        comm->local_ranks = ranks_beside(comm, comm->rank);
        comm->cpus_online = tt_load_cpus();
        comm->policy.tuner.model.crowding = job_crowding(comm);
        st = hosts_from_endpoints(comm);
    }
    if (!st)
        st = connect_all(comm, records);
    tt_log_fault_mark();
    if (!st && (st = tt_bootstrap_barrier(&comm->bs)) != TUTTI_SUCCESS)
        tt_comm_context(NULL, st, "rank %d: the last set-up barrier failed", comm->rank);
    free(records);
    return st;
}

void tt_comm_teardown(tutti_comm_t comm, int local_only)
{
    for (int r = 0; comm->peers && r < comm->nranks; r++)
        if (comm->peers[r].ops)
            comm->peers[r].ops->close(comm->peers[r].conn);
    for (int r = 0; comm->device_peers && r < comm->nranks && !local_only; r++)
        if (comm->device_peers[r].ops)
            comm->device_peers[r].ops->close(comm->device_peers[r].conn);
    for (int t = 0; t < comm->ntransports; t++)
        if (comm->tp_ctx[t] && (!local_only || t != comm->device_tp))
            comm->tp_ops[t]->finalize(comm->tp_ctx[t]);
    free(comm->peers);
    free(comm->device_peers);
    free(comm->links);
    tt_hosts_free(&comm->hosts);
}
