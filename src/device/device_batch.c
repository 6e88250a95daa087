/* SPDX-License-Identifier: MIT */
/*
 * A batch of sends and receives (tt_coll_run_batch) with device buffers;
 * a plain tutti_send or tutti_recv on device buffers is a batch of one.
 * Each message runs directly (direct_p2p.c: GPU work on the caller's
 * stream, no proxy) where both of its sides agree, message by message
 * (tt_comm_pair_*), else staged: the device buffers that are sent go to
 * the host stand-in before the proxy runs those calls there (host memory
 * only), and what arrived goes back after. Whole buffers are staged (no
 * slice overlap): batches serve NCCL's grouped point-to-point calls,
 * which are mostly small. On the stream, the staged messages' inputs go
 * first, then the direct part, then the staged results (queue.c).
 *
 * The agreement, on the caller's thread: every receive's offer first,
 * then every send's decision, then the capable receives wait for theirs.
 * No batch then waits on another rank's batch before writing all it
 * offers: an exchange between two ranks, one batch on each side, agrees
 * whichever comes first, and goes direct when both are on time (a send
 * whose receiver this batch also receives from waits briefly for its
 * offer, as the batch waits for that peer anyway). Both sides must have
 * grouped the pair's messages alike (signature()).
 *
 * A capable receive waits on the calling thread for its sender's decision
 * for a short while only (tt_comm_pair_read_decision), then stages: a pipeline
 * whose thread must go on before the sender can come still works.
 */
#include <stdlib.h>

#include "comm/error.h"
#include "comm/pair.h"
#include "core/hash.h"
#include "device/device_coll.h"
#include "device/direct_run.h"
#include "device/queue.h"

#define STAGE_ALIGN 256
#define EXCHANGE_WAIT_NS 50000000 /* a send's wait for the offer of a peer this batch receives from */

typedef struct {
    int n;
    tt_call_t *calls;        /* the caller's, then their stand-ins after them */
    uint64_t *seqs;          /* each call's number, then the staged ones' */
    int *capable, *direct;   /* by call: this side could run it directly; it does */
    tt_device_span_t *spans; /* the staged sends' (nin of them), then the receives' */
    int nin, nout;
    size_t bytes;
} batch_t;

static void batch_free(void *arg)
{
    batch_t *b = arg;
    free(b->calls);
    free(b->seqs);
    free(b->capable);
    free(b->spans);
    free(b);
}

static int on_device(const tt_call_t *c)
{
    return c->coll == TT_COLL_SEND ? c->send_on_device : c->recv_on_device;
}

static int staged(const batch_t *b, int i)
{
    return on_device(&b->calls[i]) && !b->direct[i];
}

/* Whether capable send i waits briefly for its receiver's offer: the batch
 * receives from that rank too, directly if it can (so it waits for that
 * rank anyway), and no earlier send to it waited in vain. */
static int exchange(const batch_t *b, int i)
{
    int peer = b->calls[i].root, receives = 0;
    for (int k = 0; k < b->n; k++) {
        const tt_call_t *c = &b->calls[k];
        if (c->root != peer || !b->capable[k])
            continue;
        if (c->coll == TT_COLL_SEND && k < i && !b->direct[k])
            return 0;
        receives |= c->coll == TT_COLL_RECV;
    }
    return receives;
}

/*
 * What both sides of message i must have alike for it to go direct: its
 * datatype and count, and the batch's shape with its peer (the numbers of
 * the first message and how many, of each direction, as both sides count
 * them). Direct messages of a batch with one peer go round by round, both
 * directions interleaved; a side that grouped the pair's messages otherwise
 * would interleave them otherwise, and two streams waiting on each other's
 * later chunks would never finish: such messages stage.
 */
static uint64_t signature(const batch_t *b, int i)
{
    const tt_call_t *c = &b->calls[i];
    uint64_t first[2] = {UINT64_MAX, UINT64_MAX}, count[2] = {0, 0}; /* this direction, the other */
    for (int k = 0; k < b->n; k++)
        if (b->calls[k].root == c->root) {
            int d = b->calls[k].coll != c->coll;
            first[d] = b->seqs[k] < first[d] ? b->seqs[k] : first[d];
            count[d]++;
        }
    uint64_t sig[] = {(uint64_t)c->dtype, c->count, first[0], count[0], first[1], count[1]};
    return tt_hash(sig, sizeof sig, TT_HASH_SEED);
}

/* The three steps of the agreement (see the top), in call order each. */
static tutti_status_t agree(tt_comm_t *comm, batch_t *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->calls[i].coll == TT_COLL_RECV)
            TT_TRY(tt_comm_pair_offer(comm, b->calls[i].root, b->seqs[i], b->capable[i], signature(b, i)));
    for (int i = 0; i < b->n; i++)
        if (b->calls[i].coll == TT_COLL_SEND)
            TT_TRY(tt_comm_pair_decide(comm, b->calls[i].root, b->seqs[i], b->capable[i], signature(b, i),
                                       b->capable[i] && exchange(b, i) ? EXCHANGE_WAIT_NS : 0,
                                       &b->direct[i]));
    for (int i = 0; i < b->n; i++)
        if (b->calls[i].coll == TT_COLL_RECV)
            TT_TRY(
                tt_comm_pair_read_decision(comm, b->calls[i].root, b->seqs[i], b->capable[i], &b->direct[i]));
    return TUTTI_SUCCESS;
}

/* Each staged buffer's place in the stand-in: the sends', then the receives'. */
static void place(batch_t *b)
{
    b->nin = b->nout = 0;
    b->bytes = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < b->n; i++) {
            const tt_call_t *c = &b->calls[i];
            if (!staged(b, i) || (c->coll == TT_COLL_SEND) != (pass == 0))
                continue;
            size_t len = pass == 0 ? c->in_bytes : c->out_bytes;
            b->spans[pass == 0 ? b->nin++ : b->nin + b->nout++] =
                (tt_device_span_t){.dev = pass == 0 ? c->send : c->recv, .host_off = b->bytes, .bytes = len};
            b->bytes += (len + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
        }
}

static tutti_status_t begin_batch(tt_comm_t *comm, void *arg, int *direct)
{
    batch_t *b = arg;
    *direct = TT_DIRECT_NONE;
    for (int i = 0; i < b->n; i++) {
        const tt_call_t *c = &b->calls[i];
        if (c->coll != TT_COLL_SEND && c->coll != TT_COLL_RECV)
            return tt_comm_error(comm, TUTTI_ERR_INTERNAL, "a batch holds only sends and receives, not %s",
                                 tt_coll_name(c->coll));
        TT_TRY(tt_coll_p2p_number(comm, c, &b->seqs[i]));
    }
    TT_TRY(agree(comm, b));
    int ndirect = 0;
    for (int i = 0; i < b->n; i++)
        ndirect += b->direct[i] != 0;
    place(b);
    *direct = ndirect == 0 ? TT_DIRECT_NONE : ndirect == b->n ? TT_DIRECT_ALL : TT_DIRECT_PART;
    return TUTTI_SUCCESS;
}

static void replan_batch(void *arg, tt_device_work_t *w)
{
    batch_t *b = arg;
    w->in = b->spans;
    w->nin = b->nin;
    w->out = b->spans + b->nin;
    w->nout = b->nout;
    w->host_bytes = b->bytes;
}

static tutti_status_t put_batch(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *stream, void *arg)
{
    const batch_t *b = arg;
    return tt_direct_p2p_put(comm, ctx, b->calls, b->direct, b->n, stream);
}

/* On the proxy thread, once the sends are in the stand-in: the calls that
 * did not go direct. */
static tutti_status_t run_batch(tt_comm_t *comm, const tt_device_ctx_t *ctx, void *arg)
{
    batch_t *b = arg;
    tt_call_t *host = b->calls + b->n;
    uint64_t *seqs = b->seqs + b->n;
    int m = 0;
    for (int i = 0, in = 0, out = 0; i < b->n; i++) {
        if (b->direct[i])
            continue;
        seqs[m] = b->seqs[i];
        tt_call_t *c = &host[m++];
        *c = b->calls[i];
        if (!staged(b, i))
            continue;
        if (c->coll == TT_COLL_SEND)
            c->send = ctx->host + b->spans[in++].host_off;
        else
            c->recv = ctx->host + b->spans[b->nin + out++].host_off;
    }
    return tt_coll_run_batch_at(comm, host, m, seqs);
}

/*
 * Whether call i could run directly: its buffer on the communicator's GPU,
 * its peer's side open. In a batch with more than one peer, only while its
 * pair direction's messages in the batch take at most the two slots (in
 * chunks): such a batch puts every send's chunks before any receive
 * (direct_p2p.c), and sends that need no slot back from their receiver
 * never wait on this batch's receives, so a peer that groups its own
 * messages with a third rank otherwise cannot wait on them in a cycle (the
 * stream model shows the cycle without either rule). The staged messages'
 * inputs go before the direct part too (queue.c).
 */
static int capable(tt_comm_t *comm, const batch_t *b, int i, int device)
{
    const tt_call_t *c = &b->calls[i];
    const void *buf = c->coll == TT_COLL_SEND ? c->send : c->recv;
    size_t slot = tt_direct_p2p_slot(comm, c->root), pair_chunks = 0;
    int there = -1, one_peer = 1;
    if (!on_device(c) || !slot || tt_device_runtime()->device_of(buf, &there) || there != device)
        return 0;
    for (int k = 0; k < b->n; k++) {
        const tt_call_t *o = &b->calls[k];
        one_peer &= o->root == c->root;
        if (o->root == c->root && o->coll == c->coll)
            pair_chunks += (o->count * tutti_dtype_size(o->dtype) + slot - 1) / slot;
    }
    return one_peer || pair_chunks <= 2;
}

static batch_t *batch_new(const tt_call_t *calls, int n)
{
    batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->n = n;
    b->calls = calloc(2 * (size_t)n, sizeof *b->calls);
    b->seqs = calloc(2 * (size_t)n, sizeof *b->seqs);
    b->capable = calloc(2 * (size_t)n, sizeof *b->capable);
    b->spans = calloc((size_t)n, sizeof *b->spans);
    if (!b->calls || !b->seqs || !b->capable || !b->spans) {
        batch_free(b);
        return NULL;
    }
    b->direct = b->capable + n;
    for (int i = 0; i < n; i++)
        b->calls[i] = calls[i];
    return b;
}

tutti_status_t tt_device_batch_enqueue(tt_comm_t *comm, const tt_call_t *calls, int n, void *stream,
                                       const char *name)
{
    TT_TRY(tt_device_refuse_capture(comm, name, stream));
    batch_t *b = batch_new(calls, n);
    if (!b)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory to queue a batch of %d calls", name,
                             n);
    const void *first = NULL;
    for (int i = 0; i < n && !first; i++)
        if (on_device(&calls[i]))
            first = calls[i].coll == TT_COLL_SEND ? calls[i].send : calls[i].recv;
    int device, ready;
    tutti_status_t st = tt_device_of(comm, first, name, &device);
    /* The first device call binds the device transport (publishing this
     * rank's window); every one opens the windows peers published since. */
    if (!st && (st = tt_direct_prepare(comm, device, &ready)) != TUTTI_SUCCESS)
        st = tt_comm_error(comm, st, "%s: opening the peers' windows", name);
    if (st) {
        batch_free(b);
        return st;
    }
    for (int i = 0; i < n; i++)
        b->capable[i] = capable(comm, b, i, device);
    tt_device_work_t work = {.name = name,
                             .begin = begin_batch,
                             .replan = replan_batch,
                             .direct = put_batch,
                             .run = run_batch,
                             .release = batch_free,
                             .arg = b};
    return tt_device_enqueue(comm, device, &work, stream);
}
