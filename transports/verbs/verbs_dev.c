/* SPDX-License-Identifier: MIT */
/*
 * Which RDMA ports a rank offers: the devices and ports TUTTI_IB_HCA allows
 * that are up, InfiniBand before RoCE (every rank of a job then agrees),
 * the one nearest to the rank's GPU, else to its CPU's NUMA node (tutti's
 * topology) first, ranks of one host spread over equally near ones, then
 * the others (a peer that the first cannot reach may meet another); for
 * RoCE, each port's GID: TUTTI_IB_GID_INDEX, else a RoCE v2 IPv4-mapped one.
 * A port's protection domain and registration cache are made when a
 * connection first uses it.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env_config.h"
#include "core/log.h"
#include "core/try.h"
#include "topo/topo.h"
#include "transports/verbs/verbs.h"

#define MAX_CANDS 32

int tt_verbs_hca_parse(const char *text, tt_verbs_hca_t *out)
{
    memset(out, 0, sizeof *out);
    while (*text == '^' || *text == '=') {
        out->exclude |= *text == '^';
        out->exact |= *text == '=';
        text++;
    }
    char list[512];
    snprintf(list, sizeof list, "%s", text);
    char *save = NULL;
    for (char *e = strtok_r(list, ", ", &save); e; e = strtok_r(NULL, ", ", &save)) {
        if (out->n == (int)(sizeof out->e / sizeof out->e[0]))
            return -1;
        char *colon = strchr(e, ':');
        out->e[out->n].port = 0;
        if (colon) {
            *colon = '\0';
            char *end;
            long port = strtol(colon + 1, &end, 10);
            if (*end || port < 1 || port > 255)
                return -1;
            out->e[out->n].port = (int)port;
        }
        if (!*e || strlen(e) >= sizeof out->e[0].name)
            return -1;
        snprintf(out->e[out->n].name, sizeof out->e[0].name, "%s", e);
        out->n++;
    }
    return 0;
}

int tt_verbs_hca_match(const tt_verbs_hca_t *f, const char *name, int port)
{
    if (f->n == 0)
        return 1;
    int listed = 0;
    for (int i = 0; i < f->n && !listed; i++) {
        int same = f->exact ? strcmp(name, f->e[i].name) == 0
                            : strncmp(name, f->e[i].name, strlen(f->e[i].name)) == 0;
        listed = same && (f->e[i].port == 0 || f->e[i].port == port);
    }
    return f->exclude ? !listed : listed;
}

int tt_verbs_pick_gid(const tt_verbs_gid_t *tab, int n)
{
    static const unsigned char zero[16];
    int best = -1, best_score = -1;
    for (int i = 0; i < n; i++) {
        const unsigned char *g = tab[i].gid.raw;
        if (memcmp(g, zero, 16) == 0)
            continue;
        int ipv4 = memcmp(g, zero, 10) == 0 && g[10] == 0xff && g[11] == 0xff;
        int link_local = g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
        int score = tab[i].type == IBV_GID_TYPE_ROCE_V2 ? (ipv4 ? 4 : !link_local ? 3 : 2) : ipv4 ? 1 : 0;
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best < 0 ? 0 : best;
}

/* The rank's index among the ranks of its host. */
static int local_rank(const tt_tp_env_t *env)
{
    int n = 0;
    for (int r = 0; r < env->rank; r++)
        n += env->endpoints[r].host_id == env->endpoints[env->rank].host_id;
    return n;
}

int tt_verbs_pick_nearest(const tt_topo_t *t, const char *const *names, int n, int numa, int lrank)
{
    int score[MAX_CANDS], best = 1 << 30, nbest = 0;
    int gpu = t && t->ngpus > 0 ? lrank % t->ngpus : -1; /* GPUs come first in devs */
    for (int i = 0; i < n && i < MAX_CANDS; i++) {
        int nic = -1;
        for (int d = 0; t && d < t->ndevs && nic < 0; d++)
            if (t->devs[d].kind == TT_DEV_NIC && strcmp(t->devs[d].os_name, names[i]) == 0)
                nic = d;
        int links;
        if (nic < 0)
            score[i] = TT_PATH_SYS + 2; /* not in the topology: no better than far */
        else if (gpu >= 0)
            score[i] = (int)tt_topo_path(t, gpu, nic, &links);
        else
            score[i] = numa >= 0 && t->devs[nic].numa == numa ? TT_PATH_NODE : TT_PATH_SYS + 1;
        if (score[i] < best)
            best = score[i];
    }
    for (int i = 0; i < n && i < MAX_CANDS; i++)
        nbest += score[i] == best;
    /* Ranks with the same nearest set take turns, so several ranks of a host
     * spread over equally near ports, and so do several ranks of one GPU. */
    int want = (lrank + (gpu >= 0 ? lrank / t->ngpus : 0)) % (nbest ? nbest : 1);
    for (int i = 0; i < n && i < MAX_CANDS; i++)
        if (score[i] == best && want-- == 0)
            return i;
    return 0;
}

typedef struct {
    struct ibv_context *ctx;
    int port, roce;
    char name[64];
} cand_t;

/* The machine's topology, read once per process (it does not change). */
static const tt_topo_t *machine_topo(void)
{
    static tt_topo_t *t;
    static int tried;
    if (!tried) {
        tried = 1;
        char err[128];
        t = calloc(1, sizeof *t);
        if (t && tt_topo_load_local(t, err, sizeof err)) {
            TT_DEBUG(TT_SUB_NET, "verbs: no topology for the NIC choice: %s", err);
            free(t);
            t = NULL;
        }
    }
    return t;
}

/* Every active port the filter allows; says in why what it saw otherwise. */
static int list_ports(const tt_ibv_t *ibv, struct ibv_device **devs, int ndev, const tt_verbs_hca_t *f,
                      cand_t *out, char *why, size_t len)
{
    int n = 0;
    size_t used = 0;
    why[0] = '\0';
    for (int d = 0; d < ndev; d++) {
        const char *name = ibv->get_device_name(devs[d]);
        struct ibv_context *ctx = NULL;
        struct ibv_device_attr da;
        int named = f->n == 0 || f->exclude;
        for (int i = 0; i < f->n && !named; i++)
            named = tt_verbs_hca_match(f, name, f->e[i].port);
        if (!named)
            continue; /* not worth opening */
        if (!(ctx = ibv->open_device(devs[d])) || ibv->query_device(ctx, &da)) {
            used += (size_t)snprintf(why + used, used < len ? len - used : 0, "%s: cannot open; ", name);
            if (ctx)
                ibv->close_device(ctx);
            continue;
        }
        int kept = 0;
        for (int p = 1; p <= da.phys_port_cnt && n < MAX_CANDS; p++) {
            struct ibv_port_attr pa;
            if (!tt_verbs_hca_match(f, name, p) || tt_ibv_query_port(ibv, ctx, (uint8_t)p, &pa))
                continue;
            if (pa.state != IBV_PORT_ACTIVE ||
                (pa.link_layer != IBV_LINK_LAYER_INFINIBAND && pa.link_layer != IBV_LINK_LAYER_ETHERNET)) {
                used +=
                    (size_t)snprintf(why + used, used < len ? len - used : 0, "%s port %d %s; ", name, p,
                                     pa.state != IBV_PORT_ACTIVE ? "not active" : "of an unknown link layer");
                continue;
            }
            out[n] = (cand_t){ctx, p, pa.link_layer == IBV_LINK_LAYER_ETHERNET, ""};
            snprintf(out[n].name, sizeof out[n].name, "%s", name);
            n++;
            kept = 1;
        }
        if (!kept)
            ibv->close_device(ctx);
    }
    return n;
}

/* Reads the port's GID table (types from _ibv_query_gid_ex or sysfs). */
static int read_gids(const tt_ibv_t *ibv, const tt_verbs_port_t *p, int n, tt_verbs_gid_t *tab)
{
    for (int i = 0; i < n; i++) {
        struct ibv_gid_entry e;
        tab[i].type = -1;
        if (ibv->query_gid_ex &&
            ibv->query_gid_ex(p->ctx, (uint32_t)p->port, (uint32_t)i, &e, 0, sizeof e) == 0) {
            tab[i].gid = e.gid;
            tab[i].type = (int)e.gid_type;
            continue;
        }
        if (ibv->query_gid(p->ctx, (uint8_t)p->port, i, &tab[i].gid))
            memset(&tab[i].gid, 0, sizeof tab[i].gid);
        char path[160], text[32] = "";
        snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d", p->dev, p->port,
                 i);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(text, sizeof text, f))
                tab[i].type = strstr(text, "v2") ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
            fclose(f);
        }
    }
    return n;
}

static tutti_status_t choose_gid(const tt_ibv_t *ibv, tt_verbs_port_t *p, int tbl_len, char *why, size_t len)
{
    int64_t want = tt_config_table_int(&tt_verbs_config, TT_CFG_IB_GID_INDEX);
    p->gid_index = -1;
    if (want < 0 && !p->roce)
        return TUTTI_SUCCESS; /* InfiniBand inside a subnet routes by LID */
    if (want < 0) {
        tt_verbs_gid_t tab[256];
        int n = read_gids(ibv, p, tbl_len < 256 ? tbl_len : 256, tab);
        want = tt_verbs_pick_gid(tab, n);
    }
    static const union ibv_gid zero;
    if (want >= tbl_len || ibv->query_gid(p->ctx, (uint8_t)p->port, (int)want, &p->gid) ||
        memcmp(&p->gid, &zero, sizeof zero) == 0) {
        snprintf(why, len, "%s port %d has no GID at index %lld (TUTTI_IB_GID_INDEX)", p->dev, p->port,
                 (long long)want);
        return TUTTI_ERR_CONFIG;
    }
    p->gid_index = (int)want;
    return TUTTI_SUCCESS;
}

/* The IPv4 network of a RoCE GID, from the interface that holds its
 * address (unknown: 0 bits), so ranks can try ports on one subnet first. */
static void gid_subnet(tt_verbs_port_t *p)
{
    static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    struct ifaddrs *list;
    uint32_t addr;
    p->subnet_bits = 0;
    if (!p->roce || memcmp(p->gid.raw, v4mapped, sizeof v4mapped) || getifaddrs(&list))
        return;
    memcpy(&addr, p->gid.raw + 12, sizeof addr);
    for (struct ifaddrs *ifa = list; ifa && !p->subnet_bits; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || !ifa->ifa_netmask || ifa->ifa_addr->sa_family != AF_INET ||
            ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr.s_addr != addr)
            continue;
        uint32_t mask = ntohl(((struct sockaddr_in *)ifa->ifa_netmask)->sin_addr.s_addr);
        p->subnet = ntohl(addr) & mask;
        p->subnet_bits = __builtin_popcount(mask);
    }
    freeifaddrs(list);
}

static tutti_status_t open_chosen(const tt_ibv_t *ibv, const cand_t *c, tt_verbs_port_t *out, char *why,
                                  size_t len)
{
    struct ibv_port_attr pa;
    struct ibv_device_attr da;
    memset(out, 0, sizeof *out);
    out->ctx = c->ctx;
    out->port = c->port;
    out->roce = c->roce;
    snprintf(out->dev, sizeof out->dev, "%s", c->name);
    if (tt_ibv_query_port(ibv, c->ctx, (uint8_t)c->port, &pa) || ibv->query_device(c->ctx, &da)) {
        snprintf(why, len, "%s port %d: query failed", c->name, c->port);
        return TUTTI_ERR_SYSTEM;
    }
    out->lid = pa.lid;
    out->mtu = pa.active_mtu;
    out->max_qp_wr = da.max_qp_wr;
    out->max_sge = da.max_sge;
    TT_TRY(choose_gid(ibv, out, pa.gid_tbl_len, why, len));
    gid_subnet(out);
    return TUTTI_SUCCESS;
}

/* Each device context closes with the first entry of out that uses it;
 * those of no entry close now (all of them with n 0). */
static void keep_contexts(const tt_ibv_t *ibv, const cand_t *cands, int ncands, tt_verbs_dev_t *out, int n)
{
    for (int i = 0; i < ncands; i++) {
        int seen = 0, user = -1;
        for (int j = 0; j < i; j++)
            seen |= cands[j].ctx == cands[i].ctx;
        for (int k = 0; k < n && user < 0; k++)
            if (out[k].port.ctx == cands[i].ctx)
                user = k;
        if (!seen && user >= 0)
            out[user].owns_ctx = 1;
        else if (!seen)
            ibv->close_device(cands[i].ctx);
    }
}

/* The candidates of one link layer, InfiniBand where there is any, the
 * preferred first; returns how many. */
static int order_ports(const tt_tp_env_t *env, const cand_t *cands, int n, int *order)
{
    const char *names[MAX_CANDS];
    int idx[MAX_CANDS] = {0}, m = 0, want_roce = 1;
    for (int i = 0; i < n; i++)
        want_roce &= cands[i].roce;
    for (int i = 0; i < n; i++)
        if (cands[i].roce == want_roce) {
            names[m] = cands[i].name;
            idx[m++] = i;
        }
    int numa = (int)(env->endpoints[env->rank].place >> 32);
    int pick = m > 1 ? tt_verbs_pick_nearest(machine_topo(), names, m, numa, local_rank(env)) : 0;
    int k = 0;
    order[k++] = idx[pick];
    for (int j = 0; j < m; j++)
        if (j != pick)
            order[k++] = idx[j];
    return k;
}

tutti_status_t tt_verbs_open_ports(const tt_ibv_t *ibv, const tt_tp_env_t *env, tt_verbs_dev_t *out,
                                   int *nout, char *why, size_t len)
{
    tt_verbs_hca_t filter;
    *nout = 0;
    if (tt_verbs_hca_parse(tt_config_table_str(&tt_verbs_config, TT_CFG_IB_HCA), &filter)) {
        snprintf(why, len, "TUTTI_IB_HCA='%s' is not a list of name[:port]",
                 tt_config_table_str(&tt_verbs_config, TT_CFG_IB_HCA));
        return TUTTI_ERR_CONFIG;
    }
    int ndev = 0;
    struct ibv_device **devs = ibv->get_device_list(&ndev);
    if (!devs || ndev == 0) {
        snprintf(why, len, "no RDMA device (libibverbs lists none)");
        if (devs)
            ibv->free_device_list(devs);
        return TUTTI_ERR_UNSUPPORTED;
    }
    cand_t cands[MAX_CANDS];
    char seen[TT_VERBS_WHY];
    int n = list_ports(ibv, devs, ndev, &filter, cands, seen, sizeof seen);
    ibv->free_device_list(devs);
    if (n == 0) {
        snprintf(why, len, "no active RDMA port%s%s%s",
                 *tt_config_table_str(&tt_verbs_config, TT_CFG_IB_HCA) ? " in TUTTI_IB_HCA" : "",
                 *seen ? ": " : "", seen);
        return TUTTI_ERR_UNSUPPORTED;
    }
    int order[MAX_CANDS], m = order_ports(env, cands, n, order);
    tutti_status_t st = TUTTI_SUCCESS;
    for (int o = 0; o < m && *nout < TT_VERBS_MAX_PORTS && !st; o++) {
        char err[TT_VERBS_WHY];
        tt_verbs_dev_t *d = &out[*nout];
        memset(d, 0, sizeof *d);
        tutti_status_t one = open_chosen(ibv, &cands[order[o]], &d->port, err, sizeof err);
        if (one && o == 0) { /* the preferred port must work: its error is the answer */
            snprintf(why, len, "%s", err);
            st = one;
        } else if (one) {
            TT_DEBUG(TT_SUB_NET, "verbs: not offering %s port %d: %s", cands[order[o]].name,
                     cands[order[o]].port, err);
        } else {
            (*nout)++;
        }
    }
    if (st)
        *nout = 0;
    keep_contexts(ibv, cands, n, out, *nout);
    return st;
}

int tt_verbs_probe(const tt_ibv_t *ibv, char *why, size_t len)
{
    tt_verbs_hca_t filter;
    int ndev = 0;
    if (tt_verbs_hca_parse(tt_config_table_str(&tt_verbs_config, TT_CFG_IB_HCA), &filter)) {
        snprintf(why, len, "TUTTI_IB_HCA is not a list of name[:port]");
        return 0;
    }
    struct ibv_device **devs = ibv->get_device_list(&ndev);
    if (!devs || ndev == 0) {
        snprintf(why, len, "no RDMA device (libibverbs lists none)");
        if (devs)
            ibv->free_device_list(devs);
        return 0;
    }
    cand_t cands[MAX_CANDS];
    char seen[TT_VERBS_WHY];
    int n = list_ports(ibv, devs, ndev, &filter, cands, seen, sizeof seen);
    ibv->free_device_list(devs);
    size_t used = 0;
    why[0] = '\0';
    for (int i = 0; i < n; i++) {
        /* Appended to "offered here" by tutti-info -l. */
        used += (size_t)snprintf(why + used, used < len ? len - used : 0, "%s%s port %d %s%s",
                                 i ? ", " : " (", cands[i].name, cands[i].port,
                                 cands[i].roce ? "RoCE" : "InfiniBand", i + 1 == n ? ")" : "");
        int shared = 0;
        for (int j = 0; j < i; j++)
            shared |= cands[j].ctx == cands[i].ctx;
        if (!shared)
            ibv->close_device(cands[i].ctx);
    }
    if (n == 0)
        snprintf(why, len, "no active RDMA port%s%s", *seen ? ": " : "", seen);
    return n > 0;
}

/* Under ctx->lock: the accepting thread and the main thread may each
 * bring a pair up on a port not used before. */
static tutti_status_t dev_ready_locked(tt_verbs_ctx_t *ctx, tt_verbs_dev_t *dev, char *why, size_t len)
{
    if (dev->cache)
        return TUTTI_SUCCESS;
    if (!dev->pd)
        dev->pd = ctx->ibv->alloc_pd(dev->port.ctx);
    dev->cache = dev->pd ? tt_verbs_cache_new(ctx->ibv, dev->pd,
                                              tt_config_table_int(&tt_verbs_config, TT_CFG_IB_REG_CACHE) != 0)
                         : NULL;
    if (!dev->cache) {
        snprintf(why, len, "%s: allocating a protection domain failed", dev->port.dev);
        return TUTTI_ERR_SYSTEM;
    }
    tt_verbs_cache_set_gdr(dev->cache, ctx->gdr);
    return TUTTI_SUCCESS;
}

tutti_status_t tt_verbs_dev_ready(tt_verbs_ctx_t *ctx, tt_verbs_dev_t *dev, char *why, size_t len)
{
    pthread_mutex_lock(&ctx->lock);
    tutti_status_t st = dev_ready_locked(ctx, dev, why, len);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}
