/* SPDX-License-Identifier: MIT */
/*
 * Communicator life cycle: bootstrap, endpoint exchange, transport choice
 * per peer, connection set-up; destroy and abort. Live handles are kept in a
 * registry so a destroyed handle is rejected instead of used.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "device/queue.h"
#include "device/direct_run.h"
#include "core/key.h"
#include "core/env_config.h"
#include "core/hash.h"
#include "core/log.h"
#include "topo/topo.h"

#define TT_MAX_COMMS 1024

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static tutti_comm_t registry[TT_MAX_COMMS];
static int registry_len; /* entries at or past this index are all NULL */
static _Thread_local char thread_error[512];

static int registry_add(tutti_comm_t comm)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < TT_MAX_COMMS; i++)
        if (!registry[i]) {
            registry[i] = comm;
            if (i >= registry_len)
                registry_len = i + 1;
            pthread_mutex_unlock(&registry_lock);
            return 0;
        }
    pthread_mutex_unlock(&registry_lock);
    return -1;
}

static void registry_remove(tutti_comm_t comm)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < TT_MAX_COMMS; i++)
        if (registry[i] == comm)
            registry[i] = NULL;
    pthread_mutex_unlock(&registry_lock);
}

int tt_comm_valid(tutti_comm_t comm)
{
    int found = 0;
    if (!comm)
        return 0;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < registry_len && !found; i++)
        found = registry[i] == comm;
    pthread_mutex_unlock(&registry_lock);
    return found;
}

tutti_status_t tt_comm_error(tutti_comm_t comm, tutti_status_t st, const char *fmt, ...)
{
    char *buf = comm ? comm->last_error : thread_error;
    size_t len = comm ? sizeof comm->last_error : sizeof thread_error;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (comm)
        snprintf(thread_error, sizeof thread_error, "%s", comm->last_error);
    TT_WARN(TT_SUB_COLL, "%s", buf);
    return st;
}

TUTTI_API const char *tutti_comm_last_error(tutti_comm_t comm)
{
    return tt_comm_valid(comm) ? comm->last_error : thread_error;
}

tutti_status_t tt_comm_scratch(tutti_comm_t comm, size_t bytes, void **out)
{
    if (bytes > comm->scratch_bytes) {
        void *p = malloc(bytes);
        if (!p)
            return TUTTI_ERR_NO_MEMORY;
        free(comm->scratch);
        comm->scratch = p;
        comm->scratch_bytes = bytes;
    }
    *out = comm->scratch;
    return TUTTI_SUCCESS;
}

void tt_comm_fail(tutti_comm_t comm, tutti_status_t st)
{
    if (comm->failed)
        return;
    comm->failed = st;
    for (int r = 0; r < comm->nranks; r++)
        if (comm->peers[r].ops)
            comm->peers[r].ops->abort(comm->peers[r].conn);
    tt_direct_abort(comm);
}

/* What every rank publishes at start-up. */
typedef struct {
    tt_endpoint_t endpoint;
    uint64_t transports_hash;
    uint64_t policy_hash; /* TUTTI_ALGO*, TUTTI_SLICE_BYTES, TUTTI_DETERMINISTIC, the cost model */
    unsigned char addr[TT_MAX_TRANSPORTS][TT_ADDR_MAX];
} rank_record_t;

static tutti_status_t pick_transports(tutti_comm_t comm)
{
    char list[128];
    snprintf(list, sizeof list, "%s", tt_config_str(TT_CFG_TRANSPORTS));
    char *save = NULL;
    for (char *name = strtok_r(list, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        const tt_transport_ops_t *ops = NULL;
        for (int i = 0; tt_transports[i]; i++)
            if (strcmp(tt_transports[i]->name, name) == 0)
                ops = tt_transports[i];
        if (!ops)
            return tt_comm_error(comm, TUTTI_ERR_CONFIG,
                                 "TUTTI_TRANSPORTS names '%s', which this build lacks", name);
        if (comm->ntransports == TT_MAX_TRANSPORTS)
            return tt_comm_error(comm, TUTTI_ERR_CONFIG, "TUTTI_TRANSPORTS lists too many transports");
        comm->tp_ops[comm->ntransports++] = ops;
    }
    if (comm->ntransports == 0)
        return tt_comm_error(comm, TUTTI_ERR_CONFIG, "TUTTI_TRANSPORTS is empty");
    return TUTTI_SUCCESS;
}

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
static double ranks_per_cpu(tutti_comm_t comm, int r)
{
    int local = 0;
    for (int q = 0; q < comm->nranks; q++)
        local += comm->endpoints[q].host_id == comm->endpoints[r].host_id;
    return comm->endpoints[r].cpus > 0 ? (double)local / comm->endpoints[r].cpus : 1;
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

static tutti_status_t connect_peers(tutti_comm_t comm, const rank_record_t *records)
{
    const tt_tp_env_t *env = &comm->env;
    int *peers = malloc(sizeof(int) * (size_t)comm->nranks);
    void **conns = calloc((size_t)comm->nranks, sizeof(void *));
    unsigned char *addrs = malloc((size_t)comm->nranks * TT_ADDR_MAX);
    tutti_status_t st = peers && conns && addrs ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    for (int t = 0; t < comm->ntransports && !st; t++) {
        int n = 0;
        for (int r = 0; r < comm->nranks; r++) {
            memcpy(addrs + (size_t)r * TT_ADDR_MAX, records[r].addr[t], TT_ADDR_MAX);
            if (r != comm->rank && !comm->peers[r].ops && comm->tp_ops[t]->reachable(env, r))
                peers[n++] = r;
        }
        st = comm->tp_ops[t]->connect(comm->tp_ctx[t], peers, n, addrs, conns);
        if (st) {
            tt_comm_error(comm, st, "rank %d: %s connections failed", comm->rank, comm->tp_ops[t]->name);
            break;
        }
        for (int i = 0; i < n; i++)
            comm->peers[peers[i]] = (tt_peer_t){comm->tp_ops[t], conns[i]};
        TT_DEBUG(TT_SUB_INIT, "%s connects %d peers", comm->tp_ops[t]->name, n);
    }
    for (int r = 0; r < comm->nranks && !st; r++)
        if (r != comm->rank && !comm->peers[r].ops)
            st =
                tt_comm_error(comm, TUTTI_ERR_CONFIG,
                              "no transport in TUTTI_TRANSPORTS reaches rank %d from rank %d", r, comm->rank);
    free(peers);
    free(conns);
    free(addrs);
    return st;
}

static tutti_status_t hosts_from_endpoints(tutti_comm_t comm)
{
    uint64_t *ids = malloc(2 * (size_t)comm->nranks * sizeof *ids), *place = ids + comm->nranks;
    if (!ids)
        return TUTTI_ERR_NO_MEMORY;
    for (int r = 0; r < comm->nranks; r++) {
        ids[r] = comm->endpoints[r].host_id;
        place[r] = comm->endpoints[r].place;
    }
    tutti_status_t st = tt_hosts_init(&comm->hosts, comm->nranks, ids, place);
    free(ids);
    return st;
}

static void comm_free(tutti_comm_t comm)
{
    tt_device_free(comm); /* its proxy thread uses the connections */
    tt_direct_free(comm);
    for (int r = 0; comm->peers && r < comm->nranks; r++)
        if (comm->peers[r].ops)
            comm->peers[r].ops->close(comm->peers[r].conn);
    for (int t = 0; t < comm->ntransports; t++)
        if (comm->tp_ctx[t])
            comm->tp_ops[t]->finalize(comm->tp_ctx[t]);
    tt_bootstrap_close(&comm->bs);
    free(comm->peers);
    free(comm->endpoints);
    tt_hosts_free(&comm->hosts);
    free(comm->send_seq);
    free(comm->recv_seq);
    free(comm->scratch);
    free(comm->engine_ws);
    free(comm->compress_ws);
    tt_sched_cache_free(&comm->sched_cache);
    free(comm);
}

tutti_status_t tt_comm_create(tutti_comm_t *out, int nranks, int rank, const unsigned char *key,
                              const tt_sockaddr_t *root, const tutti_comm_params_t *params)
{
    char msg[256];
    if (tt_config_check(msg, sizeof msg))
        return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "%s", msg);
    tutti_comm_t comm = calloc(1, sizeof *comm);
    if (!comm)
        return TUTTI_ERR_NO_MEMORY;
    comm->bs.up_fd = -1;
    comm->rank = rank;
    comm->nranks = nranks;
    comm->timeout_ms = tt_config_int(TT_CFG_TIMEOUT) * 1000;
    int node_id = (int)tt_config_int(TT_CFG_NODE_ID);
    if (params && (params->field_mask & TUTTI_PARAM_TIMEOUT_MS))
        comm->timeout_ms = params->timeout_ms;
    if (params && (params->field_mask & TUTTI_PARAM_NODE_ID))
        node_id = params->node_id;
    comm->nchannels = (int)tt_config_int(TT_CFG_PIPELINE);
    tutti_status_t st = TUTTI_SUCCESS;
    size_t slice_bytes = (size_t)tt_config_int(TT_CFG_SLICE_BYTES);
    if (comm->timeout_ms <= 0 || comm->nchannels < 1 || comm->nchannels > TT_MAX_CHANNELS ||
        (slice_bytes != 0 && slice_bytes < 64)) {
        st = tt_comm_error(NULL, TUTTI_ERR_CONFIG,
                           "TUTTI_TIMEOUT must be > 0, TUTTI_PIPELINE 1..%d and TUTTI_SLICE_BYTES 0 or >= 64",
                           TT_MAX_CHANNELS);
        goto undo_alloc;
    }
    tt_log_set_rank(rank);
    comm->peers = calloc((size_t)nranks, sizeof *comm->peers);
    comm->endpoints = calloc((size_t)nranks, sizeof *comm->endpoints);
    comm->send_seq = calloc((size_t)nranks, sizeof(uint64_t));
    comm->recv_seq = calloc((size_t)nranks, sizeof(uint64_t));
    rank_record_t *records = calloc((size_t)nranks, sizeof *records);
    if (!comm->peers || !comm->endpoints || !comm->send_seq || !comm->recv_seq || !records) {
        st = TUTTI_ERR_NO_MEMORY;
        goto undo_records;
    }
    st = pick_transports(comm);
    if (st)
        goto undo_records;
    st = tt_bootstrap_init(&comm->bs, nranks, rank, key, root, comm->timeout_ms, msg, sizeof msg);
    if (st) {
        tt_comm_error(NULL, st, "%s", msg);
        goto undo_records;
    }

    comm->env = (tt_tp_env_t){.rank = rank,
                              .nranks = nranks,
                              .nchannels = comm->nchannels,
                              .key_tag = tt_key_tag(key),
                              .timeout_ms = comm->timeout_ms,
                              .endpoints = comm->endpoints,
                              .barrier = tt_bootstrap_barrier,
                              .barrier_arg = &comm->bs};
    memcpy(comm->env.key, key, TT_KEY_BYTES);
    rank_record_t mine = {0};
    fill_endpoint(node_id, &mine.endpoint);
    /* Every rank must choose the same algorithms, so every rank must steer
     * the choice the same way: checked below with the other records. */
    char why[256];
    st = tt_algo_policy_from_env(&comm->policy, why, sizeof why);
    if (st) {
        tt_comm_error(NULL, st, "%s", why);
        goto undo_records;
    }
    mine.policy_hash = tt_algo_policy_hash(&comm->policy);
    if (tt_direct_wanted()) /* every rank sets cuda_ipc up, or none */
        mine.transports_hash = tt_hash("cuda_ipc", 8, mine.transports_hash + 1);
    for (int t = 0; t < comm->ntransports; t++) {
        size_t len = 0;
        mine.transports_hash =
            tt_hash(comm->tp_ops[t]->name, strlen(comm->tp_ops[t]->name), mine.transports_hash + 1);
        st = comm->tp_ops[t]->listen(&comm->env, &comm->tp_ctx[t], mine.addr[t], &len);
        if (st) {
            tt_comm_error(NULL, st, "rank %d: %s could not start listening", rank, comm->tp_ops[t]->name);
            goto undo_records;
        }
    }
    st = tt_bootstrap_allgather(&comm->bs, &mine, records, sizeof mine);
    if (st) {
        tt_comm_error(NULL, st, "rank %d: exchanging addresses through the bootstrap failed", rank);
        goto undo_records;
    }
    for (int r = 0; r < nranks; r++) {
        comm->endpoints[r] = records[r].endpoint;
        if (records[r].transports_hash != mine.transports_hash) {
            st = tt_comm_error(NULL, TUTTI_ERR_CONFIG,
                               "rank %d and rank %d have different TUTTI_TRANSPORTS or TUTTI_CUDA_IPC", r,
                               rank);
            goto undo_records;
        }
        if (records[r].policy_hash != mine.policy_hash) {
            st = tt_comm_error(NULL, TUTTI_ERR_CONFIG,
                               "rank %d and rank %d steer the algorithm choice differently (TUTTI_ALGO*, "
                               "TUTTI_SLICE_BYTES, TUTTI_DETERMINISTIC or TUTTI_TUNING_FILE differ)",
                               r, rank);
            goto undo_records;
        }
    }
    /* More ranks here than CPUs: a waiting rank gives its CPU away at once. */
    comm->oversubscribed = ranks_per_cpu(comm, rank) > 1;
    comm->policy.tuner.model.crowding = job_crowding(comm);
    st = hosts_from_endpoints(comm);
    if (st) {
        tt_comm_error(NULL, st, "rank %d: no memory for the host layout", rank);
        goto undo_records;
    }
    st = connect_peers(comm, records);
    if (!st)
        st = tt_direct_init(comm);
    if (!st)
        st = tt_bootstrap_barrier(&comm->bs);
    if (st) {
        tt_comm_error(NULL, st, "rank %d: connecting to peers failed: %s", rank, comm->last_error);
        goto undo_records;
    }
    if (registry_add(comm)) {
        st = tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "too many live communicators (%d)", TT_MAX_COMMS);
        goto undo_records;
    }
    free(records);
    TT_INFO(TT_SUB_INIT, "rank %d of %d ready", rank, nranks);
    *out = comm;
    return TUTTI_SUCCESS;

undo_records:
    free(records);
undo_alloc:
    comm_free(comm);
    return st;
}

TUTTI_API tutti_status_t tutti_comm_destroy(tutti_comm_t comm)
{
    if (!tt_comm_valid(comm))
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL or already destroyed communicator");
    registry_remove(comm);
    tt_device_drain(comm);
    /* Peers may still be draining the last collective's messages from us;
     * the barrier keeps our queues and sockets alive until they are done. */
    tutti_status_t st = comm->failed ? TUTTI_SUCCESS : tt_bootstrap_barrier(&comm->bs);
    comm_free(comm);
    return st;
}

TUTTI_API tutti_status_t tutti_comm_abort(tutti_comm_t comm)
{
    if (!tt_comm_valid(comm))
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL or already destroyed communicator");
    registry_remove(comm);
    tt_comm_fail(comm, TUTTI_ERR_ABORTED);
    comm_free(comm);
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_comm_rank(tutti_comm_t comm, int *rank)
{
    if (!tt_comm_valid(comm))
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL or destroyed communicator");
    if (!rank)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "rank: NULL output pointer");
    *rank = comm->rank;
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_comm_size(tutti_comm_t comm, int *size)
{
    if (!tt_comm_valid(comm))
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL or destroyed communicator");
    if (!size)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "size: NULL output pointer");
    *size = comm->nranks;
    return TUTTI_SUCCESS;
}
