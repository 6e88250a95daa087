/* SPDX-License-Identifier: MIT */
/*
 * What a device-memory transport adds to the transport interface: the
 * protocol cuda_ipc implements and the device layer (src/device/) and the
 * communicator's agreements (comm/agree.c, comm/pair.c) use. Ranks agree
 * call by call on a board whether every rank runs a call on its device
 * buffers; a direct run then reads the peers' windows, paced by words each
 * rank's stream writes into the others' segments.
 */
#ifndef TT_TRANSPORT_DEVICE_H
#define TT_TRANSPORT_DEVICE_H

#include "transports/transport.h"

/*
 * How this rank's GPU reaches rank q's side of a direct run (device
 * addresses, usable on this rank's streams): q's window, the two words
 * q's stream writes for this rank (in this rank's host segment) and the
 * two this rank's stream writes for q (in q's). Each word counts rounds:
 * "ready" once the writer's part of a round is in its window, "done" once
 * the writer has finished reading the reader's window for that round.
 */
typedef struct {
    char *window;
    unsigned *ready_from, *done_from;
    unsigned *ready_to, *done_to;
    /* Direct sends and receives between this rank and q, each direction
     * with its own chunk count: this rank's region for q (two slots in its
     * window, written by this rank), q's region for this rank (read by
     * this rank); "sent j" once the writer's chunk j is in its region,
     * "taken j" once the reader has copied chunk j out. */
    char *p2p_out;
    const char *p2p_in;
    unsigned *sent_from, *taken_from; /* in this rank's segment, written by q's stream */
    unsigned *sent_to, *taken_to;     /* in q's segment, written by this rank's stream */
} tt_direct_peer_t;

/* A rank's announcement for one call on the board. */
typedef enum { TT_BOARD_NOT_YET = 0, TT_BOARD_STAGES, TT_BOARD_DIRECT } tt_board_t;

/*
 * What a device-memory transport adds: ranks agree call by call, on a
 * board, whether every rank can run the call on its device buffers, and
 * the direct runs' windows and words. Every op that binds or opens runs on
 * the caller's thread with the bound GPU current, before a call is queued.
 */
struct tt_device_ops {
    /* Binds ctx to GPU device and publishes this rank's window. A failure
     * is logged; the caller then stages (and does not ask again). */
    tutti_status_t (*bind)(void *ctx, int device);
    /* Opens the windows and segments peers published so far; *all = 1
     * once all are: only then may this rank announce that it can go
     * direct. */
    tutti_status_t (*open_peers)(void *ctx, int *all);
    /* Announces whether this rank can run call seq (signature sig)
     * directly; waits (up to timeout_ms) only when far ahead of some rank. */
    tutti_status_t (*announce)(void *ctx, uint64_t seq, int capable, uint64_t sig, int64_t timeout_ms);
    /* Rank's announcement for seq, and the signature it announced. */
    tt_board_t (*announcement)(const void *ctx, int rank, uint64_t seq, uint64_t *sig);
    /* Once every rank announced it can: *all = whether every rank's device
     * can load from every other's. */
    tutti_status_t (*reach_all)(void *ctx, int *all);
    /* Every rank's side, by rank (this rank's own window at its own
     * index), once open_peers said all; *window_bytes: each window's size. */
    const tt_direct_peer_t *(*peers)(void *ctx, size_t *window_bytes);
    /* Stores into this rank's segment the words that peer (-1: every peer)
     * would write up to round, and its point-to-point words up to what
     * this rank's stream waits for (taken: chunks_to[peer], chunks this
     * rank sent it; sent: chunks_from[peer], chunks this rank receives
     * from it; NULL: none), so that this rank's stream stops waiting for
     * a peer that died or gave up. Host stores only. */
    void (*release)(void *ctx, int peer, unsigned round, const unsigned *chunks_to,
                    const unsigned *chunks_from);
    /*
     * Point-to-point agreement: per pair and direction, message by message
     * (k: the message's number in its direction), whether a message runs
     * directly. The receiver offers (capable or not, with the message's
     * signature); the sender reads the offer and decides; a capable
     * receiver reads the decision. None of these waits: a 1 from offer or
     * decide means no room yet (the other side is a ring behind), and the
     * caller waits as it waits for announcements.
     */
    int (*offer)(void *ctx, int sender, uint64_t k, int capable, uint64_t sig);
    /* The sender takes the receiver's capable offer for k, of signature
     * sig, atomically against its withdrawal: 1 taken (k is direct), 0 not
     * (the receiver cannot, withdrew, or offered another signature), -1
     * the offer is not there yet. */
    int (*claim)(void *ctx, int receiver, uint64_t k, uint64_t sig);
    /* The receiver withdraws its capable offer for k, atomically against
     * the sender's claim: 1 withdrawn (k stages), 0 the sender took it. */
    int (*withdraw)(void *ctx, int sender, uint64_t k);
    int (*decide)(void *ctx, int receiver, uint64_t k, int direct);
    /* -1: not decided yet; else whether message k from sender is direct. */
    int (*decision)(const void *ctx, int sender, uint64_t k);
    /* The receiver is done with message k's agreement (the sender may
     * reuse the decision's place a ring later). */
    void (*took)(void *ctx, int sender, uint64_t k);
    /* This rank's side of direct messages with peer (NULL: they cannot be,
     * its window is not open or the GPUs do not reach each other);
     * *slot_bytes: each slot's size. */
    const tt_direct_peer_t *(*pair)(void *ctx, int peer, size_t *slot_bytes);
    /* The GPU may still use the windows and segments: finalize leaves them. */
    void (*keep)(void *ctx);
};

#endif
