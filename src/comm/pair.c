/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point agreement (comm.h): per pair and direction, message by
 * message, whether a message runs directly on the device buffers. Two
 * ranks only take part, and messages between them match in order, so the
 * two sides count them (send_seq, recv_seq) and agree on each through the
 * device transport's rings, as collectives agree on the board:
 * - the receiver leads and never waits for the sender before writing: its
 *   offer for k says whether it could receive k directly; only a capable
 *   receiver then waits for the sender's decision, for a short while
 *   (TT_PAIR_RECEIVE_WAIT_NS), after which it withdraws the offer and the
 *   message stages unless the sender took it meanwhile;
 * - the sender never waits for the receiver (but for a short, bounded
 *   while, where the caller asks): k is direct when the receiver's offer
 *   is there, capable, of the same signature, and the sender is capable;
 *   a receiver that arrives late gets a staged message, correct and
 *   slower; the sender writes its decision for every message.
 * Host calls pay one store (a send's decision) or two (a receive's offer
 * and its "took"). The waits run on the caller's thread; a ring's wait
 * (ranks a ring of messages apart) has the communicator's timeout, and
 * every wait ends on abort, revocation or a dead peer.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#include "comm/agree.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "comm/pair.h"
#include "core/clock.h"
#include "core/log.h"
#include "transports/device.h"

#define ALIVE_EVERY_NS 20000000 /* between liveness checks while waiting */

/* How long a capable receiver waits for its sender's decision before it
 * withdraws its offer and the message stages. Without a bound, a receive
 * would hold the calling thread until its sender comes, and a thread
 * that must go on to let the sender come (a pipeline's other
 * communicator, a send after this receive on another stream) would wait
 * forever, where a staged receive returns at once. */
static _Atomic int64_t receive_wait_ns = TT_PAIR_RECEIVE_WAIT_NS;

void tt_comm_pair_set_receive_wait(int64_t ns)
{
    atomic_store_explicit(&receive_wait_ns, ns, memory_order_relaxed);
}

typedef int (*pair_poll_t)(tt_comm_t *comm, const tt_device_ops_t *dev, void *ctx, int peer, uint64_t k,
                           void *arg);

/* Polls until poll says 1. limit_ns > 0: gives up quietly after it (*late);
 * else a timeout fails the communicator. A peer that died or gave up, news
 * or an abort fail it too (said, naming the peer). */
static tutti_status_t wait_pair(tt_comm_t *comm, int peer, uint64_t k, const char *what, pair_poll_t poll,
                                void *arg, int64_t limit_ns, int *late)
{
    const tt_device_ops_t *dev = tt_comm_device_ops(comm);
    void *ctx = tt_comm_device_ctx(comm);
    int64_t now = tt_now_ns(), deadline = now + (limit_ns > 0 ? limit_ns : comm->timeout_ms * 1000000);
    int64_t next_alive = now + ALIVE_EVERY_NS;
    char call[96];
    snprintf(call, sizeof call, "%s message #%llu with rank %d", what, (unsigned long long)k, peer);
    while (!poll(comm, dev, ctx, peer, k, arg)) {
        sched_yield();
        now = tt_now_ns();
        if (limit_ns > 0 && now > deadline) {
            *late = 1;
            return TUTTI_SUCCESS;
        }
        if (now < next_alive)
            continue;
        next_alive = now + ALIVE_EVERY_NS;
        if (tt_comm_wait_ended(comm, call, UINT64_MAX))
            return comm->failed ? comm->failed : TUTTI_ERR_ABORTED;
        const tt_peer_t *p = &comm->device_peers[peer];
        tutti_status_t st = p->ops ? p->ops->alive(p->conn) : TUTTI_SUCCESS;
        if (!st && now > deadline)
            st = tt_comm_error(comm, TUTTI_ERR_TIMEOUT,
                               "%s: timeout after %lld ms: rank %d did not reach it (TUTTI_TIMEOUT)", call,
                               (long long)comm->timeout_ms, peer);
        else if (st)
            st = tt_comm_error(comm, st, "%s: rank %d %s before reaching it", call, peer,
                               st == TUTTI_ERR_ABORTED ? "aborted after an error" : "died");
        if (st) {
            tt_comm_fail(comm, st);
            return st;
        }
    }
    return TUTTI_SUCCESS;
}

static int offer_room(tt_comm_t *comm, const tt_device_ops_t *dev, void *ctx, int peer, uint64_t k, void *arg)
{
    (void)comm;
    const uint64_t *v = arg; /* capable, sig */
    return dev->offer(ctx, peer, k, (int)v[0], v[1]) == 0;
}

tutti_status_t tt_comm_pair_offer(tt_comm_t *comm, int sender, uint64_t k, int capable, uint64_t sig)
{
    if (comm->device_tp < 0)
        return TUTTI_SUCCESS;
    uint64_t v[2] = {(uint64_t)capable, sig};
    int late = 0;
    return wait_pair(comm, sender, k, "receiving", offer_room, v, 0, &late);
}

/* The sender's taking of the offer: v[0] = what claim said. */
static int offer_taken(tt_comm_t *comm, const tt_device_ops_t *dev, void *ctx, int peer, uint64_t k,
                       void *arg)
{
    (void)comm;
    int64_t *v = arg; /* in: the signature; out: what claim said */
    v[0] = dev->claim(ctx, peer, k, (uint64_t)v[1]);
    return v[0] >= 0;
}

static int decision_room(tt_comm_t *comm, const tt_device_ops_t *dev, void *ctx, int peer, uint64_t k,
                         void *arg)
{
    (void)comm;
    return dev->decide(ctx, peer, k, *(const int *)arg) == 0;
}

tutti_status_t tt_comm_pair_decide(tt_comm_t *comm, int receiver, uint64_t k, int capable, uint64_t sig,
                                   int64_t wait_ns, int *direct)
{
    *direct = 0;
    if (comm->device_tp < 0)
        return TUTTI_SUCCESS;
    const tt_device_ops_t *dev = tt_comm_device_ops(comm);
    void *ctx = tt_comm_device_ctx(comm);
    if (capable) {
        int64_t v[2] = {-1, (int64_t)sig};
        int late = 0;
        tutti_status_t st = offer_taken(comm, dev, ctx, receiver, k, v) || wait_ns <= 0
                                ? TUTTI_SUCCESS
                                : wait_pair(comm, receiver, k, "sending", offer_taken, v, wait_ns, &late);
        if (st)
            return st;
        *direct = v[0] == 1;
    }
    int late = 0;
    return wait_pair(comm, receiver, k, "sending", decision_room, direct, 0, &late);
}

static int decided(tt_comm_t *comm, const tt_device_ops_t *dev, void *ctx, int peer, uint64_t k, void *arg)
{
    (void)comm;
    int said = dev->decision(ctx, peer, k);
    *(int *)arg = said > 0;
    return said >= 0;
}

tutti_status_t tt_comm_pair_read_decision(tt_comm_t *comm, int sender, uint64_t k, int offered, int *direct)
{
    *direct = 0;
    if (comm->device_tp < 0)
        return TUTTI_SUCCESS;
    const tt_device_ops_t *dev = tt_comm_device_ops(comm);
    void *ctx = tt_comm_device_ctx(comm);
    int late = 0;
    int64_t wait_ns = atomic_load_explicit(&receive_wait_ns, memory_order_relaxed);
    tutti_status_t st = TUTTI_SUCCESS;
    if (offered)
        st = wait_pair(comm, sender, k, "receiving", decided, direct, wait_ns, &late);
    /* A sender this late gets a staged message; one that took the offer
     * meanwhile is deciding now: its decision comes at once. */
    if (!st && late && !dev->withdraw(ctx, sender, k))
        st = wait_pair(comm, sender, k, "receiving", decided, direct, 0, &late);
    if (!st)
        dev->took(ctx, sender, k);
    return st;
}
