/* SPDX-License-Identifier: MIT */
/*
 * Write bandwidth and latency over a transport connection, in perftest's
 * terms. Bandwidth: the client keeps `depth` messages in flight (spread
 * round robin over the connection's channels, each channel in order) until
 * `iters` have gone; the server receives them and answers with one small
 * message, and the client's clock stops when that answer is in: a message
 * counts once it has arrived (a send completing locally proves nothing,
 * slots are written asynchronously). Bidirectional: both send and receive at
 * once and the bytes of both directions count, as ib_write_bw -b reports.
 * Latency: ping-pong, half of each round trip, as ib_write_lat reports.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bw_verbs.h"
#include "core/clock.h"
#include "sched/schedule.h"

#define MIB (1024.0 * 1024.0)

/* Posts message k of a stream (channel k mod channels, sequence base + k). */
static tutti_status_t post(tt_bwv_link_t *l, int is_send, tt_req_t *r, uint64_t base, int k, char *buf,
                           size_t bytes)
{
    int ch = k % l->nchannels;
    memset(r, 0, sizeof *r);
    r->hdr = (tt_msg_hdr_t){.magic = TT_MSG_MAGIC,
                            .coll = TT_COLL_SEND,
                            .dtype = TUTTI_UINT8,
                            .channel = (uint8_t)ch,
                            .count = bytes,
                            .seq = base + (uint64_t)k,
                            .bytes = bytes};
    r->buf = buf;
    r->len = bytes;
    r->unit = 1;
    return is_send ? l->ops->isend(l->conn, ch, r) : l->ops->irecv(l->conn, ch, r);
}

/* Sends and/or receives n messages of bytes, depth of each in flight. */
static tutti_status_t stream(tt_bwv_link_t *l, int send, int recv, int n, size_t bytes, int depth, char *sbuf,
                             char *rbuf, tt_req_t *win)
{
    tt_req_t *sw = win, *rw = win + depth;
    int posted[2] = {0, 0}, want[2] = {send ? n : 0, recv ? n : 0};
    uint64_t base = l->seq;
    int64_t last = tt_now_ms();
    for (;;) {
        int busy = 0;
        for (int dir = 0; dir < 2; dir++) {
            tt_req_t *w = dir == 0 ? sw : rw;
            /* A window slot is reused once its previous message is done. */
            while (posted[dir] < want[dir] &&
                   (posted[dir] < depth || w[posted[dir] % depth].state != TT_REQ_PENDING)) {
                tt_req_t *r = &w[posted[dir] % depth];
                if (posted[dir] >= depth && r->state == TT_REQ_FAILED)
                    return r->status;
                tutti_status_t st = post(l, dir == 0, r, base, posted[dir], dir == 0 ? sbuf : rbuf, bytes);
                if (st)
                    return st;
                posted[dir]++;
            }
            for (int i = 0; i < (want[dir] < depth ? want[dir] : depth); i++) {
                if (w[i].state == TT_REQ_FAILED) {
                    fprintf(stderr, "tutti-bw-verbs: %s: a message failed: %s\n", l->ops->name,
                            tutti_strerror(w[i].status));
                    return w[i].status;
                }
                busy |= w[i].state == TT_REQ_PENDING;
            }
            busy |= posted[dir] < want[dir];
        }
        if (!busy)
            break;
        int progressed = 0;
        l->ops->progress(l->conn, &progressed);
        int64_t now = tt_now_ms();
        if (progressed)
            last = now;
        else if (now - last > l->timeout_ms) {
            fprintf(stderr, "tutti-bw-verbs: %s: no progress for %lld ms\n", l->ops->name,
                    (long long)l->timeout_ms);
            return TUTTI_ERR_TIMEOUT;
        }
    }
    l->seq = base + (uint64_t)n;
    return TUTTI_SUCCESS;
}

/* One batch of n messages; the client returns its seconds in *secs. */
static tutti_status_t batch(tt_bwv_link_t *l, int bidir, const tt_bwv_params_t *p, int n, char *sbuf,
                            char *rbuf, tt_req_t *win, double *secs)
{
    char token = 1;
    int64_t t0 = tt_now_ns();
    int send = bidir || p->client, recv = bidir || !p->client;
    tutti_status_t st = stream(l, send, recv, n, p->bytes, p->depth, sbuf, rbuf, win);
    /* The server says it has everything; only then does the clock stop. */
    if (!st)
        st = stream(l, !p->client, p->client, 1, 1, 1, &token, &token, win);
    *secs = (double)(tt_now_ns() - t0) / 1e9;
    return st;
}

/* Duration mode: the client tells the server how many messages or round
 * trips come next (0: none, the size is done), so both post the same. */
static tutti_status_t tell(tt_bwv_link_t *l, const tt_bwv_params_t *p, uint64_t *n, tt_req_t *win)
{
    return stream(l, p->client, !p->client, 1, sizeof *n, 1, (char *)n, (char *)n, win);
}

/* The next batch's size for the client, from the last one's n and time,
 * so that it lasts about target seconds (growing at most 16-fold). */
static uint64_t resize(uint64_t n, double secs, double target)
{
    double want = (double)n * target / (secs > 1e-6 ? secs : 1e-6);
    want = want > 16.0 * (double)n ? 16.0 * (double)n : want;
    return want < 1 ? 1 : want > 1e7 ? 10000000 : (uint64_t)want;
}

static tutti_status_t bandwidth(tt_bwv_link_t *l, int bidir, const tt_bwv_params_t *p, char *sbuf, char *rbuf,
                                tt_req_t *win, tt_bwv_result_t *out)
{
    double secs, total = 0, best = 0, target = p->duration / (p->batches + 1); /* best: messages/s */
    tutti_status_t st = TUTTI_SUCCESS;
    int timed = 0, warm = 0; /* warm: a batch lasted a quarter of its share, the next ones count */
    if (p->duration <= 0) {  /* fixed: warmup, then batches of iters */
        if (p->warmup > 0)
            st = batch(l, bidir, p, p->warmup, sbuf, rbuf, win, &secs);
        for (int b = 0; b < p->batches && !st; b++, timed++) {
            st = batch(l, bidir, p, p->iters, sbuf, rbuf, win, &secs);
            total += secs;
            best = p->iters / secs > best ? p->iters / secs : best;
            out->iters += p->iters;
        }
    }
    /* Duration: batches from one message up count as warmup until one lasts
     * a quarter of its share; then timed ones until the batches or the time
     * are used up. */
    int64_t t0 = tt_now_ns();
    for (uint64_t n = 1, next = 1; p->duration > 0 && !st && next;) {
        double spent = (double)(tt_now_ns() - t0) / 1e9;
        next = timed >= p->batches || (timed > 0 && spent >= p->duration) ? 0 : n;
        if ((st = tell(l, p, &next, win)) != TUTTI_SUCCESS || !next)
            break;
        st = batch(l, bidir, p, (int)next, sbuf, rbuf, win, &secs);
        if (!st && p->client && warm) {
            total += secs;
            best = (double)next / secs > best ? (double)next / secs : best;
            out->iters += (long)next;
            timed++;
        }
        warm |= secs >= target / 4;
        n = resize(next, secs, target);
    }
    double per = (double)p->bytes * (bidir ? 2 : 1);
    if (!st && total > 0 && out->iters > 0) {
        out->bw_avg = per * (double)out->iters / total / MIB;
        out->bw_peak = per * best / MIB;
        out->msg_rate = (double)out->iters * (bidir ? 2.0 : 1.0) / total / 1e6;
    }
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n round trips; with us, each one's half in microseconds from us[0]. */
static tutti_status_t round_trips(tt_bwv_link_t *l, const tt_bwv_params_t *p, long n, char *sbuf, char *rbuf,
                                  tt_req_t *win, double *us)
{
    tutti_status_t st = TUTTI_SUCCESS;
    for (long i = 0; i < n && !st; i++) {
        int64_t t0 = tt_now_ns();
        st = stream(l, p->client, !p->client, 1, p->bytes, 1, sbuf, rbuf, win);
        if (!st)
            st = stream(l, !p->client, p->client, 1, p->bytes, 1, sbuf, rbuf, win);
        if (us)
            us[i] = (double)(tt_now_ns() - t0) / 2e3;
    }
    return st;
}

static tutti_status_t latency(tt_bwv_link_t *l, const tt_bwv_params_t *p, char *sbuf, char *rbuf,
                              tt_req_t *win, tt_bwv_result_t *out)
{
    long cap = p->duration > 0 ? 1 << 20 : p->iters, n = 0;
    double *us = malloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1));
    if (!us)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = round_trips(l, p, p->duration > 0 ? 1 : p->warmup, sbuf, rbuf, win, NULL);
    if (!st && p->duration <= 0)
        st = round_trips(l, p, n = p->iters, sbuf, rbuf, win, us);
    /* Duration: chunks of round trips, each sized to a tenth of it. */
    int64_t t0 = tt_now_ns();
    for (uint64_t k = 1, next = 1; p->duration > 0 && !st && next;) {
        double spent = (double)(tt_now_ns() - t0) / 1e9;
        next = spent >= p->duration || n + (long)k > cap ? 0 : k;
        if ((st = tell(l, p, &next, win)) != TUTTI_SUCCESS || !next)
            break;
        int64_t c0 = tt_now_ns();
        st = round_trips(l, p, (long)next, sbuf, rbuf, win, us + n);
        n += (long)next;
        k = resize(next, (double)(tt_now_ns() - c0) / 1e9, p->duration / 10);
    }
    if (!st && p->client && n > 0) {
        double sum = 0, sq = 0;
        for (long i = 0; i < n; i++)
            sum += us[i];
        out->iters = n;
        out->t_avg = sum / (double)n;
        for (long i = 0; i < n; i++)
            sq += (us[i] - out->t_avg) * (us[i] - out->t_avg);
        qsort(us, (size_t)n, sizeof *us, cmp_double);
        out->t_min = us[0];
        out->t_max = us[n - 1];
        out->t_typical = us[n / 2];
        out->t_stdev = sqrt(sq / (double)n);
        out->t_p99 = us[(long)ceil(0.99 * (double)n) - 1];
        out->t_p999 = us[(long)ceil(0.999 * (double)n) - 1];
    }
    free(us);
    return st;
}

tutti_status_t tt_bwv_measure(tt_bwv_link_t *l, tt_bwv_test_t test, const tt_bwv_params_t *p, char *sendbuf,
                              char *recvbuf, tt_bwv_result_t *out)
{
    memset(out, 0, sizeof *out);
    tt_req_t *win = calloc(2 * (size_t)(p->depth > 0 ? p->depth : 1), sizeof *win);
    if (!win)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = test == TT_BWV_LAT ? latency(l, p, sendbuf, recvbuf, win, out)
                                           : bandwidth(l, test == TT_BWV_BIBW, p, sendbuf, recvbuf, win, out);
    free(win);
    return st;
}

void tt_bwv_print_header(FILE *f, tt_bwv_test_t test, int gbits)
{
    const char *unit = gbits ? "Gb/sec" : "MB/sec";
    if (test == TT_BWV_LAT)
        fprintf(f, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                   "t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n");
    else
        fprintf(f, " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", unit, unit);
}

void tt_bwv_print_row(FILE *f, tt_bwv_test_t test, const tt_bwv_params_t *p, const tt_bwv_result_t *r,
                      int gbits)
{
    double scale = gbits ? MIB * 8 / 1e9 : 1; /* MiB/s to Gb/s */
    if (test == TT_BWV_LAT)
        fprintf(f, " %-7zu %-13ld %-14.2f %-12.2f %-16.2f %-14.2f %-15.2f %-22.2f %.2f\n", p->bytes, r->iters,
                r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev, r->t_p99, r->t_p999);
    else
        fprintf(f, " %-10zu %-14ld %-18.2f %-20.2f %.6f\n", p->bytes, r->iters, r->bw_peak * scale,
                r->bw_avg * scale, r->msg_rate);
}
