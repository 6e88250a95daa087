/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf: collective bandwidth in the nccl-tests dialect. Every rank runs
 * the same sweep of sizes (for each datatype, op and root asked for); rank 0
 * prints time, algbw, busbw and the number of wrong elements for
 * out-of-place and in-place calls, with the algorithm the tuner picked and
 * the time its cost model predicted. Started as all_reduce_perf,
 * all_gather_perf, ... it runs that collective.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "devmem.h"
#include "perf.h"
#include "tune/cost.h"
#include "tune/tuner.h"

/* The call's count for a buffer of size bytes. */
static size_t call_count(const perf_ctx_t *c, tt_coll_t coll, uint64_t size)
{
    size_t total = (size_t)(size / c->d.elem);
    return tt_coll_count_per_rank(coll) ? total / (size_t)c->nranks : total;
}

/* What the library will run for this call, and the cost model's time for it. */
static void choice(perf_ctx_t *c, tt_coll_t coll, size_t count, perf_row_t *row)
{
    row->algorithm = "-";
    row->predicted_us = -1;
    if (c->o->compress) {
        row->algorithm = "compressed";
        return;
    }
    tt_comm_t *in = tt_comm_lookup(c->comm, NULL); /* the communicator behind the handle: its tuner */
    tt_coll_args_t args = {.coll = coll,
                           .nranks = c->nranks,
                           .root = coll == TT_COLL_SEND ? (c->rank + 1) % c->nranks : c->d.root,
                           .count = count,
                           .hosts = &in->hosts};
    size_t bytes = count * c->d.elem * (tt_coll_count_per_rank(coll) ? (size_t)c->nranks : 1);
    tt_tuned_t t = tt_algo_choose(&in->policy, &args, bytes, c->d.elem);
    if (!t.algo)
        return;
    row->algorithm = t.algo->name;
    int nslices = tt_tuner_slices(tt_tuner_chunk_bytes(&args, c->d.elem), t.slice_bytes);
    const tt_cost_model_t *m = &in->policy.tuner.model;
    double s = tt_cost_predict(m, t.algo, &args, c->d.elem, nslices);
    row->predicted_us = s < 0 ? -1 : s * tt_cost_fix_factor(&m->fix, t.algo->name, &args, bytes) * 1e6;
}

static uint64_t next_size(const perf_opts_t *o, uint64_t size)
{
    uint64_t next = o->step ? size + o->step : (uint64_t)((double)size * o->factor);
    return next > size ? next : UINT64_MAX; /* no progress: the end */
}

/* "8..2K direct; 4K..8K recursive_doubling; 16K..32M ring" for the sweep's sizes. */
static void algorithm_ranges(perf_ctx_t *c, tt_coll_t coll, char *out, size_t len)
{
    const char *cur = NULL;
    uint64_t from = 0, last = 0;
    size_t used = 0;
    out[0] = '\0';
    for (uint64_t size = c->o->minb;; size = next_size(c->o, size)) {
        int done = size > c->o->maxb;
        perf_row_t row;
        if (!done)
            choice(c, coll, call_count(c, coll, size), &row);
        if (cur && (done || strcmp(row.algorithm, cur) != 0) && used < len)
            used += (size_t)snprintf(out + used, len - used, "%s%llu..%llu B %s", used ? "; " : "",
                                     (unsigned long long)from, (unsigned long long)last, cur);
        if (done)
            break;
        if (!cur || strcmp(row.algorithm, cur) != 0)
            from = size, cur = row.algorithm;
        last = size;
    }
}

static tutti_status_t sweep(perf_ctx_t *c, tt_coll_t coll, int first)
{
    const perf_opts_t *o = c->o;
    char ranges[512];
    algorithm_ranges(c, coll, ranges, sizeof ranges);
    perf_print_table_head(&c->out, coll, ranges, first);
    for (uint64_t size = o->minb; size <= o->maxb; size = next_size(o, size)) {
        size_t n = call_count(c, coll, size);
        size_t used = (tt_coll_count_per_rank(coll) ? n * (size_t)c->nranks : n) * c->d.elem;
        perf_result_t res[2];
        for (int ip = 0; ip < 2; ip++) {
            tutti_status_t st = perf_measure(c, coll, n, used, ip, &res[ip]);
            if (st) {
                fprintf(stderr, "%s: rank %d: %s failed: %s: %s\n", o->program, c->rank,
                        perf_coll_names[coll], tutti_strerror(st), tutti_comm_last_error(c->comm));
                return st;
            }
            if (res[ip].wrong > 0)
                c->out.wrong_total += res[ip].wrong;
        }
        perf_row_t row = {.coll = coll,
                          .size = used,
                          .count = n * (tt_coll_count_per_rank(coll) ? (size_t)c->nranks : 1),
                          .dtype = c->d.dtype,
                          .op = c->d.op,
                          .root = c->d.root};
        choice(c, coll, n, &row);
        perf_print_row(&c->out, &row, res);
        c->out.busbw_sum[coll] += res[0].busbw;
        c->out.busbw_n[coll]++;
    }
    return TUTTI_SUCCESS;
}

/* Every collective asked for, for every datatype, op and root asked for. */
static tutti_status_t all_sweeps(perf_ctx_t *c)
{
    const perf_opts_t *o = c->o;
    tutti_status_t st = TUTTI_SUCCESS;
    for (int coll = 0; coll < TT_COLL_COUNT && !st; coll++) {
        if (!perf_coll_names[coll] || (o->coll >= 0 && o->coll != coll))
            continue;
        if (coll == TT_COLL_SEND && c->nranks < 2) { /* nobody to send to: no time, no bandwidth */
            if (c->out.text)
                printf("# sendrecv needs 2 or more ranks: skipped\n");
            continue;
        }
        int rooted = coll == TT_COLL_BROADCAST || coll == TT_COLL_REDUCE,
            reducing = tt_coll_reduces((tt_coll_t)coll);
        int first = 1;
        for (int t = 0; t < o->ndtypes && !st; t++)
            for (int k = 0; k < (reducing ? o->nops : 1) && !st; k++)
                for (int root = o->root < 0 ? 0 : o->root;
                     root < (o->root < 0 && rooted ? c->nranks : (o->root < 0 ? 1 : o->root + 1)) && !st;
                     root++) {
                    c->d = (perf_data_t){.rank = c->rank,
                                         .nranks = c->nranks,
                                         .dtype = o->dtypes[t],
                                         .op = o->ops[k],
                                         .root = root,
                                         .elem = tutti_dtype_size(o->dtypes[t])};
                    st = sweep(c, (tt_coll_t)coll, first);
                    first = 0;
                }
    }
    return st;
}

/* "0-3,8" for this process's CPUs. */
static void cpu_list(char *out, size_t len)
{
    cpu_set_t set;
    size_t used = 0;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set))
        return;
    for (int cpu = 0; cpu < CPU_SETSIZE && used < len; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            last++;
        used += (size_t)snprintf(out + used, len - used, last > cpu ? "%s%d-%d" : "%s%d", used ? "," : "",
                                 cpu, last);
        cpu = last;
    }
}

#define RANK_LINE 160

/* Each rank's "#  Rank ..." line, gathered on every rank. */
static tutti_status_t rank_lines(perf_ctx_t *c, char *all)
{
    char mine[RANK_LINE] = "", host[64] = "", where[96];
    gethostname(host, sizeof host - 1);
    if (c->o->device) {
        devmem_describe(where, sizeof where);
    } else {
        char cpus[64];
        cpu_list(cpus, sizeof cpus);
        snprintf(where, sizeof where, "CPUs %s (host memory)", cpus);
    }
    snprintf(mine, sizeof mine, "#  Rank %2d Group  0 Pid %6d on %10s %s", c->rank, (int)getpid(), host,
             where);
    return tutti_allgather(mine, all, RANK_LINE, TUTTI_UINT8, c->comm, NULL);
}

static double peak_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    double kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib / 1024;
}

static int setup_buffers(perf_ctx_t *c)
{
    const perf_opts_t *o = c->o;
    size_t pad = (size_t)o->unalign * 8; /* -u: the calls get addresses this far in (the widest datatype) */
    c->buf_bytes = (size_t)o->maxb + (size_t)c->nranks * 8 + 64;
    if (!o->device) { /* the checks fill and read the buffers the calls get */
        c->dev_send = calloc(1, c->buf_bytes + pad);
        c->dev_recv = calloc(1, c->buf_bytes + pad);
        if (!c->dev_send || !c->dev_recv)
            return -1;
        c->send = c->img_send = (char *)c->dev_send + pad;
        c->recv = c->img_recv = (char *)c->dev_recv + pad;
        return 0;
    }
    c->img_send = calloc(1, c->buf_bytes);
    c->img_recv = calloc(1, c->buf_bytes);
    c->dev_send = devmem_alloc(c->buf_bytes + pad);
    c->dev_recv = devmem_alloc(c->buf_bytes + pad);
    if (!c->img_send || !c->img_recv || !c->dev_send || !c->dev_recv)
        return -1;
    c->send = (char *)c->dev_send + pad;
    c->recv = (char *)c->dev_recv + pad;
    return devmem_to_device(c->send, c->img_send, c->buf_bytes, c->stream) ||
                   devmem_to_device(c->recv, c->img_recv, c->buf_bytes, c->stream) || devmem_sync(c->stream)
               ? -1
               : 0;
}

static void teardown(perf_ctx_t *c)
{
    if (c->o->device) {
        devmem_free(c->dev_send);
        devmem_free(c->dev_recv);
        free(c->img_send);
        free(c->img_recv);
        devmem_close(c->stream);
    } else {
        free(c->dev_send);
        free(c->dev_recv);
    }
    free(c->iter_us);
    tutti_ef_destroy(c->ef);
    tt_json_free(&c->out.json);
}

static tutti_status_t run(perf_ctx_t *c)
{
    const perf_opts_t *o = c->o;
    char *lines = calloc((size_t)c->nranks, RANK_LINE);
    const char **ptrs = calloc((size_t)c->nranks, sizeof *ptrs);
    tutti_status_t st = lines && ptrs ? rank_lines(c, lines) : TUTTI_ERR_NO_MEMORY;
    for (int r = 0; !st && r < c->nranks; r++)
        ptrs[r] = lines + (size_t)r * RANK_LINE;
    if (!st && c->rank == 0)
        perf_print_header(&c->out, ptrs);
    free(lines);
    free(ptrs);
    for (int cycle = 0; !st && (o->cycles == 0 || cycle < o->cycles); cycle++) {
        if (o->cycles != 1 && c->out.text)
            printf("#\n# cycle %d\n", cycle + 1);
        st = all_sweeps(c);
    }
    return st;
}

int main(int argc, char **argv)
{
    perf_opts_t o;
    int rc = perf_parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (o.timeout_s > 0) { /* -T: every wait of the library fails after this long */
        char secs[16];
        snprintf(secs, sizeof secs, "%d", o.timeout_s);
        setenv("TUTTI_TIMEOUT", secs, 1);
    }
    perf_ctx_t c = {.o = &o};
    tutti_status_t st = tutti_comm_init_env(&c.comm, NULL);
    if (st) {
        fprintf(stderr, "%s: joining the communicator failed: %s: %s\n", o.program, tutti_strerror(st),
                tutti_comm_last_error(NULL));
        return 1;
    }
    tutti_comm_rank(c.comm, &c.rank);
    tutti_comm_size(c.comm, &c.nranks);
    c.out = (perf_out_t){.o = &o,
                         .comm = c.comm,
                         .rank = c.rank,
                         .nranks = c.nranks,
                         .text = c.rank == 0 && !o.csv && !o.json};
    char why[160];
    if (o.root >= c.nranks) {
        fprintf(stderr, "%s: -r: root %d is outside 0..%d\n", o.program, o.root, c.nranks - 1);
        rc = 2;
    } else if (o.device && devmem_open(c.rank, &c.stream, why, sizeof why)) {
        fprintf(stderr, "%s: --memory device: %s\n", o.program, why);
        rc = 2;
    } else if (o.device && o.stream_null) {
        devmem_close(c.stream); /* -y 1: the default stream */
        c.stream = NULL;
    }
    if (!rc &&
        (setup_buffers(&c) || (o.per_iter && !(c.iter_us = calloc((size_t)o.iters, sizeof(double)))))) {
        fprintf(stderr, "%s: cannot allocate 2 x %zu bytes of %s memory\n", o.program, c.buf_bytes,
                o.device ? "GPU" : "host");
        rc = 1;
    }
    if (rc) {
        teardown(&c);
        tutti_comm_destroy(c.comm);
        return rc;
    }
    st = run(&c);
    double rss = peak_rss_mib();
    if (!st && o.memreport)
        st = tutti_allreduce(&rss, &rss, 1, TUTTI_FP64, TUTTI_MAX, c.comm, NULL);
    int gate = 0;
    if (!st && c.rank == 0) {
        gate = perf_print_footer(&c.out, rss);
        if ((o.json || *o.json_file) && perf_write_json(&c.out)) {
            fprintf(stderr, "%s: writing the JSON document failed\n", o.program);
            gate = 1;
        }
    }
    long long wrong = c.out.wrong_total;
    teardown(&c);
    if (st) {
        tutti_comm_abort(c.comm);
        return 1;
    }
    tutti_comm_destroy(c.comm);
    return wrong || gate ? 1 : 0;
}
