/* SPDX-License-Identifier: MIT */
/*
 * "Is this normal?": for each link, a figure the tables show beside a
 * baseline measured the same way on this machine, the fraction of it tutti
 * reached, and a one-line verdict, withheld when the machine's state makes
 * one meaningless (bw_judge.c decides). The baselines: shm, a plain copy
 * from one rank's CPUs to the other's through slots as shm's queue; tcp
 * inside a host, a plain TCP stream over loopback on the pair's CPUs; both
 * at the same size, repeated under the same rule, their median. tcp
 * between hosts: the interface's link speed from sysfs; verbs: the port's
 * rate from libibverbs.
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bw.h"
#include "bw_baseline.h"
#include "bw_ib.h"
#include "bw_judge.h"
#include "core/env_config.h"
#include "core/sock.h"
#include "transports/shm/shm.h"
#include "transports/tcp/tcp.h"

/* The link speed of the interface tcp binds to, GB/s; 0 when it reports none. */
static double nic_gbps(char *ifname, size_t len)
{
    tt_sockaddr_t addr;
    struct ifaddrs *list = NULL;
    double gbps = 0;
    snprintf(ifname, len, "?");
    if (tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), &addr) || getifaddrs(&list))
        return 0;
    for (struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != addr.u.sa.sa_family)
            continue;
        int same = addr.u.sa.sa_family == AF_INET
                       ? ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == addr.u.in4.sin_addr.s_addr
                       : memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, &addr.u.in6.sin6_addr,
                                sizeof addr.u.in6.sin6_addr) == 0;
        if (!same)
            continue;
        snprintf(ifname, len, "%s", i->ifa_name);
        char path[128];
        snprintf(path, sizeof path, "/sys/class/net/%s/speed", i->ifa_name);
        FILE *f = fopen(path, "r");
        long mbit = 0;
        if (f) {
            if (fscanf(f, "%ld", &mbit) != 1)
                mbit = 0;
            fclose(f);
        }
        gbps = mbit > 0 ? (double)mbit / 8000 : 0;
        break;
    }
    freeifaddrs(list);
    return gbps;
}

/* The baseline of tp's link between a and b at the figure's size, GB/s, and what it is. */
static double baseline(const tt_bw_job_t *job, const tt_bw_tp_t *tp, const tt_bw_reached_t *r, char *basis,
                       size_t len)
{
    const tt_bw_machine_t *m = &job->machine;
    const cpu_set_t *wr = &m->masks[r->a], *rd = &m->masks[r->b];
    int other_host = strcmp(tp->cls[r->a * tp->n + r->b], "NET") == 0;
    tt_stats_t s = {0};
    char sz[32];
    tt_bw_format_bytes(r->bytes, sz, sizeof sz);
    if (strcmp(tp->name, "shm") == 0) {
        size_t slot = (size_t)tt_config_table_int(&tt_shm_config, TT_CFG_SHM_SLOT_BYTES);
        int nslots = (int)tt_config_table_int(&tt_shm_config, TT_CFG_SHM_SLOTS);
        char kib[32];
        tt_bw_format_bytes(slot, kib, sizeof kib);
        snprintf(basis, len,
                 "a plain copy of %s messages from rank %d's CPUs to rank %d's through %d slots of %s, "
                 "as shm's queue; median of repeats",
                 sz, r->a, r->b, nslots, kib);
        return tt_bw_copy_baseline(wr, rd, r->bytes, slot, nslots, &job->o->rule, &s) ? 0 : s.median;
    }
    if (strcmp(tp->name, "tcp") == 0 && !other_host) {
        int buf = (int)tt_config_table_int(&tt_tcp_config, TT_CFG_TCP_BUF_BYTES);
        snprintf(basis, len,
                 "a plain TCP stream over loopback, sends of %s, on the CPUs of ranks %d and %d; "
                 "median of repeats",
                 sz, r->a, r->b);
        return tt_bw_tcp_baseline(wr, rd, r->bytes, buf, &job->o->rule, &s) ? 0 : s.median;
    }
    if (strcmp(tp->name, "tcp") == 0) {
        char ifname[IF_NAMESIZE + 1];
        double g = nic_gbps(ifname, sizeof ifname);
        snprintf(basis, len, g > 0 ? "%s's link speed (sysfs)" : "%s reports no link speed", ifname);
        return g;
    }
    if (strcmp(tp->name, "verbs") == 0) {
        char port[96];
        double g = tt_bw_ib_rate_gbps(port, sizeof port);
        snprintf(basis, len, "%s", port);
        return g;
    }
    snprintf(basis, len, "no baseline is known for %s", tp->name);
    return 0;
}

static const char *hint(tt_bw_verdict_t v, const tt_bw_tp_t *tp)
{
    if (v == TT_VERDICT_WITHHELD)
        return "; rerun on an idle machine, with a CPU for each rank of the pair";
    if (v != TT_VERDICT_BELOW && v != TT_VERDICT_LOW)
        return "";
    if (strcmp(tp->name, "shm") == 0)
        return "; ranks sharing a CPU or a busy machine halve it";
    if (strcmp(tp->name, "tcp") == 0)
        return "; check TUTTI_SOCKET_IFNAME, TUTTI_PIPELINE (sockets per peer) and other traffic";
    return "";
}

static void verdict_json(tt_bw_job_t *job, const tt_bw_tp_t *tp, const tt_bw_reached_t *r,
                         const tt_bw_evidence_t *e, const char *basis, tt_bw_verdict_t v, const char *why)
{
    tt_json_t *j = &job->json;
    tt_json_obj(j, NULL);
    tt_json_int(j, "a", r->a);
    tt_json_int(j, "b", r->b);
    tt_json_str(j, "class", tp->cls[r->a * tp->n + r->b]);
    tt_json_num(j, "measured_gbps", r->gbps);
    tt_json_str(j, "figure", r->from);
    tt_json_num(j, "cv", r->cv);
    tt_json_int(j, "bytes", (long long)r->bytes);
    tt_json_num(j, "expected_gbps", e->baseline > 0 ? e->baseline : 0.0 / 0.0);
    tt_json_str(j, "basis", basis);
    tt_json_num(j, "fraction", e->baseline > 0 ? r->gbps / e->baseline : 0.0 / 0.0);
    tt_json_num(j, "others_cpus", e->others_cpus >= 0 ? e->others_cpus : 0.0 / 0.0);
    tt_json_str(j, "verdict", tt_bw_verdict_name(v));
    tt_json_str(j, "why", why);
    tt_json_end(j);
}

void tt_bw_verdict(tt_bw_job_t *job, const tt_bw_tp_t *tp, const tt_bw_reached_t *r)
{
    if (job->rank != 0)
        return;
    int here_a = tt_bw_on_this_machine(job, r->a), here_b = tt_bw_on_this_machine(job, r->b);
    char basis[200], why[160];
    tt_bw_evidence_t e = {.measured = r->gbps,
                          .cv = r->cv,
                          .same_host = here_a && here_b,
                          .shared_cpu = here_a && here_b && tt_bw_shared_cpu(&job->machine, r->a, r->b),
                          .cpus = job->machine.cpus,
                          .others_cpus = here_a || here_b ? job->others_cpus : -1};
    e.baseline = baseline(job, tp, r, basis, sizeof basis);
    tt_bw_verdict_t v = tt_bw_judge(&e, why, sizeof why);
    const char *cls = tp->cls[r->a * tp->n + r->b], *name = tt_bw_verdict_name(v);
    if (job->text) {
        printf("is this normal? %s %d->%d (%s): %.2f GB/s (%s)", tp->name, r->a, r->b, cls, r->gbps, r->from);
        if (e.baseline > 0)
            printf(" = %.2f of %.2f GB/s (%s)", r->gbps / e.baseline, e.baseline, basis);
        printf(": %s%s%s%s%s%s\n", name, *why ? ": " : "", why, e.baseline > 0 ? "" : " (",
               e.baseline > 0 ? "" : basis, e.baseline > 0 ? hint(v, tp) : ")");
    }
    if (job->o->csv)
        printf("verdict,%s,,%d,%d,%s,%zu,%.6g,%.6g,%.4f,%s\n", tp->name, r->a, r->b, cls, r->bytes, r->gbps,
               e.baseline, e.baseline > 0 ? r->gbps / e.baseline : 0, name);
    if (job->o->json)
        verdict_json(job, tp, r, &e, basis, v, why);
}
