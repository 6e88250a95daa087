/* SPDX-License-Identifier: MIT */
/*
 * Host connections made at first use, one pair at a time, only to the
 * peers a rank's calls name (a collective's schedule names its peers on
 * both sides, a send meets its receive), so a rank's descriptors and
 * memory grow with the peers it talks to, not with the communicator.
 *
 * The rank that needs a pair first sends the peer an offer (its side of
 * the pair's transport, transports/transport.h) as a bootstrap message;
 * the peer's bootstrap thread answers it at once, whatever the peer's main
 * thread does, and both sides join the two halves into a connection when
 * they use it. When both offer at once, the lower rank's offer stands and
 * the higher rank answers it. A transport that cannot serve the pair now
 * (shm with its pool spent) declines, and the pair tries the next one.
 * Which transport a pair takes is the first every rank offers that reaches
 * it; every rank can tell that for any pair from the endpoints, which is
 * also how tt_comm_link prices a pair without a table of them all.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/connect.h"
#include "comm/error.h"
#include "comm/lend.h"
#include "comm/news.h"
#include "comm/star.h"
#include "core/clock.h"
#include "core/log.h"

#define TAG_OFFER 1
#define TAG_ANSWER 2
#define CAUSE_WAIT_MS 200 /* how long a failed connection waits to see why the peer went */
#define STEP_MS 50        /* between looks at the news while waiting for answers */
#define JOIN_STEP_MS 1    /* ... and for the other side's part of a pair this rank answered */
#define TP_BORROW (-1)    /* a pair's "transport" when it takes the parent's connection (lend.h) */
#define NO_TP (-2)

typedef struct {
    int32_t tp;     /* the transport: its index in comm->tp_ops */
    int32_t status; /* an answer's: TUTTI_SUCCESS, or TUTTI_ERR_UNSUPPORTED (declined) */
    uint32_t len;
    uint32_t pad;
    unsigned char blob[TT_ADDR_MAX];
} pair_msg_t;

enum { PAIR_NONE = 0, PAIR_ASKED, PAIR_ANSWERED, PAIR_READY };

/* What an offer to borrow carries: the parent's pair, as the asker sees it. */
typedef struct {
    uint64_t lender_tag;
    int32_t asker, answerer; /* their ranks in the parent */
} borrow_msg_t;

typedef struct {
    int state;
    int tp;
    uint32_t len;
    unsigned char theirs[TT_ADDR_MAX]; /* ANSWERED: the peer's offer */
    tt_peer_t lent;                    /* tp TP_BORROW: the parent's connection */
} pair_t;

struct tt_pairs {
    pthread_mutex_t lock;  /* the states, and the transports' offer, answer and withdraw */
    pair_t **of;           /* by rank, made when first touched */
    _Atomic int nanswered; /* pairs answered but not joined yet */
};

int tt_comm_reaches(tt_comm_t *comm, int t, int a, int b)
{
    tt_tp_env_t as_a = comm->env;
    as_a.rank = a;
    return comm->tp_ops[t]->reachable(&as_a, b);
}

tt_link_t tt_comm_link(tt_comm_t *comm, int a, int b)
{
    for (int t = 0; t < comm->ntransports; t++)
        if ((comm->tp_ops[t]->caps & TT_CAP_HOST_MEM) && (comm->tp_all >> t & 1) &&
            tt_comm_reaches(comm, t, a, b))
            return comm->tp_ops[t]->link;
    return TT_LINK_SHM;
}

int tt_comm_host_tp(tt_comm_t *comm, int q, int from)
{
    for (int t = from; t < comm->ntransports; t++) {
        const tt_transport_ops_t *ops = comm->tp_ops[t];
        if ((ops->caps & TT_CAP_HOST_MEM) && (comm->tp_all >> t & 1) && comm->tp_ctx[t] &&
            tt_comm_reaches(comm, t, comm->rank, q))
            return t;
    }
    return -1;
}

/* Rank q's entry, made when first asked for; under the lock. */
static pair_t *pair_of(tt_comm_t *comm, int q)
{
    pair_t **p = &comm->pairs->of[q];
    if (!*p)
        *p = calloc(1, sizeof **p);
    return *p;
}

/* The asker listened before it asked: a refusal means it has closed the
 * communicator since, so the answer is not tried again (this is the star's
 * thread, which the rest of the tree waits on). */
static tutti_status_t asker_gone(void *arg)
{
    (void)arg;
    return TUTTI_ERR_PEER_FAILED;
}

static tutti_status_t watch(tt_comm_t *comm, const int *peers, int n, uint64_t seq, int64_t deadline);

/* While q's listener refuses the offer: a revocation, an abort or a peer
 * gone ends the wait at once (q may have closed the communicator). */
static tutti_status_t offer_watch(void *arg)
{
    return watch(arg, NULL, 0, UINT64_MAX, INT64_MAX);
}

/* This rank's side over transport t (or the parent's connection); 0, or
 * TUTTI_ERR_UNSUPPORTED when it cannot serve the pair. */
static tutti_status_t offer_side(tt_comm_t *comm, int q, pair_t *p, int t, pair_msg_t *m)
{
    size_t len = 0;
    tutti_status_t st = TUTTI_ERR_UNSUPPORTED;
    if (t == TP_BORROW && tt_lend_offers(comm, q, &p->lent)) {
        borrow_msg_t b;
        tt_lend_names(comm, q, &b.lender_tag, &b.asker, &b.answerer);
        memcpy(m->blob, &b, sizeof b);
        len = sizeof b;
        st = TUTTI_SUCCESS;
    } else if (t >= 0) {
        tt_log_fault_mark();
        st = comm->tp_ops[t]->offer(comm->tp_ctx[t], q, m->blob, &len);
    }
    m->tp = t;
    m->len = (uint32_t)len;
    return st;
}

/* The transport after t that reaches q (TP_BORROW comes before them all); NO_TP: none. */
static int next_tp(tt_comm_t *comm, int q, int t)
{
    int next = tt_comm_host_tp(comm, q, t + 1);
    return next < 0 ? NO_TP : next;
}

/* Offers q this rank's side over the first transport from `from` that can
 * take it (TP_BORROW: the parent's connection first); under the lock,
 * which it drops while sending. */
static tutti_status_t ask(tt_comm_t *comm, int q, pair_t *p, int from)
{
    for (int t = from == TP_BORROW ? TP_BORROW : next_tp(comm, q, from - 1); t != NO_TP;
         t = next_tp(comm, q, t)) {
        pair_msg_t m;
        memset(&m, 0, sizeof m);
        tutti_status_t st = offer_side(comm, q, p, t, &m);
        if (st == TUTTI_ERR_UNSUPPORTED)
            continue;
        if (st)
            return tt_comm_context(comm, st, "rank %d: preparing %s for rank %d failed", comm->rank,
                                   comm->tp_ops[t]->name, q);
        p->state = PAIR_ASKED;
        p->tp = t;
        pthread_mutex_unlock(&comm->pairs->lock);
        tt_log_fault_mark();
        st = tt_star_send_msg_watched(comm->bs.star, &comm->listeners[q], q, TAG_OFFER, &m, sizeof m,
                                      tt_now_ms() + comm->timeout_ms, offer_watch, comm);
        pthread_mutex_lock(&comm->pairs->lock);
        tutti_status_t rv = st ? tt_comm_revoked(comm, "connecting to the peers") : TUTTI_SUCCESS;
        if (rv)
            return rv; /* q closed its listener with the communicator: the revocation says why */
        return st ? tt_comm_context(comm, st, "rank %d: asking rank %d for a connection failed", comm->rank,
                                    q)
                  : TUTTI_SUCCESS;
    }
    return tt_comm_error_in(comm, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                            "no transport in TUTTI_TRANSPORTS can connect rank %d with rank %d%s", comm->rank,
                            q, from > 0 ? " (the first ones had no room left for the pair)" : "");
}

/* This rank's answer to from's offer m: over the transport it names, or
 * taking the parent's connection when both ranks mean the same pair and
 * this rank holds it; TUTTI_ERR_UNSUPPORTED when it cannot. */
static tutti_status_t answer_side(tt_comm_t *comm, int from, pair_t *p, const pair_msg_t *m, pair_msg_t *a,
                                  size_t *alen)
{
    int t = m->tp;
    if (t == TP_BORROW) {
        borrow_msg_t theirs, mine;
        memcpy(&theirs, m->blob, sizeof theirs);
        tt_lend_names(comm, from, &mine.lender_tag, &mine.answerer, &mine.asker);
        int same = m->len == sizeof theirs && theirs.lender_tag == mine.lender_tag &&
                   theirs.asker == mine.asker && theirs.answerer == mine.answerer;
        return same && tt_lend_offers(comm, from, &p->lent) ? TUTTI_SUCCESS : TUTTI_ERR_UNSUPPORTED;
    }
    if (t >= 0 && t < comm->ntransports && m->len <= TT_ADDR_MAX && comm->tp_ops[t]->answer &&
        (comm->tp_all >> t & 1) && comm->tp_ctx[t])
        return comm->tp_ops[t]->answer(comm->tp_ctx[t], from, m->blob, m->len, a->blob, alen);
    return TUTTI_ERR_UNSUPPORTED;
}

/* On the bootstrap's thread: another rank's offer, answered at once. */
static int on_mail(void *arg, int from, uint64_t tag, const void *payload, size_t len)
{
    tt_comm_t *comm = arg;
    if (tag != TAG_OFFER)
        return 0; /* answers are the main thread's */
    pair_msg_t m, a = {0};
    if (len != sizeof m || from == comm->rank)
        return 1;
    memcpy(&m, payload, sizeof m);
    pthread_mutex_lock(&comm->pairs->lock);
    pair_t *p = pair_of(comm, from);
    /* Both offered: the lower rank's offer stands, the higher answers it. */
    if (!p || p->state == PAIR_READY || p->state == PAIR_ANSWERED ||
        (p->state == PAIR_ASKED && from > comm->rank)) {
        pthread_mutex_unlock(&comm->pairs->lock);
        return 1;
    }
    if (p->state == PAIR_ASKED && p->tp != TP_BORROW)
        comm->tp_ops[p->tp]->withdraw(comm->tp_ctx[p->tp], from);
    p->state = PAIR_NONE;
    int t = m.tp;
    size_t alen = 0;
    tutti_status_t st = answer_side(comm, from, p, &m, &a, &alen);
    if (!st) {
        p->state = PAIR_ANSWERED;
        p->tp = t;
        p->len = m.len;
        memcpy(p->theirs, m.blob, m.len);
        atomic_fetch_add(&comm->pairs->nanswered, 1);
    }
    pthread_mutex_unlock(&comm->pairs->lock);
    a.tp = t;
    a.status = st ? TUTTI_ERR_UNSUPPORTED : TUTTI_SUCCESS;
    a.len = (uint32_t)alen;
    /* A peer gone meanwhile is news of its own. */
    tt_star_send_msg_watched(comm->bs.star, &comm->listeners[from], from, TAG_ANSWER, &a, sizeof a,
                             tt_now_ms() + comm->timeout_ms, asker_gone, NULL);
    tt_star_mail_kick(comm->bs.star); /* this rank's main thread may wait for the pair */
    return 1;
}

/* Joins the two halves of pair p (or takes the parent's connection): 1
 * connected, 0 not yet (the answering side waits for the offering side's
 * part), or an error in *err. */
static int join(tt_comm_t *comm, int q, const pair_t *p, int offered, const void *theirs, size_t len,
                tutti_status_t *err)
{
    int t = p->tp;
    tt_peer_t peer = p->lent;
    if (t != TP_BORROW) {
        void *conn = NULL;
        tt_log_fault_mark();
        tutti_status_t st = comm->tp_ops[t]->join(comm->tp_ctx[t], q, offered, theirs, len, &conn);
        if (st) {
            *err = tt_comm_context(comm, st, "rank %d: %s connection to rank %d failed", comm->rank,
                                   comm->tp_ops[t]->name, q);
            return -1;
        }
        if (!conn)
            return 0;
        peer = (tt_peer_t){comm->tp_ops[t], conn};
    } else
        comm->borrowed[q] = 1;
    comm->peers[q] = peer;
    comm->connected[comm->nconnected++] = q;
    atomic_store_explicit(&comm->joined[q], 1, memory_order_release); /* a borrower may take it now */
    TT_DEBUG(TT_SUB_INIT, "rank %d: connected to rank %d over %s (%s)", comm->rank, q,
             t == TP_BORROW ? "the parent's connection" : comm->tp_ops[t]->name,
             offered ? "it answered" : "it asked");
    return 1;
}

/* Moves the pair with q on: 1 once connected, 0 not yet (*answering: this
 * rank waits for the other side's part of a pair it answered), -1 on an
 * error (in *err). */
static int advance(tt_comm_t *comm, int q, int *answering, tutti_status_t *err)
{
    struct tt_pairs *ps = comm->pairs;
    pthread_mutex_lock(&ps->lock);
    pair_t *p = pair_of(comm, q), copy = p ? *p : (pair_t){0};
    tutti_status_t st = p ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    if (!st && p->state == PAIR_NONE)
        st = ask(comm, q, p, TP_BORROW);
    pthread_mutex_unlock(&ps->lock);
    pair_msg_t a;
    size_t len;
    int rc = 0;
    if (st) {
        *err = st;
        return -1;
    }
    if (copy.state == PAIR_ANSWERED) {
        if ((rc = join(comm, q, &copy, 0, copy.theirs, copy.len, err)) > 0)
            atomic_fetch_sub(&ps->nanswered, 1);
        *answering |= rc == 0;
    } else if (copy.state == PAIR_ASKED &&
               tt_star_take_msg(comm->bs.star, q, TAG_ANSWER, &a, sizeof a, &len)) {
        if (len != sizeof a || a.tp != copy.tp || a.len > TT_ADDR_MAX)
            return 0;                    /* an answer to an offer this rank has moved past */
        if (a.status != TUTTI_SUCCESS) { /* declined: the next transport */
            pthread_mutex_lock(&ps->lock);
            if (copy.tp != TP_BORROW)
                comm->tp_ops[copy.tp]->withdraw(comm->tp_ctx[copy.tp], q);
            st = ask(comm, q, p, copy.tp + 1);
            pthread_mutex_unlock(&ps->lock);
            *err = st;
            return st ? -1 : 0;
        }
        /* The offering side joins at once and never waits. */
        rc = join(comm, q, &copy, 1, a.blob, a.len, err);
    }
    if (rc > 0) {
        pthread_mutex_lock(&ps->lock);
        p->state = PAIR_READY;
        pthread_mutex_unlock(&ps->lock);
    }
    return rc;
}

/* A peer that died or gave up in call seq or before it, an abort, or the
 * deadline ends the wait. */
static tutti_status_t watch(tt_comm_t *comm, const int *peers, int n, uint64_t seq, int64_t deadline)
{
    tutti_status_t st = tt_comm_news(comm, "connecting to the peers", seq);
    if (st)
        return st;
    if (atomic_load_explicit(&comm->aborting, memory_order_relaxed))
        return tt_comm_error(comm, TUTTI_ERR_ABORTED, "rank %d: interrupted while connecting to its peers",
                             comm->rank);
    if (tt_now_ms() < deadline)
        return TUTTI_SUCCESS;
    for (int i = 0; i < n; i++)
        if (peers[i] != comm->rank && !comm->peers[peers[i]].ops)
            return tt_comm_error(
                comm, TUTTI_ERR_TIMEOUT,
                "rank %d: rank %d did not take part in making their connection within %lld ms "
                "(TUTTI_TIMEOUT): is it in the same call?",
                comm->rank, peers[i], (long long)comm->timeout_ms);
    return TUTTI_SUCCESS;
}

/* A peer that failed the connection has usually revoked the communicator
 * or given up and closed it, and said so on the star a moment before:
 * look again briefly, so that the call reports that, not the closed socket. */
static tutti_status_t cause(tt_comm_t *comm, tutti_status_t st)
{
    if (st == TUTTI_ERR_TIMEOUT || st == TUTTI_ERR_NO_MEMORY || st == TUTTI_ERR_CONFIG)
        return st;
    /* An abort or a revocation cut a transport's set-up short (verbs' asking
     * side): said at once, as any wait of the connecting says it. */
    if (atomic_load_explicit(&comm->aborting, memory_order_relaxed))
        return watch(comm, NULL, 0, UINT64_MAX, INT64_MAX);
    for (int64_t until = tt_now_ms() + CAUSE_WAIT_MS; !tt_comm_has_news(comm) && tt_now_ms() < until;)
        tt_star_wait_mail(comm->bs.star, tt_now_ms() + STEP_MS);
    /* The connection failed already: whichever call the news is of says why. */
    tutti_status_t why = tt_comm_news(comm, "connecting to the peers", UINT64_MAX);
    return why ? why : st;
}

tutti_status_t tt_comm_connect(tt_comm_t *comm, const int *peers, int n, uint64_t seq)
{
    if (!comm->pairs)
        return TUTTI_SUCCESS;
    int64_t deadline = tt_now_ms() + comm->timeout_ms;
    for (;;) {
        int missing = 0, answering = 0;
        for (int i = 0; i < n; i++) {
            int q = peers[i], rc;
            tutti_status_t st;
            if (q == comm->rank || comm->peers[q].ops)
                continue;
            if ((rc = advance(comm, q, &answering, &st)) < 0)
                return cause(comm, st);
            missing += rc == 0;
        }
        if (!missing)
            return TUTTI_SUCCESS;
        TT_TRY(watch(comm, peers, n, seq, deadline));
        /* Answers wake the wait; the other side's part of a pair this rank
         * answered (a socket it dials) does not: look again soon. */
        tt_star_wait_mail(comm->bs.star, tt_now_ms() + (answering ? JOIN_STEP_MS : STEP_MS));
    }
}

tutti_status_t tt_comm_connect_asked(tt_comm_t *comm)
{
    if (!comm->pairs || !atomic_load_explicit(&comm->pairs->nanswered, memory_order_relaxed))
        return TUTTI_SUCCESS;
    for (int q = 0; q < comm->nranks; q++) {
        pthread_mutex_lock(&comm->pairs->lock);
        int asked = comm->pairs->of[q] && comm->pairs->of[q]->state == PAIR_ANSWERED;
        pthread_mutex_unlock(&comm->pairs->lock);
        if (asked)
            TT_TRY(tt_comm_connect(comm, &q, 1, UINT64_MAX));
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_comm_pairs_init(tt_comm_t *comm)
{
    comm->peers = calloc((size_t)comm->nranks, sizeof *comm->peers);
    comm->connected = calloc((size_t)comm->nranks, sizeof *comm->connected);
    comm->joined = calloc((size_t)comm->nranks, sizeof *comm->joined);
    if (!comm->peers || !comm->connected || !comm->joined)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d peers", comm->rank,
                             comm->nranks);
    if (!comm->bs.star)
        return TUTTI_SUCCESS;
    struct tt_pairs *ps = calloc(1, sizeof *ps);
    if (!ps || !(ps->of = calloc((size_t)comm->nranks, sizeof *ps->of))) {
        free(ps);
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d peers", comm->rank,
                             comm->nranks);
    }
    pthread_mutex_init(&ps->lock, NULL);
    comm->pairs = ps;
    tt_star_on_mail(comm->bs.star, on_mail, comm);
    return TUTTI_SUCCESS;
}

void tt_comm_pairs_free(tt_comm_t *comm, int local_only)
{
    struct tt_pairs *ps = comm->pairs;
    if (!ps)
        return;
    /* A forked child has no star thread, and its copies of the star's mail
     * lock and of ps->lock are held for good if the parent's star thread
     * was answering an offer at the fork: it takes neither. */
    if (comm->bs.star && !local_only)
        tt_star_on_mail(comm->bs.star, NULL, NULL);
    for (int q = 0; q < comm->nranks; q++)
        free(ps->of[q]);
    free(ps->of);
    if (!local_only)
        pthread_mutex_destroy(&ps->lock);
    free(ps);
    comm->pairs = NULL;
}
