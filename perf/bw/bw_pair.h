/* SPDX-License-Identifier: MIT */
/*
 * One pair of ranks measured over one of tutti's own transport connections
 * (the ops table of transports/transport.h): streams of messages one way or
 * both ways at once, and ping-pongs, repeated until the median is stable.
 */
#ifndef TT_BW_PAIR_H
#define TT_BW_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include "bw_stats.h"
#include "transports/transport.h"

/* The matrices' kinds, then XCH: both send and receive one message at once,
 * over and over (a round of a collective); timed per exchange. */
typedef enum { TT_BW_UNI = 0, TT_BW_BI, TT_BW_LAT, TT_BW_KINDS, TT_BW_XCH = TT_BW_KINDS } tt_bw_kind_t;

/* This rank's end of the connection to one peer. */
typedef struct {
    const tt_transport_ops_t *ops;
    void *conn;
    int nchannels;
    int64_t timeout_ms;
    int yield; /* give the CPU away at every idle poll (ranks pinned to one CPU) */
    uint64_t seq_out, seq_in;
    char *sendbuf, *recvbuf; /* at least the largest message */
} tt_bw_link_t;

/* What one measurement gives, on the rank that timed it. */
typedef struct {
    tt_stats_t stats; /* GB/s per batch (UNI, BI: each direction's bytes), or one-way us per message (LAT) */
    double msg_rate;  /* UNI: messages per second, median batch */
    long long messages; /* timed, all batches */
    double seconds;     /* spent, all batches */
} tt_bw_result_t;

/* Messages in one batch of a measurement of bytes-long messages. */
int tt_bw_batch_count(tt_bw_kind_t kind, size_t bytes);

/*
 * Both ranks of the pair call this with the same kind and size; the timer
 * (the sender for UNI) decides when the median is stable under rule and
 * fills *res. The other rank follows its lead; its *res is left empty.
 * A transport failure is returned, with a message on stderr.
 */
tutti_status_t tt_bw_pair_measure(tt_bw_link_t *l, int timer, tt_bw_kind_t kind, size_t bytes,
                                  const tt_repeat_rule_t *rule, tt_bw_result_t *res);

#endif
