/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf: collective bandwidth in the nccl-tests dialect. Every rank runs
 * the same sweep of sizes; rank 0 prints time, algbw, busbw and the number of
 * wrong elements for out-of-place and in-place calls. Inputs are small
 * integers, so every dtype and op has an exact expected result to check.
 */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/dtype.h"
#include "core/env_config.h"
#include "core/half.h"
#include "devmem.h"
#include "perf.h"
#include "tutti.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: tutti-perf [options]   (run one per rank: tutti-run -n 4 tutti-perf ...)\n"
                 "  -b, --minbytes SIZE   smallest size (default 32M); K/M/G suffixes\n"
                 "  -e, --maxbytes SIZE   largest size (default 32M)\n"
                 "  -f, --stepfactor F    multiply the size by F each step (default 2)\n"
                 "  -i, --stepbytes SIZE  add SIZE each step instead\n"
                 "  -n, --iters N         timed iterations per size (default 20)\n"
                 "  -w, --warmup_iters N  untimed iterations first (default 5)\n"
                 "  -c, --check 0|1       check every element against the reference (default 1)\n"
                 "  -d, --datatype T      int8 uint8 int32 uint32 int64 uint64 half|fp16 bfloat16|bf16\n"
                 "                        float|fp32 double|fp64 f8e4m3|fp8e4m3 f8e5m2|fp8e5m2\n"
                 "                        (default float)\n"
                 "  -o, --op OP           sum prod min max avg (default sum)\n"
                 "  -r, --root R          root of broadcast and reduce (default 0)\n"
                 "  -m, --memory M        host or device (GPU buffers, stream-ordered calls; default host)\n"
                 "  -C, --collective C    allreduce reducescatter allgather broadcast reduce alltoall\n"
                 "                        sendrecv, or all (default all)\n"
                 "      --csv, --json     machine-readable output instead of the table\n"
                 "      --compress SPEC   all-reduce through tutti_allreduce_compressed: topk[:DENSITY],\n"
                 "                        topk-sampled[:DENSITY], int8[:BLOCK], int4[:BLOCK], sign[:BLOCK]\n"
                 "      --no-ef           with --compress: no error feedback\n"
                 "Sizes are the full buffer: the output of allgather, the input of reducescatter.\n"
                 "busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for reducescatter, allgather\n"
                 "and alltoall, x 1 otherwise. Exit status 1 if any element was wrong.\n");
}

static double bus_factor(coll_t coll, int p)
{
    switch (coll) {
    case C_ALLREDUCE: return 2.0 * (p - 1) / p;
    case C_REDUCESCATTER:
    case C_ALLGATHER:
    case C_ALLTOALL: return (double)(p - 1) / p;
    default: return 1.0;
    }
}

typedef struct {
    double us, algbw, busbw;
    long long wrong; /* -1: not checked */
    int skipped;
    double ratio; /* --compress: dense bytes / bytes sent, on this rank */
} result_t;

static tutti_status_t measure(ctx_t *c, coll_t coll, size_t n, size_t size_bytes, int in_place, result_t *res)
{
    tutti_status_t st = TUTTI_SUCCESS;
    *res = (result_t){.wrong = -1};
    if (in_place && coll == C_SENDRECV) { /* blocking send/recv cannot swap in place */
        res->skipped = 1;
        return TUTTI_SUCCESS;
    }
    if (c->o->compress && c->ef_count != n) { /* fresh error feedback per size */
        tutti_ef_destroy(c->ef);
        st = tutti_ef_create(&c->ef, n, c->nranks);
        c->ef_count = n;
    }
    for (int i = 0; i < c->o->warmup && !st; i++)
        st = run_once(c, coll, n, in_place);
    if (!st && c->stream && devmem_sync(c->stream))
        st = TUTTI_ERR_SYSTEM;
    if (!st)
        st = tutti_barrier(c->comm, NULL);
    int64_t t0 = tt_now_ns();
    for (int i = 0; i < c->o->iters && !st; i++)
        st = run_once(c, coll, n, in_place);
    if (!st && c->stream && devmem_sync(c->stream)) /* device calls return once queued */
        st = TUTTI_ERR_SYSTEM;
    double local_us = (double)(tt_now_ns() - t0) / 1e3 / (c->o->iters > 0 ? c->o->iters : 1), us = 0;
    if (!st)
        st = tutti_allreduce(&local_us, &us, 1, TUTTI_FP64, TUTTI_MAX, c->comm, NULL);
    if (!st && c->o->compress) {
        tutti_compress_stats_t cs;
        st = tutti_compress_last_stats(c->comm, &cs);
        res->ratio = cs.bytes_sent ? (double)cs.dense_bytes_sent / (double)cs.bytes_sent : 0;
    }
    if (!st && c->o->check && !c->o->compress) { /* compressed results are approximate */
        int64_t wrong = check_once(c, coll, n, in_place, &st), total = 0;
        if (!st)
            st = tutti_allreduce(&wrong, &total, 1, TUTTI_INT64, TUTTI_SUM, c->comm, NULL);
        res->wrong = total;
    }
    if (st)
        return st;
    res->us = us;
    res->algbw = us > 0 ? (double)size_bytes / (us * 1e-6) / 1e9 : 0;
    res->busbw = res->algbw * bus_factor(coll, c->nranks);
    return TUTTI_SUCCESS;
}

static void print_header(const ctx_t *c, coll_t coll)
{
    if (c->o->json)
        return;
    if (c->o->csv) {
        printf("collective,size,count,type,redop,root,oop_time_us,oop_algbw,oop_busbw,oop_wrong,"
               "ip_time_us,ip_algbw,ip_busbw,ip_wrong%s\n",
               c->o->compress ? ",compression_ratio" : "");
        return;
    }
    printf("# tutti-perf: %s, %d ranks, %d iterations, %d warm-up, check %s\n", coll_names[coll], c->nranks,
           c->o->iters, c->o->warmup, c->o->check ? "on" : "off");
    printf("#%61s%35s\n", "out-of-place", "in-place");
    printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    if (c->o->compress)
        printf(
            "# compressed: busbw counts the dense all-reduce's bytes (effective bandwidth); the last column\n"
            "# is dense bytes / bytes sent; results are approximate, so #wrong is N/A\n");
}

static void print_row(ctx_t *c, coll_t coll, size_t size, size_t count, const result_t res[2])
{
    const char *redop =
        coll == C_ALLREDUCE || coll == C_REDUCESCATTER || coll == C_REDUCE ? tutti_op_name(c->o->op) : "none";
    int root = coll == C_BROADCAST || coll == C_REDUCE ? c->o->root : -1;
    if (c->o->json) {
        printf("%s{\"collective\":\"%s\",\"size\":%zu,\"count\":%zu,\"type\":\"%s\",\"redop\":\"%s\","
               "\"root\":%d",
               c->json_first ? "" : ",\n", coll_names[coll], size, count, tutti_dtype_name(c->o->dtype),
               redop, root);
        for (int ip = 0; ip < 2; ip++) {
            if (res[ip].skipped)
                printf(",\"%s\":null", ip ? "in_place" : "out_of_place");
            else
                printf(",\"%s\":{\"time_us\":%.3f,\"algbw\":%.4f,\"busbw\":%.4f,\"wrong\":%lld,"
                       "\"compression_ratio\":%.4f}",
                       ip ? "in_place" : "out_of_place", res[ip].us, res[ip].algbw, res[ip].busbw,
                       res[ip].wrong, res[ip].ratio);
        }
        printf("}");
        c->json_first = 0;
    } else if (c->o->csv) {
        printf("%s,%zu,%zu,%s,%s,%d", coll_names[coll], size, count, tutti_dtype_name(c->o->dtype), redop,
               root);
        for (int ip = 0; ip < 2; ip++)
            if (res[ip].skipped)
                printf(",,,,");
            else
                printf(",%.3f,%.4f,%.4f,%lld", res[ip].us, res[ip].algbw, res[ip].busbw, res[ip].wrong);
        if (c->o->compress)
            printf(",%.4f", res[0].ratio);
        printf("\n");
    } else {
        printf("  %10zu %12zu %8s %6s %5d", size, count, tutti_dtype_name(c->o->dtype), redop, root);
        for (int ip = 0; ip < 2; ip++) {
            if (res[ip].skipped) {
                printf(" %9s %7s %7s %6s", "-", "-", "-", "-");
                continue;
            }
            char wrong[24];
            if (res[ip].wrong < 0)
                snprintf(wrong, sizeof wrong, "N/A");
            else
                snprintf(wrong, sizeof wrong, "%lld", res[ip].wrong);
            printf(" %9.2f %7.3f %7.3f %6s", res[ip].us, res[ip].algbw, res[ip].busbw, wrong);
        }
        if (c->o->compress)
            printf(" %7.2f", res[0].ratio);
        printf("\n");
    }
    fflush(stdout);
}

static tutti_status_t sweep(ctx_t *c, coll_t coll)
{
    const opts_t *o = c->o;
    if (c->rank == 0)
        print_header(c, coll);
    for (uint64_t size = o->minb; size <= o->maxb;) {
        size_t total = (size_t)(size / c->elem);
        size_t n = call_count(coll, total, c->nranks);
        size_t used =
            (coll == C_REDUCESCATTER || coll == C_ALLGATHER || coll == C_ALLTOALL ? n * (size_t)c->nranks
                                                                                  : n) *
            c->elem;
        result_t res[2];
        for (int ip = 0; ip < 2; ip++) {
            tutti_status_t st = measure(c, coll, n, used, ip, &res[ip]);
            if (st) {
                fprintf(stderr, "tutti-perf: rank %d: %s failed: %s: %s\n", c->rank, coll_names[coll],
                        tutti_strerror(st), tutti_comm_last_error(c->comm));
                return st;
            }
            if (res[ip].wrong > 0)
                c->wrong_total += res[ip].wrong;
        }
        if (c->rank == 0)
            print_row(c, coll, used,
                      n * (coll == C_REDUCESCATTER || coll == C_ALLGATHER || coll == C_ALLTOALL
                               ? (size_t)c->nranks
                               : 1),
                      res);
        c->busbw_sum += res[0].busbw;
        c->busbw_n++;
        uint64_t next = o->step ? size + o->step : (uint64_t)((double)size * o->factor);
        if (next <= size)
            break;
        size = next;
    }
    return TUTTI_SUCCESS;
}

/* "topk[:DENSITY]", "topk-sampled[:DENSITY]", "int8[:BLOCK]", "int4[:BLOCK]",
 * "sign[:BLOCK]" or "none". 0, or -1 if malformed. */
static int parse_compress(const char *spec, tutti_compress_t *how)
{
    static const struct {
        const char *name;
        tutti_compress_kind_t kind;
    } kinds[] = {{"none", TUTTI_COMPRESS_NONE},         {"topk", TUTTI_COMPRESS_TOPK},
                 {"topk-sampled", TUTTI_COMPRESS_TOPK}, {"int8", TUTTI_COMPRESS_INT8},
                 {"int4", TUTTI_COMPRESS_INT4},         {"sign", TUTTI_COMPRESS_SIGN}};
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    int no_ef = how->no_error_feedback;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (strlen(kinds[k].name) != len || strncmp(spec, kinds[k].name, len) != 0)
            continue;
        *how = (tutti_compress_t){.kind = kinds[k].kind, .sampled = k == 2, .no_error_feedback = no_ef};
        if (!colon)
            return 0;
        char *end;
        double v = strtod(colon + 1, &end);
        if (*end || v <= 0)
            return -1;
        if (how->kind == TUTTI_COMPRESS_TOPK) {
            how->density = v;
            return v > 1 ? -1 : 0;
        }
        how->block = (size_t)v;
        return how->kind == TUTTI_COMPRESS_NONE ? -1 : 0;
    }
    return -1;
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    static const struct option longopts[] = {{"minbytes", required_argument, NULL, 'b'},
                                             {"maxbytes", required_argument, NULL, 'e'},
                                             {"stepfactor", required_argument, NULL, 'f'},
                                             {"stepbytes", required_argument, NULL, 'i'},
                                             {"iters", required_argument, NULL, 'n'},
                                             {"warmup_iters", required_argument, NULL, 'w'},
                                             {"check", required_argument, NULL, 'c'},
                                             {"datatype", required_argument, NULL, 'd'},
                                             {"op", required_argument, NULL, 'o'},
                                             {"root", required_argument, NULL, 'r'},
                                             {"collective", required_argument, NULL, 'C'},
                                             {"memory", required_argument, NULL, 'm'},
                                             {"csv", no_argument, NULL, 'S'},
                                             {"json", no_argument, NULL, 'J'},
                                             {"compress", required_argument, NULL, 'Z'},
                                             {"no-ef", no_argument, NULL, 'E'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    *o = (opts_t){.minb = 32 << 20,
                  .maxb = 32 << 20,
                  .factor = 2,
                  .iters = 20,
                  .warmup = 5,
                  .check = 1,
                  .dtype = TUTTI_FP32,
                  .op = TUTTI_SUM,
                  .coll = -1};
    int opt;
    while ((opt = getopt_long(argc, argv, "b:e:f:i:n:w:c:d:o:r:C:m:h", longopts, NULL)) != -1) {
        int bad = 0;
        switch (opt) {
        case 'b': bad = tt_parse_size(optarg, &o->minb); break;
        case 'e': bad = tt_parse_size(optarg, &o->maxb); break;
        case 'i': bad = tt_parse_size(optarg, &o->step); break;
        case 'f':
            o->factor = atof(optarg);
            bad = o->factor <= 1.0;
            break;
        case 'n':
            o->iters = atoi(optarg);
            bad = o->iters < 0;
            break;
        case 'w':
            o->warmup = atoi(optarg);
            bad = o->warmup < 0;
            break;
        case 'c': o->check = atoi(optarg); break;
        case 'r': o->root = atoi(optarg); break;
        case 'd': bad = tt_dtype_parse(optarg, &o->dtype); break;
        case 'o':
            bad = 1;
            for (int k = 0; k < TUTTI_NUM_OPS; k++)
                if (strcmp(optarg, tutti_op_name((tutti_op_t)k)) == 0) {
                    o->op = (tutti_op_t)k;
                    bad = 0;
                }
            break;
        case 'C':
            bad = strcmp(optarg, "all") != 0;
            o->coll = -1;
            for (int k = 0; k < C_COUNT; k++)
                if (strcmp(optarg, coll_names[k]) == 0) {
                    o->coll = k;
                    bad = 0;
                }
            break;
        case 'm':
            o->device = strcmp(optarg, "device") == 0;
            bad = !o->device && strcmp(optarg, "host") != 0;
            break;
        case 'Z':
            bad = parse_compress(optarg, &o->how);
            o->compress = 1;
            break;
        case 'E': o->how.no_error_feedback = 1; break;
        case 'S': o->csv = 1; break;
        case 'J': o->json = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
        if (bad) {
            fprintf(stderr, "tutti-perf: bad value '%s' for -%c\n", optarg, opt);
            return -1;
        }
    }
    if (o->minb > o->maxb) {
        fprintf(stderr, "tutti-perf: -b is larger than -e\n");
        return -1;
    }
    if (o->compress && ((o->coll >= 0 && o->coll != C_ALLREDUCE) ||
                        (o->dtype != TUTTI_FP32 && o->dtype != TUTTI_FP16 && o->dtype != TUTTI_BF16) ||
                        (o->op != TUTTI_SUM && o->op != TUTTI_AVG))) {
        fprintf(stderr,
                "tutti-perf: --compress runs all-reduce only, on float, half or bfloat16, sum or avg\n");
        return -1;
    }
    if (o->compress)
        o->coll = C_ALLREDUCE;
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o;
    if (parse_args(argc, argv, &o))
        return 2;
    ctx_t c = {.o = &o, .json_first = 1, .elem = tutti_dtype_size(o.dtype)};
    tutti_status_t st = tutti_comm_init_env(&c.comm, NULL);
    if (st) {
        fprintf(stderr, "tutti-perf: joining the communicator failed: %s: %s\n", tutti_strerror(st),
                tutti_comm_last_error(NULL));
        return 1;
    }
    tutti_comm_rank(c.comm, &c.rank);
    tutti_comm_size(c.comm, &c.nranks);
    if (o.root < 0 || o.root >= c.nranks) {
        fprintf(stderr, "tutti-perf: root %d is outside 0..%d\n", o.root, c.nranks - 1);
        tutti_comm_destroy(c.comm);
        return 2;
    }
    size_t buf_bytes = (size_t)o.maxb + (size_t)c.nranks * c.elem + 64;
    char why[160];
    if (o.device && devmem_open(c.rank, &c.stream, why, sizeof why)) {
        fprintf(stderr, "tutti-perf: -m device: %s\n", why);
        tutti_comm_destroy(c.comm);
        return 2;
    }
    c.buf_bytes = buf_bytes;
    c.img_send = calloc(1, buf_bytes);
    c.img_recv = calloc(1, buf_bytes);
    c.send = o.device ? devmem_alloc(buf_bytes) : c.img_send;
    c.recv = o.device ? devmem_alloc(buf_bytes) : c.img_recv;
    if (!c.img_send || !c.img_recv || !c.send || !c.recv ||
        (o.device && (devmem_to_device(c.send, c.img_send, buf_bytes, c.stream) ||
                      devmem_to_device(c.recv, c.img_recv, buf_bytes, c.stream) || devmem_sync(c.stream)))) {
        fprintf(stderr, "tutti-perf: cannot allocate 2 x %zu bytes of %s memory\n", buf_bytes,
                o.device ? "GPU" : "host");
        return 1;
    }
    if (c.rank == 0 && o.json)
        printf("[\n");
    for (int coll = 0; coll < C_COUNT && !st; coll++)
        if (o.coll < 0 || o.coll == coll)
            st = sweep(&c, (coll_t)coll);
    if (c.rank == 0 && o.json)
        printf("\n]\n");
    else if (c.rank == 0 && !o.csv && !st) {
        printf("# Out of bounds values : %lld %s\n", c.wrong_total, c.wrong_total ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g GB/s\n", c.busbw_n ? c.busbw_sum / c.busbw_n : 0.0);
    }
    if (o.device) {
        devmem_free(c.send);
        devmem_free(c.recv);
        devmem_close(c.stream);
    }
    free(c.img_send);
    free(c.img_recv);
    tutti_ef_destroy(c.ef);
    if (st) {
        tutti_comm_abort(c.comm);
        return 1;
    }
    tutti_comm_destroy(c.comm);
    return c.wrong_total ? 1 : 0;
}
