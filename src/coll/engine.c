/* SPDX-License-Identifier: MIT */
/* Schedule execution. Each lane owns one transport channel to every peer and walks
 * its slices one round at a time: post the round's sends and receives, do its local
 * copies and reductions, move on when its requests are complete. Lanes interleave, so
 * several slices are in flight; per-channel FIFO order matches on both sides because
 * both walk the same schedule. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/engine.h"
#include "coll/state.h"
#include "coll/wait.h"
#include "comm/connect.h"
#include "comm/error.h"
#include "comm/news.h"
#include "core/clock.h"
#include "core/log.h"
#include "sched/stage.h"

#define ALIVE_CHECK_NS 20000000 /* 20 ms between peer liveness scans when idle: the longest sleep */
#define CAUSE_WAIT_MS 200       /* how long a report waits to see why a peer aborted */
#define FIRST_CLOCK_IDLE 2      /* idle polls before an idle spell reads the clock ... */
#define CLOCK_EVERY_IDLE 32     /* ... and between its later reads while it spins */

typedef struct {
    char *dst;
    const char *local;
    const tt_exec_t *x;
} combine_ctx_t;

typedef struct {
    int slice, round; /* slice == -1: lane finished */
    int npending;
    tt_req_t *reqs; /* one per step of the widest round */
    combine_ctx_t *ctxs;
    const tt_step_t **req_step;
} lane_t;

typedef enum { RUN_WAITING = 0, RUN_ACTIVE, RUN_DONE } run_state_t;

/* One schedule of a batch (a batch of one for a plain call). */
typedef struct {
    tt_comm_t *comm;
    const tt_sched_t *s;
    const tt_exec_t *x;
    const tt_peer_t *peers;
    int nlanes, width;
    lane_t *lanes;
    tt_piece_t *pieces; /* the average's: one slice's output pieces at a time */
    int after;          /* the run that must finish before this one starts; -1: none */
    run_state_t state;
} run_t;

static void engine_combine(void *ctxp, size_t off, const void *src, size_t n)
{
    combine_ctx_t *c = ctxp;
    c->x->reduce(c->dst + off, c->local + off, src, n / c->x->elem);
}

static char *slice_ptr(const tt_exec_t *x, tt_region_t r, int slice, size_t *bytes)
{
    size_t off = r.off + tt_block_off(r.count, x->nslices, slice);
    *bytes = tt_block_count(r.count, x->nslices, slice) * x->elem;
    return x->bufs[r.buf] + off * x->elem;
}

static const char *step_name(tt_step_kind_t k)
{
    static const char *const names[] = {"sending to", "receiving from", "receiving (to reduce) from", "copy",
                                        "reduce"};
    return names[k];
}

static void describe_call(uint64_t seq, int coll, int dtype, int op, int root, uint64_t count, char *out,
                          size_t len)
{
    snprintf(out, len, "%s #%llu (count %llu, %s, %s, root %d)", tt_coll_name((tt_coll_t)coll),
             (unsigned long long)seq, (unsigned long long)count, tutti_dtype_name((tutti_dtype_t)dtype),
             tutti_op_name((tutti_op_t)op), root);
}

static tutti_status_t lane_start_round(run_t *run, lane_t *lane, int channel)
{
    const tt_exec_t *x = run->x;
    int n;
    lane->npending = 0;
    const tt_step_t *steps = tt_sched_round_steps(run->s, lane->round, &n);
    for (int i = 0; i < n; i++) {
        const tt_step_t *st = &steps[i];
        size_t bytes, bytes2;
        if (st->kind == TT_STEP_COPY || st->kind == TT_STEP_REDUCE) {
            char *dst = slice_ptr(x, st->dst, lane->slice, &bytes);
            char *src = slice_ptr(x, st->src, lane->slice, &bytes2);
            if (bytes == 0) /* an empty piece: its buffer may not even exist */
                continue;
            if (st->kind == TT_STEP_REDUCE)
                x->reduce(dst, dst, src, bytes / x->elem);
            else
                memcpy(dst, src, bytes);
            continue;
        }
        tt_req_t *req = &lane->reqs[lane->npending];
        combine_ctx_t *cc = &lane->ctxs[lane->npending];
        lane->req_step[lane->npending] = st;
        memset(req, 0, sizeof *req);
        char *buf = slice_ptr(x, st->kind == TT_STEP_SEND ? st->src : st->dst, lane->slice, &bytes);
        req->hdr = (tt_msg_hdr_t){.magic = TT_MSG_MAGIC,
                                  .comm = tt_comm_wire_tag(run->comm),
                                  .coll = (uint8_t)x->wire_coll,
                                  .dtype = (uint8_t)x->dtype,
                                  .op = (uint8_t)x->op,
                                  .channel = (uint8_t)channel,
                                  .root = x->root,
                                  .count = x->count,
                                  .seq = x->seq,
                                  .bytes = bytes};
        req->buf = buf;
        req->len = bytes;
        req->unit = x->elem;
        if (st->kind == TT_STEP_RECV_REDUCE) {
            *cc = (combine_ctx_t){buf, slice_ptr(x, st->src, lane->slice, &bytes2), x};
            req->combine = engine_combine;
            req->combine_ctx = cc;
        }
        const tt_peer_t *peer = &run->peers[st->peer];
        tutti_status_t rc = st->kind == TT_STEP_SEND ? peer->ops->isend(peer->conn, channel, req)
                                                     : peer->ops->irecv(peer->conn, channel, req);
        if (rc) {
            tt_req_finish(req, rc);
            lane->npending++;
            return TUTTI_SUCCESS; /* reported by the completion scan */
        }
        lane->npending++;
    }
    return TUTTI_SUCCESS;
}

/* The average of a slice that is done, while its output is still in the
 * caches: one pass over memory fewer than dividing the whole output after. */
static void finish_avg(run_t *run, int slice)
{
    const tt_exec_t *x = run->x;
    int n = tt_stage_pieces(run->s, x->elem, x->nslices, slice, 1u << TT_BUF_OUTPUT, 1, run->pieces);
    for (int i = 0; i < n; i++)
        tt_reduce_avg_finish(x->bufs[TT_BUF_OUTPUT] + run->pieces[i].off, run->pieces[i].bytes / x->elem,
                             x->dtype, x->avg_ranks);
}

/* Moves a lane whose round is complete on to its next round or slice. */
static tutti_status_t lane_advance(run_t *run, lane_t *lane, int channel)
{
    for (;;) {
        if (run->x->round_end_ns && lane->slice == 0)
            run->x->round_end_ns[lane->round] = tt_now_ns();
        lane->round++;
        if (lane->round >= run->s->nrounds) {
            if (run->x->avg_ranks)
                finish_avg(run, lane->slice);
            lane->slice += run->nlanes;
            lane->round = 0;
            if (lane->slice >= run->x->nslices) {
                lane->slice = -1;
                return TUTTI_SUCCESS;
            }
        }
        TT_TRY(lane_start_round(run, lane, channel));
        if (lane->npending > 0)
            return TUTTI_SUCCESS;
    }
}

/* Appends rank to a "2, 5" list. */
static void list_add(char *list, size_t len, int rank)
{
    size_t used = strlen(list);
    snprintf(list + used, len - used, "%s%d", used ? ", " : "", rank);
}

/*
 * Scans every peer. Writes what is known about the lost ones: ranks that
 * died first (the cause), then ranks that gave up because of an error.
 * Returns the number of lost peers; negative (and writes nothing) when
 * only aborted peers are seen and allow_aborted_only is 0.
 */
static int lost_peers(const run_t *run, char *out, size_t len, int allow_aborted_only)
{
    char died[128] = "", aborted[128] = "";
    int ndied = 0, naborted = 0, n;
    const int *list = tt_coll_peer_list(run->comm, run->peers, &n);
    for (int i = 0; i < n; i++) {
        int r = list ? list[i] : i;
        if (!run->peers[r].ops)
            continue;
        tutti_status_t st = run->peers[r].ops->alive(run->peers[r].conn);
        if (st == TUTTI_ERR_ABORTED) {
            list_add(aborted, sizeof aborted, r);
            naborted++;
        } else if (st) {
            list_add(died, sizeof died, r);
            ndied++;
        }
    }
    out[0] = '\0';
    if (ndied == 0 && naborted > 0 && !allow_aborted_only)
        return -naborted; /* the cause is not visible yet */
    if (ndied)
        snprintf(out, len, "%s %s died or lost %s connection%s", ndied > 1 ? "ranks" : "rank", died,
                 ndied > 1 ? "their" : "its", naborted ? "; " : "");
    if (naborted)
        snprintf(out + strlen(out), len - strlen(out), "%s %s aborted after an error",
                 naborted > 1 ? "ranks" : "rank", aborted);
    return ndied + naborted;
}

/* News from the other ranks (a rank gave up, died, left or timed out)
 * ends this call: said once, with the cause. */
static tutti_status_t check_news(run_t *run)
{
    if (!tt_comm_has_news(run->comm))
        return TUTTI_SUCCESS;
    const tt_exec_t *x = run->x;
    char call[160];
    describe_call(x->seq, x->coll, x->dtype, x->op, x->root, x->count, call, sizeof call);
    int p2p = x->coll == TT_COLL_SEND || x->coll == TT_COLL_RECV;
    return tt_comm_news(run->comm, call, p2p ? UINT64_MAX : x->seq);
}

static tutti_status_t report(run_t *run, tutti_status_t st, const lane_t *lane, int idx)
{
    tt_comm_t *comm = run->comm;
    const tt_exec_t *x = run->x;
    char call[160], gone[256];
    describe_call(x->seq, x->coll, x->dtype, x->op, x->root, x->count, call, sizeof call);
    const tt_step_t *step = lane->req_step[idx];
    const tt_req_t *req = &lane->reqs[idx];
    char where[160];
    snprintf(where, sizeof where, "rank %d was %s rank %d (round %d of %d, slice %d of %d)", comm->rank,
             step_name(step->kind), step->peer, lane->round + 1, run->s->nrounds, lane->slice + 1,
             x->nslices);
    if (st == TUTTI_ERR_MISMATCH) {
        char theirs[224];
        describe_call(req->got.seq, req->got.coll, req->got.dtype, req->got.op, req->got.root, req->got.count,
                      theirs, sizeof theirs);
        if (req->got.comm != req->hdr.comm) /* the two ran at once over connections they share */
            strncat(theirs, " of another communicator sharing its connections", 60);
        return tt_comm_error(comm, st, "%s: %s, which sent %s with %llu bytes where %llu were expected", call,
                             where, theirs, (unsigned long long)req->got.bytes,
                             (unsigned long long)req->hdr.bytes);
    }
    if (st == TUTTI_ERR_TIMEOUT) {
        /* Every rank says where it is, so the report names the one at fault. */
        static _Thread_local char stuck[TT_COMM_ERROR_BYTES];
        tt_progress_timed_out(&comm->progress);
        tt_comm_who_is_stuck(comm, stuck, sizeof stuck);
        return tt_comm_error(comm, st, "%s: timeout after %lld ms without progress (TUTTI_TIMEOUT); %s%s%s",
                             call, (long long)comm->timeout_ms, where, *stuck ? ". " : "", stuck);
    }
    /* A peer aborts because of something: usually another rank died and
     * this rank's connections to it are still closing, or it found a
     * mismatch or a timeout and says why through rank 0. Look again
     * briefly so the report names the cause, not only who gave up. */
    int lost = lost_peers(run, gone, sizeof gone, 0);
    for (int64_t until = tt_now_ms() + CAUSE_WAIT_MS; !tt_comm_has_news(comm) && tt_now_ms() < until;) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        lost = lost_peers(run, gone, sizeof gone, 0);
    }
    /* Rank 0's word is better than a closed connection: a rank that gave
     * up and then ended looks dead to the transports. */
    tutti_status_t why = check_news(run);
    if (why)
        return why;
    if (lost < 0)
        lost = lost_peers(run, gone, sizeof gone, 1);
    if (lost > 0)
        return tt_comm_error(comm, TUTTI_ERR_PEER_FAILED, "%s: %s; %s", call, gone, where);
    return tt_comm_error(comm, st, "%s: %s; %s", call, tutti_strerror(st), where);
}

/* Reports the most telling failed request: one that received another
 * call's header, else the first failure found. */
static tutti_status_t report_failure(run_t *run)
{
    const lane_t *first_lane = NULL;
    int first = -1;
    for (int l = 0; l < run->nlanes; l++)
        for (int i = 0; i < run->lanes[l].npending; i++) {
            const tt_req_t *req = &run->lanes[l].reqs[i];
            if (req->state != TT_REQ_FAILED)
                continue;
            if (req->status == TUTTI_ERR_MISMATCH && req->got.magic == TT_MSG_MAGIC)
                return report(run, req->status, &run->lanes[l], i);
            if (first < 0) {
                first_lane = &run->lanes[l];
                first = i;
            }
        }
    return report(run, first_lane->reqs[first].status, first_lane, first);
}

/* Tells the who-is-stuck report what this rank waits for: the first
 * pending request. */
static void publish_wait(run_t *run, int64_t since_ns)
{
    for (int l = 0; l < run->nlanes; l++) {
        const lane_t *lane = &run->lanes[l];
        for (int i = 0; lane->slice >= 0 && i < lane->npending; i++)
            if (lane->reqs[i].state == TT_REQ_PENDING) {
                const tt_step_t *step = lane->req_step[i];
                tt_progress_wait(&run->comm->progress, step->peer, (int)step->kind, lane->round + 1,
                                 run->s->nrounds, lane->slice + 1, run->x->nslices, since_ns);
                return;
            }
    }
}

/* Moves the lanes of an active run whose rounds completed; marks the run
 * done once every lane finished. */
static tutti_status_t run_poll(run_t *run, int *progressed)
{
    int active = 0;
    for (int l = 0; l < run->nlanes; l++) {
        lane_t *lane = &run->lanes[l];
        if (lane->slice < 0)
            continue;
        active++;
        int done = 1;
        for (int i = 0; i < lane->npending; i++) {
            if (lane->reqs[i].state == TT_REQ_FAILED)
                return report_failure(run);
            done &= lane->reqs[i].state == TT_REQ_DONE;
        }
        if (done) {
            TT_TRY(lane_advance(run, lane, l));
            *progressed = 1;
        }
    }
    if (!active)
        run->state = RUN_DONE;
    return TUTTI_SUCCESS;
}

/* Starts a run's lanes. */
static tutti_status_t run_start(run_t *run)
{
    const tt_sched_t *s = run->s;
    const tt_exec_t *x = run->x;
    run->state = RUN_ACTIVE;
    if (x->avg_ranks) {
        run->pieces = malloc(2 * (size_t)s->nsteps * sizeof *run->pieces);
        if (!run->pieces)
            return tt_comm_error(run->comm, TUTTI_ERR_NO_MEMORY, "%s: no memory for the slices' pieces",
                                 tt_coll_name(x->coll));
    }
    for (int l = 0; l < run->nlanes; l++) {
        lane_t *lane = &run->lanes[l];
        lane->slice = l;
        lane->round = 0;
        TT_TRY(lane_start_round(run, lane, l));
        if (lane->npending == 0) /* a round of local steps only */
            TT_TRY(lane_advance(run, lane, l));
    }
    if (run->nlanes == 0)
        run->state = RUN_DONE;
    return TUTTI_SUCCESS;
}

/* The flag of tt_comm_interrupt: a revocation, or an abort. */
static tutti_status_t interrupted(const run_t *run)
{
    const tt_exec_t *x = run->x;
    char call[160];
    describe_call(x->seq, x->coll, x->dtype, x->op, x->root, x->count, call, sizeof call);
    TT_TRY(tt_comm_revoked(run->comm, call));
    return tt_comm_error(run->comm, TUTTI_ERR_ABORTED,
                         "%s: interrupted on rank %d: the communicator is being aborted", call,
                         run->comm->rank);
}

/* Starts the runs whose predecessor finished; moves the active ones. *left
 * gets how many are not done. */
static tutti_status_t poll_runs(run_t *runs, int n, int *progressed, int *left)
{
    *left = 0;
    for (int i = 0; i < n; i++) {
        run_t *run = &runs[i];
        if (run->state == RUN_WAITING && (run->after < 0 || runs[run->after].state == RUN_DONE)) {
            TT_TRY(run_start(run));
            *progressed = 1;
        }
        if (run->state == RUN_ACTIVE)
            TT_TRY(run_poll(run, progressed));
        *left += run->state != RUN_DONE;
    }
    return TUTTI_SUCCESS;
}

/* Whether a peer that an active lane waits on died or gave up. Only those:
 * the scan runs every ALIVE_CHECK_NS, and checking every connected peer (all
 * after an all-to-all) took whole cores at hundreds of ranks. A death
 * elsewhere reaches this rank as news, or here once a call waits on it. */
static int waited_peer_lost(const run_t *runs, int n)
{
    for (int r = 0; r < n; r++)
        for (int l = 0; runs[r].state == RUN_ACTIVE && l < runs[r].nlanes; l++) {
            const lane_t *lane = &runs[r].lanes[l];
            for (int i = 0; lane->slice >= 0 && i < lane->npending; i++) {
                int q = lane->req_step[i]->peer;
                const tt_peer_t *p = q >= 0 ? &runs[r].peers[q] : NULL;
                if (lane->reqs[i].state == TT_REQ_PENDING && p && p->ops && p->ops->alive(p->conn))
                    return 1;
            }
        }
    return 0;
}

/* News from the other ranks, a dead peer, or no progress for TUTTI_TIMEOUT:
 * reported for the first active run waiting on a request. Says what this
 * rank waits for (the who-is-stuck report reads it). */
static tutti_status_t check_stalled(run_t *runs, int n, int64_t now, int64_t last_progress,
                                    int64_t *next_alive)
{
    tt_comm_t *comm = runs[0].comm;
    if (now >= *next_alive) {
        *next_alive = now + ALIVE_CHECK_NS;
        for (int r = 0; r < n; r++) /* the first active run speaks for the batch */
            if (runs[r].state == RUN_ACTIVE) {
                publish_wait(&runs[r], last_progress);
                TT_TRY(check_news(&runs[r]));
                break;
            }
        if (waited_peer_lost(runs, n))
            for (int r = 0; r < n; r++)
                for (int l = 0; runs[r].state == RUN_ACTIVE && l < runs[r].nlanes; l++)
                    if (runs[r].lanes[l].slice >= 0 && runs[r].lanes[l].npending > 0)
                        return report(&runs[r], TUTTI_ERR_PEER_FAILED, &runs[r].lanes[l], 0);
    }
    if (now - last_progress > comm->timeout_ms * 1000000)
        for (int r = 0; r < n; r++)
            for (int l = 0; runs[r].state == RUN_ACTIVE && l < runs[r].nlanes; l++)
                for (int i = 0; i < runs[r].lanes[l].npending; i++)
                    if (runs[r].lanes[l].reqs[i].state == TT_REQ_PENDING)
                        return report(&runs[r], TUTTI_ERR_TIMEOUT, &runs[r].lanes[l], i);
    return TUTTI_SUCCESS;
}

/* Polls the connections and moves the runs until all are done; an idle
 * spell spins, then sleeps until something can move (coll/wait.c). */
static tutti_status_t run_loop(run_t *runs, int n)
{
    tt_comm_t *comm = runs[0].comm;
    const tt_peer_t *peers = runs[0].peers;
    int64_t last_progress = tt_now_ns(), next_alive = last_progress + ALIVE_CHECK_NS, spin_ns = 0;
    int idle = 0;
    tt_waiter_t waiter;
    tt_waiter_init(&waiter, comm, peers);
    const int clock_every = waiter.yield ? 1 : CLOCK_EVERY_IDLE;
    for (;;) {
        int progressed = 0, left;
        for (int i = 0; i < waiter.n; i++) {
            const tt_peer_t *p = &peers[waiter.list ? waiter.list[i] : i];
            if (p->ops)
                p->ops->progress(p->conn, &progressed);
        }
        TT_TRY(poll_runs(runs, n, &progressed, &left));
        if (!left)
            return TUTTI_SUCCESS;
        if (atomic_load_explicit(&comm->aborting, memory_order_relaxed))
            for (int r = 0; r < n; r++)
                if (runs[r].state == RUN_ACTIVE)
                    return interrupted(&runs[r]);
        if (progressed) {
            idle = 0;
            continue;
        }
        tt_waiter_pause(&waiter);
        if (++idle < FIRST_CLOCK_IDLE || (idle - FIRST_CLOCK_IDLE) % clock_every != 0)
            continue; /* reading the clock on every idle poll costs more than the poll */
        int64_t now = tt_now_ns();
        if (idle == FIRST_CLOCK_IDLE) { /* the spell begins: how long may it spin? */
            last_progress = now;
            spin_ns = tt_waiter_spin_ns(&waiter);
        }
        TT_TRY(check_stalled(runs, n, now, last_progress, &next_alive));
        if (now - last_progress < spin_ns)
            continue;
        int64_t deadline = last_progress + comm->timeout_ms * 1000000;
        tt_waiter_sleep(&waiter, next_alive < deadline ? next_alive : deadline);
        idle = FIRST_CLOCK_IDLE + clock_every - 1; /* the next idle poll reads the clock and sleeps */
    }
}

/* Lays the runs' lanes and requests out in the workspace the communicator
 * keeps, so that a small call allocates nothing. */
static tutti_status_t lay_out(tt_comm_t *comm, run_t *runs, int n)
{
    size_t nreq = 0, nlanes = 0;
    for (int i = 0; i < n; i++) {
        nreq += (size_t)runs[i].nlanes * (size_t)runs[i].width;
        nlanes += (size_t)runs[i].nlanes;
    }
    size_t need = nlanes * sizeof(lane_t) + nreq * (sizeof(tt_req_t) + sizeof(combine_ctx_t)) +
                  nreq * sizeof(tt_step_t *);
    tt_coll_state_t *cs = tt_coll_state(comm);
    if (!cs)
        return TUTTI_ERR_NO_MEMORY;
    if (need > cs->engine_ws_bytes) {
        void *ws = realloc(cs->engine_ws, need);
        if (!ws)
            return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY,
                                 "%s: no memory for the engine's %zu-byte workspace",
                                 tt_coll_name(runs[0].x->coll), need);
        cs->engine_ws = ws;
        cs->engine_ws_bytes = need;
    }
    tt_req_t *reqs = cs->engine_ws; /* the most aligned type first */
    combine_ctx_t *ctxs = (combine_ctx_t *)(reqs + nreq);
    const tt_step_t **steps = (const tt_step_t **)(ctxs + nreq);
    lane_t *lanes = (lane_t *)(steps + nreq);
    for (int i = 0; i < n; i++)
        for (int l = 0; l < runs[i].nlanes; l++) {
            if (l == 0)
                runs[i].lanes = lanes;
            *lanes++ = (lane_t){.slice = -1, .reqs = reqs, .ctxs = ctxs, .req_step = steps};
            reqs += runs[i].width;
            ctxs += runs[i].width;
            steps += runs[i].width;
        }
    return TUTTI_SUCCESS;
}

/* Connects the peers the runs name that are not connected yet (at first
 * use: every peer named is in the same call on its side), for the earliest
 * collective among them: a later call's give-up leaves the connecting alone. */
static tutti_status_t connect_peers(tt_comm_t *comm, const run_t *runs, int n)
{
    int *need = NULL, nneed = 0;
    uint64_t earliest = UINT64_MAX; /* sends and receives: any give-up ends them anyway */
    for (int i = 0; i < n; i++) {
        const tt_exec_t *x = runs[i].x;
        int waiting = runs[i].peers == comm->peers && runs[i].state == RUN_WAITING;
        for (int k = 0; waiting && k < runs[i].s->nsteps; k++) {
            int q = runs[i].s->steps[k].peer, known = 0;
            if (q < 0 || comm->peers[q].ops)
                continue;
            if (x->coll != TT_COLL_SEND && x->coll != TT_COLL_RECV && x->seq < earliest)
                earliest = x->seq;
            for (int j = 0; j < nneed && !known; j++)
                known = need[j] == q;
            if (!known && !need && !(need = malloc(sizeof(int) * (size_t)comm->nranks)))
                return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "no memory to connect the peers");
            if (!known)
                need[nneed++] = q;
        }
    }
    tutti_status_t st = nneed ? tt_comm_connect(comm, need, nneed, earliest) : TUTTI_SUCCESS;
    free(need);
    return st;
}

tutti_status_t tt_engine_run_batch(tt_comm_t *comm, const tt_engine_item_t *items, int n)
{
    run_t one, *runs = n == 1 ? &one : calloc((size_t)n, sizeof *runs);
    if (!runs)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "no memory to run a batch of %d calls", n);
    for (int i = 0; i < n; i++) {
        const tt_exec_t *x = items[i].x;
        runs[i] = (run_t){.comm = comm,
                          .s = items[i].s,
                          .x = x,
                          .peers = x->peers ? x->peers : comm->peers,
                          .width = items[i].s->max_round_steps,
                          .after = items[i].after,
                          .state = items[i].s->nrounds ? RUN_WAITING : RUN_DONE};
        if (runs[i].state == RUN_WAITING)
            runs[i].nlanes = x->nslices < comm->nchannels ? x->nslices : comm->nchannels;
    }
    int waiting = 0;
    for (int i = 0; i < n; i++)
        waiting += runs[i].state == RUN_WAITING;
    tutti_status_t st = waiting ? connect_peers(comm, runs, n) : TUTTI_SUCCESS;
    if (!st && waiting)
        st = lay_out(comm, runs, n);
    if (!st && waiting)
        st = run_loop(runs, n);
    for (int i = 0; i < n; i++)
        free(runs[i].pieces);
    if (runs != &one)
        free(runs);
    return st;
}

tutti_status_t tt_engine_run(tt_comm_t *comm, const tt_sched_t *s, const tt_exec_t *x)
{
    tt_engine_item_t item = {.s = s, .x = x, .after = -1};
    return tt_engine_run_batch(comm, &item, 1);
}
