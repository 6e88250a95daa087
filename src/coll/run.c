/* SPDX-License-Identifier: MIT */
/*
 * The host runner: a validated call takes its place in the call sequence,
 * gets its algorithm and slice size from the policy, its schedule from the
 * cache, and runs on the engine; avg is divided by the engine slice by
 * slice where each output byte is written by one slice, else afterwards.
 */
#include <stdio.h>
#include <stdlib.h>

#include "algorithms/registry.h"
#include "coll/coll.h"
#include "coll/engine.h"
#include "coll/exec.h"
#include "coll/state.h"
#include "comm/agree.h"
#include "comm/error.h"
#include "comm/news.h"
#include "comm/pair.h"
#include "core/dtype.h"
#include "core/hash.h"
#include "core/log.h"
#include "reduce/reduce.h"
#include "sched/stage.h"

/* A call of count 0 still takes its place in the call sequence and meets
 * its peers: it runs the dissemination barrier's schedule with its own
 * signature (count 0) in the headers, so a rank that called something else
 * sees a mismatch naming both calls instead of pairing it with its next.
 * (A send or receive of count 0 is an empty message.) */
static int moves_nothing(const tt_call_t *c)
{
    return c->count == 0 && c->coll != TT_COLL_BARRIER && c->coll != TT_COLL_SEND && c->coll != TT_COLL_RECV;
}

static int is_p2p(const tt_call_t *c)
{
    return c->coll == TT_COLL_SEND || c->coll == TT_COLL_RECV;
}

/* A collective's error ends the peers' calls from that collective on: one
 * still in an earlier collective finishes it. A send or receive cannot
 * tell which collectives are still under way (a device queue runs them
 * later, on its own thread), so its error ends every call. */
static void fail(tt_comm_t *comm, const tt_call_t *c, uint64_t seq, tutti_status_t st)
{
    if (is_p2p(c))
        tt_comm_fail(comm, st);
    else
        tt_comm_fail_in(comm, st, seq);
}

/* A call that news from the other ranks has already ended (a rank gave
 * up, died, or left before this call): it fails before it starts. */
static tutti_status_t check_news(tt_comm_t *comm, const tt_call_t *c, uint64_t seq)
{
    if (!tt_comm_has_news(comm))
        return TUTTI_SUCCESS;
    char call[96];
    snprintf(call, sizeof call, "%s #%llu", tt_coll_name(c->coll), (unsigned long long)seq);
    tutti_status_t st = tt_comm_news(comm, call, is_p2p(c) ? UINT64_MAX : seq);
    if (st)
        fail(comm, c, seq, st);
    return st;
}

tutti_status_t tt_coll_p2p_number(tt_comm_t *comm, const tt_call_t *c, uint64_t *seq)
{
    *seq = (c->coll == TT_COLL_SEND ? comm->send_seq : comm->recv_seq)[c->root]++;
    return check_news(comm, c, *seq);
}

tutti_status_t tt_coll_begin(tt_comm_t *comm, const tt_call_t *c, int capable, uint64_t *seq, int *direct)
{
    *seq = 0;
    *direct = 0;
    if (is_p2p(c)) { /* on host buffers: the peer learns this message stages */
        TT_TRY(tt_coll_p2p_number(comm, c, seq));
        if (c->coll == TT_COLL_SEND)
            return tt_comm_pair_decide(comm, c->root, *seq, 0, 0, 0, direct);
        TT_TRY(tt_comm_pair_offer(comm, c->root, *seq, 0, 0));
        return tt_comm_pair_read_decision(comm, c->root, *seq, 0, direct);
    }
    *seq = comm->coll_seq++;
    TT_TRY(check_news(comm, c, *seq));
    /* What the ranks must agree on to go direct (no message headers then). */
    uint64_t sig[] = {(uint64_t)c->coll, (uint64_t)c->dtype, (uint64_t)c->op, (uint64_t)c->root, c->count};
    return tt_comm_agree(comm, *seq, capable, tt_hash(sig, sizeof sig, TT_HASH_SEED), direct);
}

tutti_status_t tt_coll_run(tt_comm_t *comm, const tt_call_t *c)
{
    uint64_t seq;
    int direct;
    TT_TRY(tt_coll_begin(comm, c, 0, &seq, &direct));
    return tt_coll_run_at(comm, c, seq, NULL);
}

/* The schedule's scratch, kept between calls. */
static tutti_status_t scratch_for(tt_comm_t *comm, tt_coll_state_t *cs, const tt_call_t *c, size_t need,
                                  void **out)
{
    if (need > cs->scratch_bytes) {
        void *p = malloc(need);
        if (!p)
            return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory for %zu bytes of scratch",
                                 tt_coll_name(c->coll), need);
        free(cs->scratch);
        cs->scratch = p;
        cs->scratch_bytes = need;
    }
    *out = cs->scratch;
    return TUTTI_SUCCESS;
}

static int wants_avg(const tt_call_t *c)
{
    return c->op == TUTTI_AVG && c->out_bytes && c->coll != TT_COLL_BROADCAST;
}

/* Whether the engine can divide the average slice by slice as the output
 * becomes final (host buffers, each output byte written by one slice). */
static int avg_by_slice(tt_comm_t *comm, const tt_call_t *c, const tt_sched_t *s, const tt_exec_t *x)
{
    if (!wants_avg(c) || comm->nranks < 2)
        return 0;
    tt_piece_t *scratch = malloc(2 * (size_t)s->nsteps * sizeof *scratch);
    int yes =
        scratch && tt_stage_partitions(s, x->elem, x->nslices, TT_BUF_OUTPUT, c->count * x->elem, scratch);
    free(scratch);
    return yes;
}

/* avg: the sum divided by the ranks, where the call has an output. */
static void finish_avg(tt_comm_t *comm, const tt_call_t *c)
{
    if (wants_avg(c))
        tt_reduce_avg_finish(c->recv, c->count, c->dtype, comm->nranks);
}

static void trace_call(tt_coll_state_t *cs, const tt_algorithm_t *algo, const tt_sched_t *s, tt_exec_t *x)
{
    if (!cs->trace.round_end_ns || s->nrounds > cs->trace.cap)
        return;
    x->round_end_ns = cs->trace.round_end_ns;
    cs->trace.nrounds = s->nrounds;
    cs->trace.nslices = x->nslices;
    cs->trace.algo = algo;
}

tt_coll_args_t tt_coll_args(tt_comm_t *comm, const tt_call_t *c)
{
    return (tt_coll_args_t){.coll = moves_nothing(c) ? TT_COLL_BARRIER : c->coll,
                            .nranks = comm->nranks,
                            .rank = comm->rank,
                            .root = c->root,
                            .count = c->count,
                            .in_place = c->in_place,
                            .hosts = &comm->hosts};
}

tt_tuned_t tt_coll_choose(tt_comm_t *comm, const tt_call_t *c, const tt_route_t *route,
                          const tt_coll_args_t *args)
{
    if (moves_nothing(c))
        return (tt_tuned_t){&tt_algo_dissemination, TT_TUNER_DEFAULT_SLICE, -1};
    tt_algo_policy_t *policy = route && route->policy ? route->policy : &comm->policy;
    size_t bytes = c->in_bytes > c->out_bytes ? c->in_bytes : c->out_bytes;
    return tt_algo_choose(policy, args, bytes, tutti_dtype_size(c->dtype));
}

void tt_coll_exec(const tt_call_t *c, const tt_sched_t *s, uint64_t seq, const tt_route_t *route,
                  const tt_coll_args_t *args, tt_tuned_t choice, tt_exec_t *x)
{
    *x = (tt_exec_t){.coll = c->coll,
                     .wire_coll = is_p2p(c) ? TT_COLL_SEND : c->coll,
                     .dtype = c->dtype,
                     .op = c->op,
                     .root = is_p2p(c) ? 0 : c->root,
                     .count = c->count,
                     .seq = seq,
                     .elem = tutti_dtype_size(c->dtype),
                     .reduce = tt_reduce_get(c->dtype, c->op),
                     .peers = route ? route->peers : NULL};
    x->bufs[TT_BUF_INPUT] = (char *)c->send;
    x->bufs[TT_BUF_OUTPUT] = c->recv;
    x->nslices = tt_sched_slices(s, tt_tuner_slices(tt_tuner_chunk_bytes(args, x->elem), choice.slice_bytes));
}

tutti_status_t tt_coll_run_at(tt_comm_t *comm, const tt_call_t *c, uint64_t seq, const tt_route_t *route)
{
    TT_TRY(tt_comm_usable(comm, tt_coll_name(c->coll))); /* a queued device call, or a host call behind one */
    tt_coll_state_t *cs = tt_coll_state(comm);
    if (!cs)
        return TUTTI_ERR_NO_MEMORY;
    tt_coll_args_t args = tt_coll_args(comm, c);
    tt_tuned_t choice = tt_coll_choose(comm, c, route, &args);
    const tt_algorithm_t *algo = choice.algo;
    tutti_status_t st;
    const tt_sched_t *s = tt_sched_cache_get(&cs->sched_cache, algo, &args, &st);
    if (!s)
        return tt_comm_error(comm, st, "%s: building the %s schedule failed: %s", tt_coll_name(c->coll),
                             algo ? algo->name : "(no algorithm)", tutti_strerror(st));
    tt_exec_t x;
    tt_coll_exec(c, s, seq, route, &args, choice, &x);
    if (s->scratch_count)
        TT_TRY(scratch_for(comm, cs, c, s->scratch_count * x.elem, (void **)&x.bufs[TT_BUF_SCRATCH]));
    trace_call(cs, algo, s, &x);
    x.avg_ranks = avg_by_slice(comm, c, s, &x) ? comm->nranks : 0;
    TT_DEBUG(TT_SUB_COLL, "%s #%llu: count %zu %s %s, %s (%s %.1f us), %d rounds, %d slices%s",
             tt_coll_name(c->coll), (unsigned long long)seq, c->count, tutti_dtype_name(c->dtype),
             tutti_op_name(c->op), algo->name, choice.predicted < 0 ? "forced" : "tuner predicts",
             choice.predicted < 0 ? 0.0 : choice.predicted * 1e6, s->nrounds, x.nslices,
             x.avg_ranks ? ", avg divided slice by slice" : "");
    cs->bytes_sent += (uint64_t)s->sent_count * x.elem;
    tt_progress_begin(&comm->progress, seq, c->coll, c->dtype, c->op, c->root, c->count);
    st = tt_engine_run(comm, s, &x);
    tt_progress_end(&comm->progress);
    if (!st && !x.avg_ranks)
        finish_avg(comm, c);
    if (st)
        fail(comm, c, seq, st);
    return st;
}
