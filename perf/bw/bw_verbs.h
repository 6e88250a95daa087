/* SPDX-License-Identifier: MIT */
/*
 * Write bandwidth and latency between two ranks over one of tutti's own
 * transport connections (verbs, or any other: the ops table of
 * transports/transport.h), measured and printed the way perftest's
 * ib_write_bw and ib_write_lat do, so the two can be read side by side.
 * tutti-bw-verbs is the command line around it; other benchmarks may call
 * tt_bwv_measure on a connection of their own.
 */
#ifndef TT_BW_VERBS_H
#define TT_BW_VERBS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "transports/transport.h"

typedef enum { TT_BWV_BW = 0, TT_BWV_BIBW, TT_BWV_LAT } tt_bwv_test_t;

/* One end of the connection to the other rank. */
typedef struct {
    const tt_transport_ops_t *ops;
    void *conn;
    int nchannels;
    int64_t timeout_ms;
    uint64_t seq; /* messages exchanged so far, both ends count alike */
} tt_bwv_link_t;

typedef struct {
    size_t bytes;
    int iters;   /* timed messages (bandwidth: per batch) */
    int warmup;  /* untimed messages first */
    int depth;   /* messages in flight, as perftest's --tx-depth */
    int batches; /* bandwidth: timed batches; peak is the best one */
    int client;  /* 1 on the rank that sends first and reports (rank 0) */
    /* > 0: about this many seconds per size instead of iters and warmup,
     * as perftest's -D; the client sizes each batch to the link and tells
     * the server before it. */
    double duration;
} tt_bwv_params_t;

/* What rank 0 reports: MiB/s as perftest's MB/sec, message rate in Mpps,
 * latencies one way (half the round trip) in microseconds. */
typedef struct {
    long iters; /* messages (bandwidth) or round trips (latency) timed */
    double bw_peak, bw_avg, msg_rate;
    double t_min, t_max, t_typical, t_avg, t_stdev, t_p99, t_p999;
} tt_bwv_result_t;

/* Both ranks call it with the same test and parameters (client set on
 * one); sendbuf and recvbuf hold bytes. A transport failure or a stuck peer
 * (timeout_ms without progress) is returned, described on stderr. */
tutti_status_t tt_bwv_measure(tt_bwv_link_t *l, tt_bwv_test_t test, const tt_bwv_params_t *p, char *sendbuf,
                              char *recvbuf, tt_bwv_result_t *out);

/* perftest's table header and rows (gbits: Gb/s instead of MiB/s). */
void tt_bwv_print_header(FILE *f, tt_bwv_test_t test, int gbits);
void tt_bwv_print_row(FILE *f, tt_bwv_test_t test, const tt_bwv_params_t *p, const tt_bwv_result_t *r,
                      int gbits);

#endif
