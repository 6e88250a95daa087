/* SPDX-License-Identifier: MIT */
/*
 * Streams, two-way streams and ping-pongs between two ranks over a transport
 * connection, in batches: the timing rank sends a control message before each
 * batch with its size (or the word to stop), so both ends agree on how many
 * there are and how long each is.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bw_pair.h"
#include "core/clock.h"

#define BW_COLL_TAG 0xb0 /* the "collective" tutti-bw's messages claim to be */
#define BATCH_BYTES ((size_t)32 << 20)
#define MAX_BATCH 1024
#define LAT_BATCH 200
#define SPIN_BEFORE_YIELD 256
#define BW_TRY(call)                                                                                         \
    do {                                                                                                     \
        tutti_status_t st_ = (call);                                                                         \
        if (st_)                                                                                             \
            return st_;                                                                                      \
    } while (0)

int tt_bw_batch_count(tt_bw_kind_t kind, size_t bytes)
{
    if (kind == TT_BW_LAT || kind == TT_BW_XCH) { /* some 8 MiB per batch, 8 to 200 messages */
        size_t n = ((size_t)8 << 20) / (bytes ? bytes : 1);
        return n < 8 ? 8 : n > LAT_BATCH ? LAT_BATCH : (int)n;
    }
    size_t n = BATCH_BYTES / (bytes ? bytes : 1);
    return n < 4 ? 4 : n > MAX_BATCH ? MAX_BATCH : (int)n;
}

static tt_msg_hdr_t header(uint64_t seq, size_t bytes)
{
    return (tt_msg_hdr_t){.magic = TT_MSG_MAGIC, .coll = BW_COLL_TAG, .root = -1, .seq = seq, .bytes = bytes};
}

static tutti_status_t post(tt_bw_link_t *l, int send, int channel, char *buf, size_t bytes, tt_req_t *r)
{
    memset(r, 0, sizeof *r);
    r->hdr = header(send ? l->seq_out++ : l->seq_in++, bytes);
    r->buf = buf;
    r->len = bytes;
    r->unit = 1;
    tutti_status_t st = send ? l->ops->isend(l->conn, channel, r) : l->ops->irecv(l->conn, channel, r);
    if (st)
        fprintf(stderr, "tutti-bw: %s: posting a %s failed: %s\n", l->ops->name, send ? "send" : "receive",
                tutti_strerror(st));
    return st;
}

/* Progresses the connection until the n requests are done. */
static tutti_status_t wait_all(tt_bw_link_t *l, tt_req_t *reqs, int n)
{
    int64_t last = tt_now_ns();
    int first_pending = 0, idle = 0;
    for (;;) {
        int progressed = 0;
        tutti_status_t st = l->ops->progress(l->conn, &progressed);
        while (first_pending < n && reqs[first_pending].state == TT_REQ_DONE)
            first_pending++;
        for (int i = first_pending; i < n && !st; i++)
            if (reqs[i].state == TT_REQ_FAILED)
                st = reqs[i].status;
        if (st) {
            fprintf(stderr, "tutti-bw: %s transfer failed: %s\n", l->ops->name, tutti_strerror(st));
            return st;
        }
        int pending = 0;
        for (int i = first_pending; i < n && !pending; i++)
            pending = reqs[i].state == TT_REQ_PENDING;
        if (!pending)
            return TUTTI_SUCCESS;
        if (progressed) {
            last = tt_now_ns();
            idle = 0;
            continue;
        }
        if (tt_now_ns() - last > l->timeout_ms * 1000000) {
            fprintf(stderr, "tutti-bw: %s: the peer sent nothing for %lld ms\n", l->ops->name,
                    (long long)l->timeout_ms);
            return TUTTI_ERR_TIMEOUT;
        }
        /* The other ranks sleep while a pair measures, so the pair spins; but
         * a peer on our own CPU runs only once we give the CPU away. */
        if (l->yield || ++idle % SPIN_BEFORE_YIELD == 0)
            sched_yield();
    }
}

/* One message of a few bytes each way: a control word or an acknowledgement. */
static tutti_status_t small_send(tt_bw_link_t *l, int64_t word)
{
    tt_req_t r;
    BW_TRY(post(l, 1, 0, (char *)&word, sizeof word, &r));
    return wait_all(l, &r, 1);
}

static tutti_status_t small_recv(tt_bw_link_t *l, int64_t *word)
{
    tt_req_t r;
    BW_TRY(post(l, 0, 0, (char *)word, sizeof *word, &r));
    return wait_all(l, &r, 1);
}

/* count messages out, count in, or both; the timer waits for the other end's word that it is done. */
static tutti_status_t stream(tt_bw_link_t *l, int timer, int out, int in, size_t bytes, int count,
                             tt_req_t *reqs)
{
    int n = 0;
    for (int i = 0; i < count && in; i++)
        BW_TRY(post(l, 0, i % l->nchannels, l->recvbuf, bytes, &reqs[n++]));
    for (int i = 0; i < count && out; i++)
        BW_TRY(post(l, 1, i % l->nchannels, l->sendbuf, bytes, &reqs[n++]));
    BW_TRY(wait_all(l, reqs, n));
    int64_t word = 0;
    return timer ? small_recv(l, &word) : small_send(l, 1);
}

static tutti_status_t ping_pong(tt_bw_link_t *l, int timer, int exchange, size_t bytes, int count,
                                double *one_way_us)
{
    tt_req_t r[2];
    for (int i = 0; i < count; i++) {
        int64_t t0 = tt_now_ns();
        if (exchange) {
            BW_TRY(post(l, 0, 0, l->recvbuf, bytes, &r[0]));
            BW_TRY(post(l, 1, 0, l->sendbuf, bytes, &r[1]));
            BW_TRY(wait_all(l, r, 2));
            one_way_us[i] = (double)(tt_now_ns() - t0) / 1e3;
        } else if (timer) {
            BW_TRY(post(l, 0, 0, l->recvbuf, bytes, &r[0]));
            BW_TRY(post(l, 1, 0, l->sendbuf, bytes, &r[1]));
            BW_TRY(wait_all(l, r, 2));
            one_way_us[i] = (double)(tt_now_ns() - t0) / 2e3;
        } else {
            BW_TRY(post(l, 0, 0, l->recvbuf, bytes, &r[0]));
            BW_TRY(wait_all(l, r, 1));
            BW_TRY(post(l, 1, 0, l->sendbuf, bytes, &r[1]));
            BW_TRY(wait_all(l, &r[1], 1));
        }
    }
    return TUTTI_SUCCESS;
}

/* One batch; on the timer, its sample (GB/s, or the batch's one-way us in lat). */
static tutti_status_t batch(tt_bw_link_t *l, int timer, tt_bw_kind_t kind, size_t bytes, int count,
                            tt_req_t *reqs, double *lat, double *seconds)
{
    int64_t t0 = tt_now_ns();
    tutti_status_t st;
    if (kind == TT_BW_LAT || kind == TT_BW_XCH)
        st = ping_pong(l, timer, kind == TT_BW_XCH, bytes, count, lat);
    else
        st = stream(l, timer, kind == TT_BW_BI || timer, kind == TT_BW_BI || !timer, bytes, count, reqs);
    *seconds = (double)(tt_now_ns() - t0) * 1e-9;
    return st;
}

/* The messages of the next batch: its share of the budget at the pace of
 * the last one, at least 1 and at most cap (a slow link's batches stay
 * within the budget; a fast link's are cap, as many as fill 32 MiB). */
static int next_count(int count, double seconds, const tt_repeat_rule_t *rule, int cap)
{
    double share = rule->budget_s / (rule->min_n + 1), want = seconds > 0 ? share * count / seconds : cap;
    return want < 1 ? 1 : want > cap ? cap : (int)want;
}

tutti_status_t tt_bw_pair_measure(tt_bw_link_t *l, int timer, tt_bw_kind_t kind, size_t bytes,
                                  const tt_repeat_rule_t *rule, tt_bw_result_t *res)
{
    memset(res, 0, sizeof *res);
    int cap = tt_bw_batch_count(kind, bytes), count = cap < 8 ? cap : 8;
    int max_batches = rule->max_n;
    tt_req_t *reqs = malloc(2 * (size_t)cap * sizeof *reqs);
    double *samples = malloc((size_t)max_batches * sizeof *samples);
    double *rates = malloc((size_t)max_batches * sizeof *rates);
    double *lat = malloc(((size_t)max_batches + 1) * (size_t)cap * sizeof *lat);
    tutti_status_t st = reqs && samples && rates && lat ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    int n = 0, stable = 0;
    size_t timed = 0; /* one-way times in lat */
    double elapsed = 0;
    /* Untimed batches first, growing from a few messages until one is about
     * its share of the budget: connections and caches warm up. The timer
     * tells the other end each batch's size (0: stop). */
    for (int warm = 1; !st;) {
        int64_t go = count;
        if (timer && !warm && tt_stats_enough(rule, samples, n, elapsed, &stable))
            go = 0;
        st = timer ? small_send(l, go) : small_recv(l, &go);
        if (st || go <= 0)
            break;
        count = go < cap ? (int)go : cap;
        double s = 0;
        st = batch(l, timer, kind, bytes, count, reqs, lat + timed, &s);
        if (st || !timer)
            continue;
        int next = next_count(count, s, rule, cap);
        if (warm) {
            warm = next > 2 * count; /* still growing */
            count = next;
            continue;
        }
        elapsed += s;
        res->messages += count;
        if (kind == TT_BW_LAT || kind == TT_BW_XCH) { /* the batch's median message, for the stopping rule */
            tt_stats_t b;
            double *copy = lat + (size_t)max_batches * cap; /* the extra batch: scratch */
            memcpy(copy, lat + timed, (size_t)count * sizeof *copy);
            tt_stats_compute(copy, count, &b);
            samples[n] = b.median;
            timed += (size_t)count;
        } else {
            samples[n] = (double)bytes * count / s / 1e9;
        }
        rates[n] = count / s;
        n++;
        count = next;
    }
    if (!st && timer) {
        if (kind == TT_BW_LAT || kind == TT_BW_XCH)
            tt_stats_compute(lat, (int)timed, &res->stats);
        else
            tt_stats_compute(samples, n, &res->stats);
        res->stats.stable = stable;
        tt_stats_t r;
        tt_stats_compute(rates, n, &r);
        res->msg_rate = r.median;
        res->seconds = elapsed;
    }
    free(reqs);
    free(samples);
    free(rates);
    free(lat);
    return st;
}
