/* SPDX-License-Identifier: MIT */
/*
 * A batch of point-to-point calls posted together: every send and receive
 * of the batch makes progress in one engine loop, so patterns where each
 * rank both sends and receives (all-to-all, gather, scatter built from
 * point-to-point calls) cannot deadlock as a sequence of blocking calls
 * would. Each call runs exactly as tutti_send/tutti_recv would run it (its
 * sequence number, schedule and slicing), so a batch on one rank matches
 * plain calls on another.
 */
#include <stdlib.h>

#include "coll/coll.h"
#include "coll/exec.h"
#include "coll/state.h"
#include "comm/error.h"
#include "comm/news.h"
#include "core/dtype.h"

typedef struct {
    tt_sched_t sched;
    tt_exec_t exec;
} batch_entry_t;

/* The last earlier entry that talks to the same peer in the same
 * direction: a channel matches messages in the order they are posted, so
 * such calls run one after the other, in the order given. */
static int predecessor(const tt_call_t *calls, const int *of_call, int i)
{
    for (int j = i - 1; j >= 0; j--)
        if (of_call[j] >= 0 && calls[j].coll == calls[i].coll && calls[j].root == calls[i].root)
            return of_call[j];
    return -1;
}

tutti_status_t tt_coll_batch_begin(tt_comm_t *comm, const tt_call_t *calls, int n, uint64_t *seqs)
{
    for (int i = 0; i < n; i++) {
        const tt_call_t *c = &calls[i];
        if (c->coll != TT_COLL_SEND && c->coll != TT_COLL_RECV)
            return tt_comm_error(comm, TUTTI_ERR_INTERNAL, "a batch holds only sends and receives, not %s",
                                 tt_coll_name(c->coll));
        int direct; /* count 0 too: an empty message, as a plain call */
        TT_TRY(tt_coll_begin(comm, c, 0, &seqs[i], &direct));
    }
    return TUTTI_SUCCESS;
}

/* Builds each call's schedule: entries[k] and items[k] for the calls that
 * move bytes; of_call[i] is call i's entry. */
static tutti_status_t prepare(tt_comm_t *comm, const tt_call_t *calls, int n, const uint64_t *seqs,
                              batch_entry_t *entries, tt_engine_item_t *items, int *of_call, int *m)
{
    *m = 0;
    for (int i = 0; i < n; i++) {
        const tt_call_t *c = &calls[i];
        uint64_t seq = seqs[i];
        of_call[i] = -1;
        batch_entry_t *e = &entries[*m];
        tt_coll_args_t args = tt_coll_args(comm, c);
        tt_tuned_t choice = tt_coll_choose(comm, c, NULL, &args);
        tutti_status_t st = tt_sched_build(choice.algo, &args, &e->sched);
        if (st)
            return tt_comm_error(comm, st, "%s to/from rank %d in a batch: building its schedule failed: %s",
                                 tt_coll_name(c->coll), c->root, tutti_strerror(st));
        tt_coll_exec(c, &e->sched, seq, NULL, &args, choice, &e->exec);
        items[*m] =
            (tt_engine_item_t){.s = &e->sched, .x = &e->exec, .after = predecessor(calls, of_call, i)};
        of_call[i] = (*m)++;
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_coll_run_batch_at(tt_comm_t *comm, const tt_call_t *calls, int n, const uint64_t *seqs)
{
    TT_TRY(tt_comm_usable(comm, "a batch of sends and receives"));
    if (n <= 0)
        return TUTTI_SUCCESS;
    batch_entry_t *entries = calloc((size_t)n, sizeof *entries);
    tt_engine_item_t *items = calloc((size_t)n, sizeof *items);
    int *of_call = calloc((size_t)n, sizeof *of_call);
    tutti_status_t st = TUTTI_SUCCESS;
    int m = 0;
    if (!entries || !items || !of_call)
        st = tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "no memory for a batch of %d calls", n);
    if (!st)
        st = prepare(comm, calls, n, seqs, entries, items, of_call, &m);
    tt_coll_state_t *cs = st || m == 0 ? NULL : tt_coll_state(comm);
    if (!st && m > 0 && !cs)
        st = TUTTI_ERR_NO_MEMORY;
    for (int k = 0; cs && k < m; k++)
        cs->bytes_sent += (uint64_t)entries[k].sched.sent_count * entries[k].exec.elem;
    if (!st && m > 0) { /* the report of who is stuck names the batch's first call */
        const tt_exec_t *x = &entries[0].exec;
        tt_progress_begin(&comm->progress, x->seq, x->coll, x->dtype, x->op, x->root, x->count);
        st = tt_engine_run_batch(comm, items, m);
        tt_progress_end(&comm->progress);
    }
    if (st)
        tt_comm_fail(comm, st);
    for (int i = 0; entries && i < n; i++)
        tt_sched_free(&entries[i].sched);
    free(entries);
    free(items);
    free(of_call);
    return st;
}

tutti_status_t tt_coll_run_batch(tt_comm_t *comm, const tt_call_t *calls, int n)
{
    uint64_t *seqs = calloc(n > 0 ? (size_t)n : 1, sizeof *seqs);
    if (!seqs)
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "no memory for a batch of %d calls", n);
    tutti_status_t st = tt_coll_batch_begin(comm, calls, n, seqs);
    if (!st)
        st = tt_coll_run_batch_at(comm, calls, n, seqs);
    free(seqs);
    return st;
}
