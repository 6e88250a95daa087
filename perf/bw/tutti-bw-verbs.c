/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw-verbs: write bandwidth and latency between two ranks over one
 * transport (verbs by default), per size, in the columns of perftest's
 * ib_write_bw and ib_write_lat, so a tutti link and the raw NIC can be put
 * side by side. Run two ranks on two hosts:
 *   tutti-run -n 2 --nodes 2 tutti-bw-verbs -b 2 -e 8M      (or mpirun -np 2 ...)
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bw_verbs.h"
#include "comm/comm.h"
#include "comm/connect.h"
#include "comm/handle.h"
#include "core/env_config.h"

typedef struct {
    const char *transport;
    uint64_t minb, maxb;
    double factor;
    int iters, warmup, depth, batches, gbits;
    double duration;
    tt_bwv_test_t test;
} opts_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tutti-bw-verbs [options]   (two ranks: tutti-run -n 2 --nodes 2 tutti-bw-verbs ...)\n"
            "  -t, --transport T     the connection to measure: verbs (default), tcp, shm\n"
            "  -b, --minbytes SIZE   smallest message (default 2); K/M/G suffixes\n"
            "  -e, --maxbytes SIZE   largest message (default 8M; 2..8M is ib_write_bw -a)\n"
            "  -f, --stepfactor F    multiply the size by F each step (default 2)\n"
            "  -n, --iters N         messages per batch, or round trips with --lat (default 1000)\n"
            "  -w, --warmup_iters N  untimed messages first (default 100)\n"
            "  -D, --tx-depth N      messages in flight, as perftest's -t (default 128)\n"
            "  -B, --batches N       timed batches per size; BW peak is the best (default 5)\n"
            "      --duration S      about S seconds per size, batches sized to the link, instead of\n"
            "                        -n and -w (perftest's -D; for slow links)\n"
            "      --bidir           both ways at once, both directions counted (ib_write_bw -b)\n"
            "      --lat             one-way latency from round trips (ib_write_lat)\n"
            "      --report-gbits    Gb/s instead of MiB/s (perftest's MB/sec is MiB/s)\n"
            "  -h, --help            this help\n");
}

static int parse(int argc, char **argv, opts_t *o)
{
    static const struct option longs[] = {{"transport", required_argument, 0, 't'},
                                          {"minbytes", required_argument, 0, 'b'},
                                          {"maxbytes", required_argument, 0, 'e'},
                                          {"stepfactor", required_argument, 0, 'f'},
                                          {"iters", required_argument, 0, 'n'},
                                          {"warmup_iters", required_argument, 0, 'w'},
                                          {"tx-depth", required_argument, 0, 'D'},
                                          {"batches", required_argument, 0, 'B'},
                                          {"duration", required_argument, 0, 'U'},
                                          {"bidir", no_argument, 0, 'I'},
                                          {"lat", no_argument, 0, 'L'},
                                          {"report-gbits", no_argument, 0, 'G'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    *o = (opts_t){"verbs", 2, 8 << 20, 2, 1000, 100, 128, 5, 0, 0, TT_BWV_BW};
    int opt;
    char *end;
    while ((opt = getopt_long(argc, argv, "t:b:e:f:n:w:D:B:h", longs, NULL)) != -1) {
        switch (opt) {
        case 't': o->transport = optarg; break;
        case 'b':
            if (tt_parse_size(optarg, &o->minb))
                return -1;
            break;
        case 'e':
            if (tt_parse_size(optarg, &o->maxb))
                return -1;
            break;
        case 'f': o->factor = atof(optarg); break;
        case 'n': o->iters = atoi(optarg); break;
        case 'w': o->warmup = atoi(optarg); break;
        case 'D': o->depth = atoi(optarg); break;
        case 'B': o->batches = atoi(optarg); break;
        case 'U':
            o->duration = strtod(optarg, &end);
            if (end == optarg || *end || !(o->duration > 0 && o->duration <= 3600))
                return -1;
            break;
        case 'I': o->test = TT_BWV_BIBW; break;
        case 'L': o->test = TT_BWV_LAT; break;
        case 'G': o->gbits = 1; break;
        case 'h': usage(stdout); exit(0);
        default: return -1;
        }
    }
    if (optind != argc || o->minb < 1 || o->maxb < o->minb || o->factor <= 1 || o->iters < 1 ||
        o->warmup < 0 || o->depth < 1 || o->batches < 1)
        return -1;
    return 0;
}

/* The named transport alone, so the connection is the one asked for. */
static int check_transport(const char *name)
{
    for (int i = 0; tt_transports[i]; i++)
        if (strcmp(tt_transports[i]->name, name) == 0) {
            char why[256];
            if (tt_transports[i]->probe && !tt_transports[i]->probe(why, sizeof why)) {
                fprintf(stderr, "tutti-bw-verbs: %s is not offered here: %s\n", name, why);
                return -1;
            }
            return 0;
        }
    fprintf(stderr, "tutti-bw-verbs: this build has no transport '%s'\n", name);
    return -1;
}

static void banner(const opts_t *o, const tt_comm_t *comm, int peer)
{
    static const char *const what[] = {"write bandwidth", "bidirectional write bandwidth", "write latency"};
    printf("------------------------------------------------------------------------------------------\n");
    printf("  tutti-bw-verbs: %s over tutti's %s transport, rank 0 <-> rank %d\n", what[o->test],
           comm->peers[peer].ops->name, peer);
    printf("  %d slices in flight per peer (TUTTI_PIPELINE), tx depth %d, %s\n", comm->nchannels, o->depth,
           o->test == TT_BWV_LAT ? "latency is half the round trip" : "BW peak: best of the batches");
    if (o->duration > 0)
        printf("  about %g s per size (--duration), batches sized to the link\n", o->duration);
    printf("------------------------------------------------------------------------------------------\n");
    tt_bwv_print_header(stdout, o->test, o->gbits);
    fflush(stdout); /* a slow link's first row may be a while */
}

int main(int argc, char **argv)
{
    opts_t o;
    if (parse(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    if (check_transport(o.transport))
        return 2;
    setenv("TUTTI_TRANSPORTS", o.transport, 1);
    tutti_comm_t handle;
    tutti_status_t st = tutti_comm_init_env(&handle, NULL);
    if (st) {
        fprintf(stderr, "tutti-bw-verbs: joining failed: %s\n", tutti_comm_last_error(NULL));
        return 1;
    }
    tt_comm_t *comm = tt_comm_lookup(handle, NULL); /* the connection is measured below tutti's calls */
    if (comm->nranks != 2) {
        fprintf(stderr, "tutti-bw-verbs: needs exactly 2 ranks, not %d\n", comm->nranks);
        tutti_comm_abort(handle);
        return 2;
    }
    int peer = 1 - comm->rank;
    if (tt_comm_connect(comm, &peer, 1, UINT64_MAX)) {
        fprintf(stderr, "tutti-bw-verbs: connecting to rank %d failed: %s\n", peer,
                tutti_comm_last_error(handle));
        tutti_comm_abort(handle);
        return 1;
    }
    tt_bwv_link_t link = {comm->peers[peer].ops, comm->peers[peer].conn, comm->nchannels, comm->timeout_ms,
                          0};
    char *sbuf = aligned_alloc(4096, (o.maxb + 4095) / 4096 * 4096);
    char *rbuf = aligned_alloc(4096, (o.maxb + 4095) / 4096 * 4096);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "tutti-bw-verbs: no memory for %llu-byte buffers\n", (unsigned long long)o.maxb);
        return 1;
    }
    memset(sbuf, 0x5a, o.maxb);
    if (comm->rank == 0)
        banner(&o, comm, peer);
    for (double s = (double)o.minb; s <= (double)o.maxb && !st; s = ceil(s * o.factor)) {
        tt_bwv_params_t p = {(size_t)s, o.iters, o.warmup, o.depth, o.batches, comm->rank == 0, o.duration};
        tt_bwv_result_t r;
        st = tt_bwv_measure(&link, o.test, &p, sbuf, rbuf, &r);
        if (!st && comm->rank == 0) {
            tt_bwv_print_row(stdout, o.test, &p, &r, o.gbits);
            fflush(stdout);
        }
    }
    if (comm->rank == 0)
        printf(
            "------------------------------------------------------------------------------------------\n");
    free(sbuf);
    free(rbuf);
    if (st) {
        tutti_comm_abort(handle);
        return 1;
    }
    return tutti_comm_destroy(handle) ? 1 : 0;
}
