/* SPDX-License-Identifier: MIT */
/*
 * The hub, run by rank 0's star thread: gathers the set-up exchanges and
 * sends every rank the whole; relays a rank giving up (or its connection
 * closing), a rank entering destroy and a revocation to the others; ends destroy's
 * barrier; and answers the who-is-stuck query by asking every rank's thread
 * where its rank is, waiting a moment for the answers, and sending the
 * report to all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "transports/transport.h"

tt_star_hub_t *tt_star_hub_new(int nranks, int own_fd, int *rank_fds)
{
    tt_star_hub_t *h = calloc(1, sizeof *h);
    size_t n = (size_t)nranks;
    if (!h)
        return NULL;
    h->fds = malloc(n * sizeof *h->fds);
    h->rd = calloc(n, sizeof *h->rd);
    h->gone = calloc(n, 1);
    h->failed = calloc(n, 1);
    h->leaving = calloc(n, 1);
    h->leave_after = calloc(n, sizeof *h->leave_after);
    h->xhave = calloc(n, 1);
    h->states = calloc(n, sizeof *h->states);
    h->answered = calloc(n, 1);
    if (!h->fds || !h->rd || !h->gone || !h->failed || !h->leaving || !h->leave_after || !h->xhave ||
        !h->states || !h->answered) {
        free(h->fds);
        h->fds = NULL; /* nothing of the caller's to close */
        tt_star_hub_free(h, 0);
        return NULL;
    }
    h->n = nranks;
    h->fds[0] = own_fd;
    for (int r = 1; r < nranks; r++)
        h->fds[r] = rank_fds[r];
    return h;
}

void tt_star_hub_free(tt_star_hub_t *h, int close_fds)
{
    if (!h)
        return;
    for (int r = 0; h->fds && r < h->n; r++)
        if (r == 0 || close_fds)
            close(h->fds[r]);
    for (int r = 0; h->rd && r < h->n; r++)
        tt_star_reader_reset(&h->rd[r]);
    free(h->fds);
    free(h->rd);
    free(h->gone);
    free(h->failed);
    free(h->leaving);
    free(h->leave_after);
    free(h->xbuf);
    free(h->xhave);
    free(h->states);
    free(h->answered);
    free(h);
}

/* One frame to every rank still connected but except; a rank whose
 * connection broke is seen closing by the poll loop. */
static void to_all(tt_star_t *s, int type, int rank, tutti_status_t status, uint64_t seq, const void *p,
                   size_t len, int except)
{
    tt_star_hub_t *h = s->hub;
    for (int r = 0; r < h->n; r++)
        if (r != except && !h->gone[r])
            tt_star_send(h->fds[r], type, rank, status, seq, p, len, s->timeout_ms);
}

static void gather(tt_star_t *s, int from, const tt_star_hdr_t *hd, const char *payload)
{
    tt_star_hub_t *h = s->hub;
    if (h->xcount == 0) {
        free(h->xbuf);
        h->xbuf = malloc((size_t)h->n * hd->len + 1);
        memset(h->xhave, 0, (size_t)h->n);
        h->xseq = hd->seq;
        h->xsize = hd->len;
    }
    if (!h->xbuf || hd->seq != h->xseq || hd->len != h->xsize || h->xhave[from]) {
        TT_DEBUG(TT_SUB_INIT, "star hub: rank %d sent part of exchange %llu out of turn", from,
                 (unsigned long long)hd->seq);
        return;
    }
    memcpy(h->xbuf + (size_t)from * h->xsize, payload, h->xsize);
    h->xhave[from] = 1;
    if (++h->xcount == h->n) {
        to_all(s, TT_STAR_ALL, 0, 0, h->xseq, h->xbuf, (size_t)h->n * h->xsize, -1);
        h->xcount = 0;
    }
}

/* Everyone is in destroy: do they agree on how many collectives they made? */
static void all_left(tt_star_t *s)
{
    tt_star_hub_t *h = s->hub;
    char text[TT_STAR_TEXT] = "";
    tutti_status_t st = TUTTI_SUCCESS;
    for (int r = 1; r < h->n && !st; r++)
        if (h->leave_after[r] != h->leave_after[0]) {
            st = TUTTI_ERR_MISMATCH;
            snprintf(text, sizeof text,
                     "ranks called it after different numbers of collectives: rank 0 after %llu, rank %d "
                     "after %llu",
                     (unsigned long long)h->leave_after[0], r, (unsigned long long)h->leave_after[r]);
        }
    to_all(s, TT_STAR_DONE, 0, st, 0, text, strlen(text) + 1, -1);
    h->done_sent = 1;
}

static void leaving(tt_star_t *s, int from, uint64_t after)
{
    tt_star_hub_t *h = s->hub;
    if (h->leaving[from])
        return;
    h->leaving[from] = 1;
    h->leave_after[from] = after;
    for (int r = 0; r < h->n; r++) /* the others learn at once, wherever they are */
        if (!h->leaving[r] && !h->gone[r])
            tt_star_send(h->fds[r], TT_STAR_LEFT, from, 0, after, NULL, 0, s->timeout_ms);
    if (++h->nleaving == h->n)
        all_left(s);
}

/* Whether a process on rank 0's host is stopped: its /proc entry says. */
static int proc_of(void *arg, int rank)
{
    tt_star_t *s = arg;
    pthread_mutex_lock(&s->lock);
    const tt_endpoint_t *ep = s->endpoints;
    pthread_mutex_unlock(&s->lock);
    if (!ep || ep[rank].host_id != ep[0].host_id)
        return 0;
    return tt_stuck_proc_state(ep[rank].pid);
}

static void query_finish(tt_star_t *s)
{
    tt_star_hub_t *h = s->hub;
    char text[TT_STAR_TEXT * 2];
    tt_stuck_compile(h->n, h->states, h->answered, h->q_asker, s->wait_ms, proc_of, s, text, sizeof text);
    TT_DEBUG(TT_SUB_INIT, "star hub: %s", text);
    to_all(s, TT_STAR_REPORT, 0, 0, h->qid, text, strlen(text) + 1, -1);
    h->q_active = 0;
}

static void query_start(tt_star_t *s, int asker)
{
    tt_star_hub_t *h = s->hub;
    if (h->q_active)
        return; /* the report under way answers this rank too */
    h->q_active = 1;
    h->q_asker = asker;
    h->qid++;
    h->q_deadline = tt_now_ms() + s->wait_ms;
    memset(h->answered, 0, (size_t)h->n);
    to_all(s, TT_STAR_POLL, 0, 0, h->qid, NULL, 0, -1);
}

static void query_answer(tt_star_t *s, int from, const tt_star_hdr_t *hd, const char *payload)
{
    tt_star_hub_t *h = s->hub;
    if (!h->q_active || hd->seq != h->qid || hd->len != sizeof(tt_stuck_state_t))
        return;
    memcpy(&h->states[from], payload, sizeof(tt_stuck_state_t));
    h->answered[from] = 1;
}

void tt_star_hub_tick(tt_star_t *s)
{
    tt_star_hub_t *h = s->hub;
    if (!h->q_active)
        return;
    int all = 1;
    for (int r = 0; r < h->n && all; r++)
        all = h->answered[r] || h->gone[r];
    if (all || tt_now_ms() >= h->q_deadline)
        query_finish(s);
}

void tt_star_hub_frame(tt_star_t *s, int from, const tt_star_hdr_t *hd, const char *payload)
{
    tt_star_hub_t *h = s->hub;
    switch (hd->type) {
    case TT_STAR_DATA: gather(s, from, hd, payload); break;
    case TT_STAR_FAIL:
        if (!h->failed[from]) {
            h->failed[from] = 1;
            to_all(s, TT_STAR_FAILED, from, (tutti_status_t)hd->status, 0, payload, strlen(payload) + 1,
                   from);
        }
        break;
    case TT_STAR_LEAVING: leaving(s, from, hd->seq); break;
    case TT_STAR_REVOKE:
        if (!h->revoke_sent) { /* the first revocation speaks for all */
            h->revoke_sent = 1;
            to_all(s, TT_STAR_REVOKED, from, 0, 0, NULL, 0, from);
        }
        break;
    case TT_STAR_QUERY: query_start(s, from); break;
    case TT_STAR_STATE: query_answer(s, from, hd, payload); break;
    default: TT_DEBUG(TT_SUB_INIT, "star hub: rank %d sent a frame of type %u", from, hd->type); break;
    }
}

void tt_star_hub_gone(tt_star_t *s, int r)
{
    tt_star_hub_t *h = s->hub;
    if (h->gone[r])
        return;
    h->gone[r] = 1;
    if (h->done_sent)
        return;         /* the job is over */
    if (h->failed[r]) { /* it said why: its end is no news, but a shrink must know */
        to_all(s, TT_STAR_FAILED, r, TUTTI_ERR_PEER_FAILED, 2, "", 1, r);
        return;
    }
    /* A rank in destroy that closes was announced as leaving: only those
     * waiting with it in destroy's barrier need to hear it is gone. */
    static const char why[] = "its process ended or its connection to rank 0 closed";
    for (int q = 0; q < h->n; q++)
        if (q != r && !h->gone[q] && (!h->leaving[r] || h->leaving[q]))
            tt_star_send(h->fds[q], TT_STAR_FAILED, r, TUTTI_ERR_PEER_FAILED, 1, why, sizeof why,
                         s->timeout_ms);
}
