/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf's measurement of one collective at one size: warm-up, the
 * timed iterations (-m calls each, waiting and meeting as -z says), the
 * time over ranks as -a says, per-iteration percentiles (-I) and the
 * checked iterations (-c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "api/collectives.h"
#include "core/clock.h"
#include "devmem.h"
#include "perf.h"
#include "core/try.h"

/* nccl-tests' sendrecv: every rank sends to the next and receives from
 * the one before. Blocking calls: even ranks send first, odd ranks
 * receive first. */
static tutti_status_t sendrecv(perf_ctx_t *c, const void *send, void *recv, size_t n)
{
    int p = c->nranks, r = c->rank;
    if (p == 1)
        return TUTTI_SUCCESS;
    int right = (r + 1) % p, left = (r + p - 1) % p;
    tutti_dtype_t t = c->d.dtype;
    tutti_status_t st;
    if (r % 2 == 0) {
        st = tutti_send(send, n, t, right, c->comm, c->stream);
        return st ? st : tutti_recv(recv, n, t, left, c->comm, c->stream);
    }
    st = tutti_recv(recv, n, t, left, c->comm, c->stream);
    return st ? st : tutti_send(send, n, t, right, c->comm, c->stream);
}

static tutti_status_t run_once(perf_ctx_t *c, tt_coll_t coll, size_t n, int in_place)
{
    tutti_dtype_t t = c->d.dtype;
    tutti_op_t op = c->d.op;
    char *recv = c->recv, *send = in_place ? c->recv : c->send;
    size_t mine = (size_t)c->rank * n * c->d.elem;
    if (coll == TT_COLL_ALLREDUCE && c->o->compress)
        return tutti_allreduce_compressed(send, recv, n, t, op, &c->o->how, c->ef, c->comm, c->stream);
    if (coll == TT_COLL_SEND)
        return sendrecv(c, send, recv, n);
    /* In place, reduce-scatter's output and all-gather's input are this
     * rank's block of the one buffer. */
    if (in_place && coll == TT_COLL_REDUCE_SCATTER)
        recv += mine;
    if (in_place && coll == TT_COLL_ALLGATHER)
        send = recv + mine;
    return tt_coll_call(coll, send, recv, n, t, op, c->d.root, c->comm, c->stream);
}

static tutti_status_t device_sync(perf_ctx_t *c)
{
    return c->o->device && devmem_sync(c->stream) ? TUTTI_ERR_SYSTEM : TUTTI_SUCCESS;
}

/* Fills inputs, runs once, counts wrong elements on this rank. */
static long long check_once(perf_ctx_t *c, tt_coll_t coll, size_t n, int in_place, tutti_status_t *st)
{
    int p = c->nranks, r = c->rank;
    char *recv = c->img_recv, *in = in_place ? recv : c->img_send;
    size_t bytes = n * c->d.elem;
    memset(recv, 0xa5, tt_coll_count_per_rank(coll) ? bytes * (size_t)p : bytes);
    switch (coll) {
    case TT_COLL_REDUCE_SCATTER:
    case TT_COLL_ALLTOALL: perf_fill_input(&c->d, in, n * (size_t)p, 0); break;
    case TT_COLL_ALLGATHER:
        perf_fill_input(&c->d, in_place ? recv + (size_t)r * bytes : in, n, (size_t)r * n);
        break;
    default: perf_fill_input(&c->d, in, n, 0); break;
    }
    if (c->o->device && (devmem_to_device(c->send, c->img_send, c->buf_bytes, c->stream) ||
                         devmem_to_device(c->recv, recv, c->buf_bytes, c->stream))) {
        *st = TUTTI_ERR_SYSTEM;
        return 0;
    }
    *st = run_once(c, coll, n, in_place);
    if (!*st && c->o->device &&
        (devmem_to_host(recv, c->recv, c->buf_bytes, c->stream) || devmem_sync(c->stream)))
        *st = TUTTI_ERR_SYSTEM;
    if (*st)
        return 0;
    const perf_data_t *d = &c->d;
    long long w = 0;
    switch (coll) {
    case TT_COLL_ALLREDUCE: return perf_count_wrong(d, recv, n, 0, 0, 1);
    case TT_COLL_REDUCE_SCATTER:
        return perf_count_wrong(d, in_place ? recv + (size_t)r * bytes : recv, n, 0, (size_t)r * n, 1);
    case TT_COLL_ALLGATHER:
        for (int q = 0; q < p; q++)
            w += perf_count_wrong(d, recv + (size_t)q * bytes, n, q, (size_t)q * n, 0);
        return w;
    case TT_COLL_BROADCAST: return perf_count_wrong(d, recv, n, d->root, 0, 0);
    case TT_COLL_REDUCE: return r == d->root ? perf_count_wrong(d, recv, n, 0, 0, 1) : 0;
    case TT_COLL_ALLTOALL: /* block q came from rank q, which filled index r*n.. of its input */
        for (int q = 0; q < p; q++)
            w += perf_count_wrong(d, recv + (size_t)q * bytes, n, q, (size_t)r * n, 0);
        return w;
    case TT_COLL_SEND: return p == 1 ? 0 : perf_count_wrong(d, recv, n, (r + p - 1) % p, 0, 0);
    default: return 0;
    }
}

static double bus_factor(tt_coll_t coll, int p)
{
    switch (coll) {
    case TT_COLL_ALLREDUCE: return 2.0 * (p - 1) / p;
    case TT_COLL_REDUCE_SCATTER:
    case TT_COLL_ALLGATHER:
    case TT_COLL_ALLTOALL: return (double)(p - 1) / p;
    case TT_COLL_SEND: return p > 1 ? 1.0 : 0.0; /* one rank sends nothing */
    default: return 1.0;
    }
}

/* This rank's us as -a asks: rank 0's, the mean, the fastest or the slowest rank's. */
static tutti_status_t combine(perf_ctx_t *c, double *us, int count)
{
    static const tutti_op_t ops[4] = {TUTTI_SUM, TUTTI_SUM, TUTTI_MIN, TUTTI_MAX};
    int a = c->o->average;
    tutti_status_t st = a == 0 ? tutti_broadcast(us, us, (size_t)count, TUTTI_FP64, 0, c->comm, NULL)
                               : tutti_allreduce(us, us, (size_t)count, TUTTI_FP64, ops[a], c->comm, NULL);
    for (int i = 0; a == 1 && i < count; i++)
        us[i] /= c->nranks;
    return st;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* -I: the iterations' times, each the slowest rank's (as nccl-tests takes the max over processes). */
static tutti_status_t per_iteration(perf_ctx_t *c, perf_result_t *res)
{
    int n = c->o->iters, skip = c->o->per_iter_skip < n ? c->o->per_iter_skip : n - 1;
    TT_TRY(tutti_allreduce(c->iter_us, c->iter_us, (size_t)n, TUTTI_FP64, TUTTI_MAX, c->comm, NULL));
    double *v = c->iter_us + skip, sum = 0, sq = 0;
    int m = n - skip;
    qsort(v, (size_t)m, sizeof *v, by_value);
    for (int i = 0; i < m; i++)
        sum += v[i];
    res->i_avg = sum / m;
    for (int i = 0; i < m; i++)
        sq += (v[i] - res->i_avg) * (v[i] - res->i_avg);
    res->i_cv = res->i_avg > 0 ? sqrt(sq / m) / res->i_avg : 0;
    res->i_min = v[0];
    res->i_max = v[m - 1];
    res->i_p50 = v[m / 2];
    /* nearest rank, as nccl-tests reports them: p99 may equal max with < 100 samples */
    int k95 = (m * 95 + 99) / 100 - 1, k99 = (m * 99 + 99) / 100 - 1;
    res->i_p95 = v[k95 < 0 ? 0 : k95];
    res->i_p99 = v[k99 < 0 ? 0 : k99];
    res->i_skipped = skip;
    res->have_iter = 1;
    return TUTTI_SUCCESS;
}

/* Processor time of the whole process (every thread: the star's too), in us. */
static double process_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* The timed iterations: -m calls each, waiting and meeting as -z says.
 * *proc_us: the processor time per call, -z's barriers included. */
static tutti_status_t timed(perf_ctx_t *c, tt_coll_t coll, size_t n, int in_place, double *us, double *cpu_us,
                            double *proc_us)
{
    const perf_opts_t *o = c->o;
    tutti_status_t st = TUTTI_SUCCESS;
    double proc0 = process_cpu_us();
    int64_t excluded = 0, t0 = tt_now_ns();
    for (int i = 0; i < o->iters && !st; i++) {
        int64_t ti = tt_now_ns();
        for (int a = 0; a < o->agg && !st; a++) {
            st = run_once(c, coll, n, in_place);
            if (!st && (o->blocking == 1 || o->blocking == 2))
                st = device_sync(c);
            if (!st && o->blocking == 1)
                st = tutti_barrier(c->comm, NULL);
        }
        if (!st && (o->blocking == 3 || o->per_iter))
            st = device_sync(c); /* -I times each iteration to its completion */
        if (o->per_iter)
            c->iter_us[i] = (double)(tt_now_ns() - ti) / 1e3 / o->agg;
        if (!st && o->blocking == 3) { /* the barrier is not the collective's time */
            int64_t b0 = tt_now_ns();
            st = tutti_barrier(c->comm, NULL);
            excluded += tt_now_ns() - b0;
        }
    }
    double calls = (double)o->iters * o->agg;
    *cpu_us = (double)(tt_now_ns() - t0 - excluded) / 1e3 / calls;
    if (!st)
        st = device_sync(c); /* device calls return once queued */
    *us = (double)(tt_now_ns() - t0 - excluded) / 1e3 / calls;
    *proc_us = (process_cpu_us() - proc0) / calls;
    return st;
}

tutti_status_t perf_measure(perf_ctx_t *c, tt_coll_t coll, size_t n, size_t size_bytes, int in_place,
                            perf_result_t *res)
{
    const perf_opts_t *o = c->o;
    tutti_status_t st = TUTTI_SUCCESS;
    *res = (perf_result_t){.wrong = -1};
    if (in_place && coll == TT_COLL_SEND) { /* blocking send/recv cannot swap in place */
        res->skipped = 1;
        return TUTTI_SUCCESS;
    }
    if (o->compress && c->ef_count != n) { /* fresh error feedback per size */
        tutti_ef_destroy(c->ef);
        st = tutti_ef_create(&c->ef, n, c->nranks);
        c->ef_count = n;
    }
    for (int i = 0; i < o->warmup * o->agg && !st; i++)
        st = run_once(c, coll, n, in_place);
    if (!st)
        st = device_sync(c);
    if (!st)
        st = tutti_barrier(c->comm, NULL);
    double t[2] = {0, 0}, proc = 0;
    if (!st)
        st = timed(c, coll, n, in_place, &t[0], &t[1], &proc);
    if (!st)
        st = combine(c, t, 2);
    if (!st)
        st = tutti_allreduce(&proc, &proc, 1, TUTTI_FP64, TUTTI_SUM, c->comm, NULL);
    if (!st && o->per_iter)
        st = per_iteration(c, res);
    if (!st && o->compress) {
        tutti_compress_stats_t cs;
        st = tutti_compress_last_stats(c->comm, &cs);
        res->ratio = cs.bytes_sent ? (double)cs.dense_bytes_sent / (double)cs.bytes_sent : 0;
    }
    int64_t wrong = 0;
    for (int k = 0; k < o->check && !o->compress && !st; k++) /* compressed results are approximate */
        wrong += check_once(c, coll, n, in_place, &st);
    if (!st && o->check && !o->compress) {
        st = tutti_allreduce(&wrong, &wrong, 1, TUTTI_INT64, TUTTI_SUM, c->comm, NULL);
        res->wrong = wrong;
    }
    if (st)
        return st;
    res->us = t[0];
    res->cpu_us = t[1];
    res->proc_us = proc / c->nranks;
    res->algbw = t[0] > 0 ? (double)size_bytes / (t[0] * 1e-6) / 1e9 : 0;
    res->busbw = res->algbw * bus_factor(coll, c->nranks);
    return TUTTI_SUCCESS;
}
