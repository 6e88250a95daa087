/* SPDX-License-Identifier: MIT */
/*
 * "Is this normal?": for each link, the peak one could expect from what is
 * detected or measured on this machine, the fraction of it tutti reached,
 * and a one-line verdict. The peaks: shm, one CPU's memcpy (each side of
 * the pair copies once, both at once); tcp inside a host, a plain TCP
 * stream over loopback measured here; tcp between hosts, the interface's
 * link speed from sysfs; verbs, the port's rate from libibverbs.
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bw.h"
#include "bw_ib.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "core/sock.h"
#include "transports/tcp/tcp.h"

#define STREAM_SECONDS 0.3
#define STREAM_CHUNK ((size_t)4 << 20)

typedef struct {
    int fd;
    char *buf;
    int64_t end_ns;
    size_t moved;
} stream_end_t;

static void *writer(void *arg)
{
    stream_end_t *w = arg;
    while (tt_now_ns() < w->end_ns) {
        ssize_t n = send(w->fd, w->buf, STREAM_CHUNK, 0);
        if (n <= 0)
            break;
        w->moved += (size_t)n;
    }
    shutdown(w->fd, SHUT_WR);
    return NULL;
}

/* One plain TCP stream over loopback, writer and reader threads, GB/s; 0 on failure. */
static double tcp_loopback_gbps(void)
{
    tt_sockaddr_t addr;
    int lfd = -1, a = -1, b = -1;
    double gbps = 0;
    if (tt_sock_parse_addr("127.0.0.1:0", &addr) || tt_sock_listen(&addr, &lfd))
        return 0;
    int64_t deadline = tt_now_ms() + 5000;
    if (tt_sock_connect(&addr, deadline, &a) || tt_sock_accept(lfd, deadline, &b))
        goto out;
    int bufbytes = (int)tt_config_table_int(&tt_tcp_config, TT_CFG_TCP_BUF_BYTES);
    tt_sock_tune(a, bufbytes);
    tt_sock_tune(b, bufbytes);
    stream_end_t w = {.fd = a, .buf = calloc(1, STREAM_CHUNK)};
    char *rbuf = calloc(1, STREAM_CHUNK);
    pthread_t t;
    if (!w.buf || !rbuf) {
        free(w.buf);
        free(rbuf);
        goto out;
    }
    int64_t t0 = tt_now_ns();
    w.end_ns = t0 + (int64_t)(STREAM_SECONDS * 1e9);
    if (pthread_create(&t, NULL, writer, &w) == 0) {
        size_t got = 0;
        for (ssize_t n; (n = recv(b, rbuf, STREAM_CHUNK, 0)) > 0;)
            got += (size_t)n;
        pthread_join(t, NULL);
        gbps = (double)got / (double)(tt_now_ns() - t0);
    }
    free(w.buf);
    free(rbuf);
out:
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    close(lfd);
    return gbps;
}

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

/* The expected peak of tp's link between a and b, GB/s, and what it rests on. */
static double expected_peak(const tt_bw_tp_t *tp, int a, int b, size_t at_bytes, char *basis, size_t len)
{
    const char *cls = tp->cls[a * tp->n + b];
    int other_host = strcmp(cls, "NET") == 0;
    if (strcmp(tp->name, "shm") == 0) {
        /* At the same size: small messages copy within the caches, as memcpy does. */
        snprintf(basis, len, "one CPU's memcpy of that size, measured; each side copies once, both at once");
        return tt_bw_memcpy_gbps(at_bytes);
    }
    if (strcmp(tp->name, "tcp") == 0 && !other_host) {
        static double loop = -1; /* measured once per run */
        if (loop < 0)
            loop = tcp_loopback_gbps();
        snprintf(basis, len, "a plain TCP stream over loopback, measured");
        return loop;
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
    snprintf(basis, len, "no expected peak is known for %s", tp->name);
    return 0;
}

static const char *judge(double fraction, const char **hint, const tt_bw_tp_t *tp)
{
    *hint = "";
    if (fraction >= 0.75)
        return "normal";
    if (strcmp(tp->name, "shm") == 0)
        *hint = "; ranks sharing a CPU or a busy machine halve it";
    else if (strcmp(tp->name, "tcp") == 0)
        *hint = "; check TUTTI_SOCKET_IFNAME, TUTTI_PIPELINE (sockets per peer) and other traffic";
    return fraction >= 0.4 ? "below the usual" : "low";
}

void tt_bw_verdict(tt_bw_job_t *job, const tt_bw_tp_t *tp, int a, int b, double measured, size_t at_bytes)
{
    if (job->rank != 0)
        return;
    char basis[160], sz[32];
    double peak = expected_peak(tp, a, b, at_bytes, basis, sizeof basis);
    double fraction = peak > 0 ? measured / peak : 0;
    const char *hint = "", *verdict = peak > 0 ? judge(fraction, &hint, tp) : "unknown";
    if (peak <= 0)
        hint = "";
    tt_bw_format_bytes(at_bytes, sz, sizeof sz);
    if (job->text) {
        if (peak > 0)
            printf("is this normal? %s %d->%d (%s): %.2f GB/s at %s = %.2f of %.2f GB/s (%s): %s%s\n",
                   tp->name, a, b, tp->cls[a * tp->n + b], measured, sz, fraction, peak, basis, verdict,
                   hint);
        else
            printf("is this normal? %s %d->%d (%s): %.2f GB/s at %s; %s, so no verdict\n", tp->name, a, b,
                   tp->cls[a * tp->n + b], measured, sz, basis);
    }
    if (job->o->csv)
        printf("verdict,%s,,%d,%d,%s,%zu,%.6g,%.6g,%.4f,%s\n", tp->name, a, b, tp->cls[a * tp->n + b],
               at_bytes, measured, peak, fraction, verdict);
    if (job->o->json) {
        tt_json_t *j = &job->json;
        tt_json_obj(j, NULL);
        tt_json_int(j, "a", a);
        tt_json_int(j, "b", b);
        tt_json_str(j, "class", tp->cls[a * tp->n + b]);
        tt_json_num(j, "measured_gbps", measured);
        tt_json_int(j, "bytes", (long long)at_bytes);
        tt_json_num(j, "expected_gbps", peak > 0 ? peak : 0.0 / 0.0);
        tt_json_str(j, "basis", basis);
        tt_json_num(j, "fraction", peak > 0 ? fraction : 0.0 / 0.0);
        tt_json_str(j, "verdict", verdict);
        tt_json_end(j);
    }
}
