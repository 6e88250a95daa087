/* SPDX-License-Identifier: MIT */
/*
 * Receiving from any source. A message starts on channel 0 with its header,
 * and the header arrives whether or not the receiver posted anything (in
 * the socket, or in the first slot of a ring). So the receiver waits until
 * some peer's next header on channel 0 is a send carrying the number this
 * rank expects from that peer, then receives it exactly as tutti_recv from
 * that peer would: the sender makes a plain tutti_send and knows nothing of
 * it. Peers are asked in turn from the one after the last sender, so one
 * busy sender cannot starve the others.
 */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "coll/coll.h"
#include "coll/state.h"
#include "comm/connect.h"
#include "comm/error.h"
#include "comm/news.h"
#include "core/clock.h"
#include "core/dtype.h"

#define YIELDING_POLLS 1000 /* polls that only yield the CPU before the wait naps */
#define NAP_NS 50000
#define ALIVE_CHECK_NS 20000000 /* between scans of the peers' liveness */
#define NO_ONE_PEER (-1) /* the who-is-stuck report's peer while the sender is unknown */

/* Every peer's transport must be able to tell a message has arrived. */
static tutti_status_t check_transports(tt_comm_t *comm, const char *call)
{
    if (comm->nranks < 2)
        return tt_comm_error(comm, TUTTI_ERR_INVALID_ARG, "%s: rank %d has no other rank to receive from",
                             call, comm->rank);
    /* Any transport that may serve a peer: a pair connects when its sender
     * first sends, which a receive from any source cannot foresee. */
    for (int t = 0; t < comm->ntransports; t++)
        if ((comm->tp_ops[t]->caps & TT_CAP_HOST_MEM) && (comm->tp_all >> t & 1) && !comm->tp_ops[t]->peek)
            return tt_comm_error(
                comm, TUTTI_ERR_UNSUPPORTED,
                "%s: rank %d may be reached over %s, which cannot tell a message has arrived; "
                "name the source rank",
                call, comm->rank, comm->tp_ops[t]->name);
    return TUTTI_SUCCESS;
}

/* The first peer from `first` on (in rank order, round the ranks) whose
 * next message to this rank is a send; -1 if none yet. Only connected
 * peers can have sent: a sender asks for the pair first, and the
 * connections asked for are completed here. */
static int find_sender(tt_comm_t *comm, int first, tutti_status_t *st)
{
    int best = -1, best_dist = comm->nranks;
    if ((*st = tt_comm_connect_asked(comm)) != TUTTI_SUCCESS)
        return -1;
    for (int i = 0; i < comm->nconnected; i++) {
        int q = comm->connected[i], dist = (q - first + comm->nranks) % comm->nranks;
        const tt_peer_t *peer = &comm->peers[q];
        int progressed = 0;
        tt_msg_hdr_t hdr;
        if (dist >= best_dist)
            continue;
        peer->ops->progress(peer->conn, &progressed); /* some transports learn of arrivals only here */
        /* A connection shared with the parent may hold the parent's message first. */
        if (peer->ops->peek(peer->conn, 0, &hdr) && hdr.magic == TT_MSG_MAGIC && hdr.coll == TT_COLL_SEND &&
            hdr.comm == tt_comm_wire_tag(comm) && hdr.seq == comm->recv_seq[q]) {
            best = q;
            best_dist = dist;
        }
    }
    return best;
}

/* News from the other ranks, or a peer that died or gave up: the wait ends. */
static tutti_status_t check_peers(tt_comm_t *comm, const char *call)
{
    tutti_status_t st = tt_comm_news(comm, call, UINT64_MAX);
    for (int i = 0; !st && i < comm->nconnected; i++) {
        int q = comm->connected[i];
        tutti_status_t gone = comm->peers[q].ops->alive(comm->peers[q].conn);
        if (gone)
            st = tt_comm_error(comm, TUTTI_ERR_PEER_FAILED, "%s: rank %d %s", call, q,
                               gone == TUTTI_ERR_ABORTED ? "aborted after an error"
                                                         : "died or lost its connection");
    }
    if (st)
        tt_comm_fail(comm, st);
    return st;
}

static void nap(long polls)
{
    if (polls < YIELDING_POLLS) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, NAP_NS};
    nanosleep(&ts, NULL);
}

/* Waits for a peer whose next message to this rank is a send; *source gets it. */
static tutti_status_t wait_for_sender(tt_comm_t *comm, const char *call, int first, int *source)
{
    int64_t start = tt_now_ns(), next_check = start + ALIVE_CHECK_NS;
    tutti_status_t st;
    for (long polls = 0; (*source = find_sender(comm, first, &st)) < 0; polls++) {
        if (st)
            return st;
        if (atomic_load_explicit(&comm->aborting, memory_order_relaxed))
            return tt_comm_error(comm, TUTTI_ERR_ABORTED,
                                 "%s: interrupted on rank %d: the communicator is being aborted", call,
                                 comm->rank);
        nap(polls);
        int64_t now = tt_now_ns();
        if (now >= next_check) {
            next_check = now + ALIVE_CHECK_NS;
            TT_TRY(check_peers(comm, call));
        }
        /* Nothing was taken from any peer: the communicator stays usable. */
        if (now - start > comm->timeout_ms * 1000000)
            return tt_comm_error(
                comm, TUTTI_ERR_TIMEOUT,
                "%s: timeout after %lld ms: no rank sent anything to rank %d (TUTTI_TIMEOUT)", call,
                (long long)comm->timeout_ms, comm->rank);
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_coll_recv_any(tt_comm_t *comm, tt_call_t *c, int *source)
{
    char call[96];
    snprintf(call, sizeof call, "recv from any source (count %zu, %s)", c->count, tutti_dtype_name(c->dtype));
    TT_TRY(check_transports(comm, call));
    tt_coll_state_t *cs = tt_coll_state(comm);
    if (!cs)
        return TUTTI_ERR_NO_MEMORY;
    /* Where it waits, for the who-is-stuck report: in a receive, on no one peer. */
    tt_progress_begin(&comm->progress, 0, TT_COLL_RECV, c->dtype, c->op, NO_ONE_PEER, c->count);
    tutti_status_t st = wait_for_sender(comm, call, cs->any_next, source);
    tt_progress_end(&comm->progress);
    if (st)
        return st;
    cs->any_next = (*source + 1) % comm->nranks;
    c->root = *source;
    c->any_source = 0;
    return tt_coll_run(comm, c);
}
