/* SPDX-License-Identifier: MIT */
/*
 * Direct sends and receives (see direct_run.h). Each direction of a pair
 * has its own chunk count (not the collectives' rounds, which every rank
 * runs in step: a message involves two ranks). The sender's region for the
 * receiver in its window has two slots; chunk j goes to slot j mod 2:
 * - the sender's stream waits for the receiver's "taken j - 2" (the slot's
 *   last chunk is out), copies chunk j in, stores "sent j" into the
 *   receiver's inbox;
 * - the receiver's stream waits for "sent j" in its own inbox, copies the
 *   chunk out into the user's buffer, stores "taken j" into the sender's.
 * Both sides cut a message into the same chunks (they agreed on its
 * signature), and each side puts a pair's chunks in message order, so the
 * counts match without a word said. A batch with one peer goes round by
 * round over its direct messages, every send's chunk of the round before
 * every receive's: an exchange between two ranks larger than two slots, in
 * one batch on each side, then never waits on itself. A batch with several
 * peers puts all its sends' chunks before its receives'. Copies take any
 * alignment.
 */
#include <stdlib.h>

#include "device/direct_run.h"
#include "device/layer.h"
#include "transports/device.h"

typedef struct {
    const tt_device_rt_t *rt;
    void *s;
    tt_device_layer_t *d;
    size_t slot;
    tutti_status_t st; /* the first failure; everything after it is skipped */
} p2p_run_t;

/* A direct call's place in the batch's rounds, and its peer's side. */
typedef struct {
    size_t first; /* the round of its first chunk */
    const tt_direct_peer_t *peer;
} p2p_call_t;

static void chunk(p2p_run_t *r, const tt_call_t *c, const tt_direct_peer_t *peer, size_t off)
{
    size_t bytes = c->count * tutti_dtype_size(c->dtype), len = bytes - off;
    len = len < r->slot ? len : r->slot;
    if (r->st)
        return;
    const tt_device_rt_t *rt = r->rt;
    if (c->coll == TT_COLL_SEND) {
        unsigned j = atomic_fetch_add_explicit(&r->d->chunks_to[c->root], 1, memory_order_acq_rel) + 1;
        char *at = peer->p2p_out + (size_t)(j & 1) * r->slot;
        /* the first two chunks compare with 0: they pass */
        if (!(r->st = rt->gate(r->s, peer->taken_from, j - 2)) &&
            !(r->st = rt->copy(at, (const char *)c->send + off, len, r->s)))
            r->st = rt->signal(r->s, peer->sent_to, j);
        return;
    }
    unsigned j = atomic_fetch_add_explicit(&r->d->chunks_from[c->root], 1, memory_order_acq_rel) + 1;
    const char *at = peer->p2p_in + (size_t)(j & 1) * r->slot;
    if (!(r->st = rt->gate(r->s, peer->sent_from, j)) &&
        !(r->st = rt->copy((char *)c->recv + off, at, len, r->s)))
        r->st = rt->signal(r->s, peer->taken_to, j);
}

static size_t chunks_of(const p2p_run_t *r, const tt_call_t *c)
{
    return (c->count * tutti_dtype_size(c->dtype) + r->slot - 1) / r->slot;
}

/* Each direct call's first round, after the chunks of the batch's earlier
 * direct calls with the same peer and direction; the number of rounds. */
static size_t plan(const p2p_run_t *r, const tt_call_t *calls, const int *direct, int n, p2p_call_t *at)
{
    size_t rounds = 0;
    for (int i = 0; i < n; i++) {
        at[i].first = 0;
        for (int k = i - 1; k >= 0 && direct[i]; k--)
            if (direct[k] && calls[k].coll == calls[i].coll && calls[k].root == calls[i].root) {
                at[i].first = at[k].first + chunks_of(r, &calls[k]);
                break;
            }
        if (direct[i] && at[i].first + chunks_of(r, &calls[i]) > rounds)
            rounds = at[i].first + chunks_of(r, &calls[i]);
    }
    return rounds;
}

tutti_status_t tt_direct_p2p_put(tt_comm_t *comm, const tt_device_ctx_t *ctx, const tt_call_t *calls,
                                 const int *direct, int n, void *stream)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    p2p_call_t *at = calloc((size_t)n, sizeof *at);
    if (!d || !at) {
        free(at);
        return d ? TUTTI_ERR_NO_MEMORY : TUTTI_ERR_INTERNAL;
    }
    const tt_device_ops_t *dev = tt_comm_device_ops(comm);
    void *tp = tt_comm_device_ctx(comm);
    p2p_run_t r = {.rt = ctx->rt, .s = stream, .d = d};
    for (int i = 0; i < n; i++)
        if (direct[i] && !(at[i].peer = dev->pair(tp, calls[i].root, &r.slot))) {
            free(at); /* both sides agreed on it: its side was open then */
            return TUTTI_ERR_INTERNAL;
        }
    size_t rounds = plan(&r, calls, direct, n, at);
    int one_peer = 1;
    for (int i = 0; i < n; i++)
        one_peer &= calls[i].root == calls[0].root;
    /* With one peer, round by round (an exchange larger than the slots
     * takes turns); with several, every send's chunks before any receive:
     * a receive from one peer must not hold back a chunk another peer
     * waits for (each pair direction of such a batch fits its two slots,
     * device_batch.c, so these sends never wait on this batch). */
    for (int pass = 0; pass < (one_peer ? 1 : 2); pass++)
        for (size_t e = 0; e < rounds && !r.st; e++)
            for (int sends = 1; sends >= 0; sends--)
                for (int i = 0; i < n; i++) {
                    const tt_call_t *c = &calls[i];
                    if (direct[i] && (c->coll == TT_COLL_SEND) == sends && (one_peer || pass != sends) &&
                        e >= at[i].first && e < at[i].first + chunks_of(&r, c))
                        chunk(&r, c, at[i].peer, (e - at[i].first) * r.slot);
                }
    free(at);
    unsigned puts = atomic_fetch_add_explicit(&d->p2p_puts, 1, memory_order_acq_rel) + 1;
    if (!r.st)
        r.st = ctx->rt->signal(stream, &d->words_dev[TT_WORD_P2P], puts);
    for (int i = 0; i < n && !r.st; i++)
        d->direct_messages += direct[i] != 0;
    return r.st;
}

size_t tt_direct_p2p_slot(tt_comm_t *comm, int peer)
{
    size_t slot = 0;
    if (comm->device_tp < 0 || comm->device_bound != 1 ||
        !tt_comm_device_ops(comm)->pair(tt_comm_device_ctx(comm), peer, &slot))
        return 0;
    return slot;
}

uint64_t tt_direct_messages(tt_comm_t *comm)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    return d ? d->direct_messages : 0;
}
