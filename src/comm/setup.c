/* SPDX-License-Identifier: MIT */
/*
 * From a joined bootstrap to a ready communicator. Every rank sends rank 0
 * where it runs, where it listens and what steers its choices; rank 0
 * checks that they agree against its own (and, for what a host's ranks
 * share, its first rank's) and sends every rank the records alone, about
 * 170 bytes a rank: what any rank needs to reach any other and to price
 * any pair. The transports start (tp_setup.c); connections are made at
 * first use (connect.c). Nothing here compares every pair of ranks, so
 * set-up costs O(N log N) on a rank.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/connect.h"
#include "comm/error.h"
#include "comm/rescue.h"
#include "comm/setup.h"
#include "core/clock.h"
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

/* What every rank needs of every other, sent to all. */
typedef struct {
    tt_endpoint_t endpoint;
    uint32_t offered; /* bit t: transport t listens on this rank */
    uint32_t pad;
    tt_sockaddr_t listener; /* its bootstrap listener: where peers ask it for connections */
    tt_sockaddr_t rescue;   /* where a later shrink's coordinator finds this rank */
} rank_record_t;

/* What rank 0 alone reads of every rank: its record, and what it steers
 * alike with the others. */
typedef struct {
    rank_record_t rec;
    uint64_t transports_hash;      /* TUTTI_TRANSPORTS */
    uint64_t policy_hash;          /* TUTTI_ALGO*, TUTTI_SLICE_BYTES, TUTTI_DETERMINISTIC, the cost model */
    int64_t agreed[TT_MAX_AGREED]; /* the values of agreed_vars(), in its order */
} rank_claim_t;

/* Rank 0's verdict on the claims, sent before the records. */
typedef struct {
    int32_t status;
    char why[508];
} verdict_t;

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

/* The lowest rank on each rank's host, by sorting (ranks by host id). */
static int host_first_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b; /* host id, rank */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static int *host_leaders(const rank_claim_t *c, int p)
{
    uint64_t *pairs = malloc(2 * (size_t)p * sizeof *pairs);
    int *first = malloc((size_t)p * sizeof *first);
    if (!pairs || !first) {
        free(pairs);
        free(first);
        return NULL;
    }
    for (int r = 0; r < p; r++) {
        pairs[2 * r] = c[r].rec.endpoint.host_id;
        pairs[2 * r + 1] = (uint64_t)r;
    }
    qsort(pairs, (size_t)p, 2 * sizeof *pairs, host_first_cmp);
    for (int i = 0, lead = 0; i < p; i++) {
        if (i == 0 || pairs[2 * i] != pairs[2 * i - 2])
            lead = (int)pairs[2 * i + 1];
        first[pairs[2 * i + 1]] = lead;
    }
    free(pairs);
    return first;
}

/* On rank 0: the first way in which a rank steers otherwise than rank 0
 * (or, for what a host's ranks share, than its host's first rank), into
 * why; TUTTI_ERR_CONFIG, or success. */
static tutti_status_t check_claims(const rank_claim_t *c, int p, char *why, size_t len)
{
    agreed_t agreed[TT_MAX_AGREED];
    int nagreed = agreed_vars(agreed);
    int *first = host_leaders(c, p);
    if (!first) {
        snprintf(why, len, "rank 0: no memory to check %d ranks' settings", p);
        return TUTTI_ERR_NO_MEMORY;
    }
    tutti_status_t st = TUTTI_SUCCESS;
    for (int r = 1; r < p && !st; r++) {
        for (int v = 0; v < nagreed && !st; v++) {
            int per_host = agreed[v].table->rules[agreed[v].id].agreed == TT_CFG_AGREE_HOST,
                ref = per_host ? first[r] : 0;
            if (c[r].agreed[v] == c[ref].agreed[v])
                continue;
            st = TUTTI_ERR_CONFIG;
            snprintf(why, len, "%s is %lld on rank %d but %lld on rank %d: every rank%s must set it alike",
                     agreed[v].table->entries[agreed[v].id].name, (long long)c[ref].agreed[v], ref,
                     (long long)c[r].agreed[v], r, per_host ? " of a host" : "");
        }
        if (!st && c[r].transports_hash != c[0].transports_hash) {
            st = TUTTI_ERR_CONFIG;
            snprintf(why, len, "rank %d and rank 0 have different TUTTI_TRANSPORTS", r);
        } else if (!st && c[r].policy_hash != c[0].policy_hash) {
            st = TUTTI_ERR_CONFIG;
            snprintf(why, len,
                     "rank %d and rank 0 steer the algorithm choice differently (TUTTI_ALGO*, "
                     "TUTTI_SLICE_BYTES, TUTTI_DETERMINISTIC or TUTTI_TUNING_FILE differ)",
                     r);
        }
    }
    free(first);
    return st;
}

/* Every claim to rank 0, which checks them; its verdict and every record
 * to all. Rank 0 handles one claim per rank; each rank gets N records. */
static tutti_status_t exchange(tt_comm_t *comm, const rank_claim_t *mine, rank_record_t *records)
{
    int p = comm->nranks;
    size_t down = sizeof(verdict_t) + (size_t)p * sizeof *records;
    rank_claim_t *claims = comm->rank == 0 ? malloc((size_t)p * sizeof *claims) : NULL;
    char *buf = malloc(down);
    tutti_status_t st = buf && (claims || comm->rank) ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    if (st)
        tt_comm_error(NULL, st, "rank %d: no memory for %d ranks' records", comm->rank, p);
    verdict_t *v = (verdict_t *)buf;
    tt_log_fault_mark(); /* the bootstrap says why it failed */
    if (!st && (st = tt_bootstrap_gather(&comm->bs, mine, claims, sizeof *mine)) != TUTTI_SUCCESS)
        tt_comm_context(NULL, st, "rank %d: sending its record to rank 0 failed", comm->rank);
    if (!st && claims) {
        memset(v, 0, sizeof *v);
        v->status = check_claims(claims, p, v->why, sizeof v->why);
        for (int r = 0; r < p; r++)
            memcpy(buf + sizeof *v + (size_t)r * sizeof *records, &claims[r].rec, sizeof *records);
    }
    if (!st && (st = tt_bootstrap_bcast(&comm->bs, buf, down)) != TUTTI_SUCCESS)
        tt_comm_context(NULL, st, "rank %d: receiving every rank's record failed", comm->rank);
    if (!st && v->status)
        st = tt_comm_error_in(NULL, TT_SUB_CONFIG, v->status, "%s", v->why);
    if (!st)
        memcpy(records, buf + sizeof *v, (size_t)p * sizeof *records);
    free(claims);
    free(buf);
    return st;
}

/* What every rank derives alike from the records: the host layout, how
 * crowded each host is (more ranks than CPUs), this rank's host. */
static tutti_status_t derive(tt_comm_t *comm, const rank_record_t *records)
{
    int p = comm->nranks;
    uint64_t *ids = malloc(2 * (size_t)p * sizeof *ids);
    int *local = calloc((size_t)p, sizeof *local);
    tutti_status_t st = ids && local ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    for (int r = 0; !st && r < p; r++) {
        comm->endpoints[r] = records[r].endpoint;
        comm->listeners[r] = records[r].listener;
        if (comm->rescue)
            comm->rescue[r] = records[r].rescue;
        ids[r] = records[r].endpoint.host_id;
        ids[p + r] = records[r].endpoint.place;
    }
    if (!st)
        st = tt_hosts_init(&comm->hosts, p, ids, ids + p);
    if (st) {
        free(ids);
        free(local);
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for the host layout", comm->rank);
    }
    for (int r = 0; r < p; r++)
        local[comm->hosts.host_of[r]]++;
    /* Every rank computes it from the same records, so the tuner's
     * choices stay the same on every rank. */
    double most = 1;
    for (int r = 0; r < p; r++) {
        int cpus = comm->endpoints[r].cpus;
        double here = cpus > 0 ? (double)local[comm->hosts.host_of[r]] / cpus : 1;
        most = here > most ? here : most;
        if (r == comm->rank) /* more ranks here than CPUs: a waiting rank gives its CPU away at once */
            comm->oversubscribed = here > 1;
    }
    comm->local_ranks = local[comm->hosts.host_of[comm->rank]];
    comm->cpus_online = tt_load_cpus();
    comm->policy.tuner.model.crowding = most;
    free(ids);
    free(local);
    return TUTTI_SUCCESS;
}

/* The steering this rank publishes: the policy, the agreed variables. */
static tutti_status_t claim(tt_comm_t *comm, int node_id, rank_claim_t *mine)
{
    fill_endpoint(node_id, &mine->rec.endpoint);
    /* Every rank must choose the same algorithms, so every rank must steer
     * the choice the same way: rank 0 checks. */
    char why[256];
    tutti_status_t st = tt_algo_policy_from_env(&comm->policy, why, sizeof why);
    if (st)
        return tt_comm_error_in(NULL, TT_SUB_CONFIG, st, "%s", why);
    mine->policy_hash = tt_algo_policy_hash(&comm->policy);
    agreed_t agreed[TT_MAX_AGREED];
    for (int v = 0, n = agreed_vars(agreed); v < n; v++)
        mine->agreed[v] = tt_config_table_int(agreed[v].table, agreed[v].id);
    mine->rec.listener = comm->bs.addr;
    return TUTTI_SUCCESS;
}

static void log_ready(tt_comm_t *comm, int64_t t0)
{
    uint64_t out, in;
    tt_bootstrap_bytes(&comm->bs, &out, &in);
    TT_INFO(TT_SUB_INIT,
            "rank %d of %d ready in %lld ms; set-up sent %llu bytes and received %llu (bootstrap), "
            "admitted %d connections as a root",
            comm->rank, comm->nranks, (long long)(tt_now_ms() - t0), (unsigned long long)out,
            (unsigned long long)in, comm->bs.admitted);
}

tutti_status_t tt_comm_setup(tt_comm_t *comm, int node_id, int64_t t0)
{
    int p = comm->nranks;
    rank_claim_t mine = {0};
    rank_record_t *records = calloc((size_t)p, sizeof *records);
    unsigned char(*blobs)[TT_ADDR_MAX] = calloc(TT_MAX_TRANSPORTS, TT_ADDR_MAX);
    comm->listeners = calloc((size_t)p, sizeof *comm->listeners);
    if (!records || !blobs || !comm->listeners) {
        free(records);
        free(blobs);
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d ranks", comm->rank, p);
    }
    tutti_status_t st = claim(comm, node_id, &mine);
    if (!st)
        st = tt_comm_tp_listen(comm, &mine.rec.offered, &mine.transports_hash, blobs);
    if (!st && p > 1)
        st = tt_rescue_open(comm, &mine.rec.rescue);
    if (!st)
        st = exchange(comm, &mine, records);
    if (!st)
        st = derive(comm, records);
    comm->tp_all = ~0u;
    for (int r = 0; !st && r < p; r++)
        comm->tp_all &= records[r].offered;
    if (!st)
        st = tt_comm_pairs_init(comm);
    if (!st)
        st = tt_comm_tp_connect(comm, blobs);
    tt_log_fault_mark();
    if (!st && (st = tt_bootstrap_barrier(&comm->bs)) != TUTTI_SUCCESS)
        tt_comm_context(NULL, st, "rank %d: the last set-up barrier failed", comm->rank);
    if (!st)
        log_ready(comm, t0);
    free(records);
    free(blobs);
    return st;
}
