/* SPDX-License-Identifier: MIT */
/*
 * The hub, run by rank 0's star thread. Whatever a rank sends up the tree
 * reaches it, from whichever child brought it; what it says goes down the
 * tree to every rank (rank 0's own member side included), and each rank
 * keeps what concerns it. It gathers the set-up exchanges; relays a rank
 * giving up, dying (its parent saw its connection close, or its child did
 * and the parent is gone too), entering destroy and revoking; ends
 * destroy's barrier; answers the who-is-stuck query by polling every rank
 * and sending the report to all; and tells a rank that attaches late (its
 * parent died) what it may have missed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "transports/transport.h"

/* How long rank 0 waits for a rank's parent to report its death after a
 * child of the rank said its connection closed: the parent is the better
 * witness (it also relays the rank's last words), but it may be gone too. */
#define HINT_GRACE_MS 300

tt_star_hub_t *tt_star_hub_new(int nranks)
{
    tt_star_hub_t *h = calloc(1, sizeof *h);
    size_t n = (size_t)nranks;
    if (!h)
        return NULL;
    h->n = nranks;
    h->left_rank = h->revoker = h->first_failed = -1;
    h->gone = calloc(n, 1);
    h->failed = calloc(n, 1);
    h->leaving = calloc(n, 1);
    h->hinted = calloc(n, sizeof *h->hinted);
    h->leave_after = calloc(n, sizeof *h->leave_after);
    h->xhave = calloc(n, 1);
    h->states = calloc(n, sizeof *h->states);
    h->answered = calloc(n, 1);
    h->done_text = calloc(1, TT_STAR_TEXT);
    h->first_text = calloc(1, TT_STAR_TEXT);
    if (!h->gone || !h->failed || !h->leaving || !h->hinted || !h->leave_after || !h->xhave || !h->states ||
        !h->answered || !h->done_text || !h->first_text) {
        tt_star_hub_free(h);
        return NULL;
    }
    return h;
}

void tt_star_hub_free(tt_star_hub_t *h)
{
    if (!h)
        return;
    free(h->gone);
    free(h->failed);
    free(h->leaving);
    free(h->hinted);
    free(h->leave_after);
    free(h->xbuf);
    free(h->xhave);
    free(h->states);
    free(h->answered);
    free(h->done_text);
    free(h->first_text);
    free(h);
}

/* One frame down the tree to every rank, rank 0 included; reserved: a
 * FAILED frame's flags. */
static void down(tt_star_t *s, int type, int rank, tutti_status_t status, uint64_t seq, const void *p,
                 size_t len, int reserved)
{
    tt_star_frame_t *f = tt_star_frame_new(type, rank, status, seq, p, len);
    if (!f) {
        TT_ERROR(TT_SUB_INIT, "star hub: no memory for a notice to the ranks");
        return;
    }
    f->hdr.reserved = (uint16_t)reserved;
    tt_star_to_kids(s, &f->hdr, f->payload);
    s->roles.member_frame(s, 0, &f->hdr, f->payload);
    free(f);
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
    if (++h->xcount < h->n)
        return;
    h->xcount = 0;
    pthread_mutex_lock(&s->lock);
    if (s->gather_buf && s->xround == h->xseq)
        memcpy(s->gather_buf, h->xbuf, (size_t)h->n * h->xsize);
    s->gathered = h->xseq;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Everyone is in destroy: do they agree on how many collectives they made? */
static void all_left(tt_star_t *s)
{
    tt_star_hub_t *h = s->hub;
    h->done_text[0] = '\0';
    h->done_status = TUTTI_SUCCESS;
    for (int r = 1; r < h->n && !h->done_status; r++)
        if (h->leave_after[r] != h->leave_after[0]) {
            h->done_status = TUTTI_ERR_MISMATCH;
            snprintf(h->done_text, TT_STAR_TEXT,
                     "ranks called it after different numbers of collectives: rank 0 after %llu, rank %d "
                     "after %llu",
                     (unsigned long long)h->leave_after[0], r, (unsigned long long)h->leave_after[r]);
        }
    h->done_sent = 1;
    down(s, TT_STAR_DONE, 0, h->done_status, 0, h->done_text, strlen(h->done_text) + 1, 0);
}

/* A rank in destroy: the first one is news for every rank still making
 * collectives (the others learn only of the first, as before). */
static void leaving(tt_star_t *s, int from, uint64_t after)
{
    tt_star_hub_t *h = s->hub;
    if (h->leaving[from])
        return;
    h->leaving[from] = 1;
    h->leave_after[from] = after;
    if (h->left_rank < 0) {
        h->left_rank = from;
        down(s, TT_STAR_LEFT, from, 0, after, NULL, 0, 0);
    }
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
    h->q_active = 0;
    down(s, TT_STAR_REPORT, 0, 0, h->qid, text, strlen(text) + 1, 0);
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
    down(s, TT_STAR_POLL, 0, 0, h->qid, NULL, 0, 0);
}

static void query_answer(tt_star_t *s, int from, const tt_star_hdr_t *hd, const char *payload)
{
    tt_star_hub_t *h = s->hub;
    if (!h->q_active || hd->seq != h->qid || hd->len != sizeof(tt_stuck_state_t))
        return;
    memcpy(&h->states[from], payload, sizeof(tt_stuck_state_t));
    h->answered[from] = 1;
}

int64_t tt_star_hub_wake(const tt_star_t *s)
{
    const tt_star_hub_t *h = s->hub;
    int64_t wake = h->q_active ? h->q_deadline : -1;
    for (int r = 1; h->nhinted && r < h->n; r++)
        if (h->hinted[r] && !h->gone[r] && (wake < 0 || h->hinted[r] + HINT_GRACE_MS < wake))
            wake = h->hinted[r] + HINT_GRACE_MS;
    return wake;
}

void tt_star_hub_tick(tt_star_t *s)
{
    tt_star_hub_t *h = s->hub;
    int64_t now = tt_now_ms();
    for (int r = 1; h->nhinted && r < h->n; r++)
        if (h->hinted[r] && !h->gone[r] &&
            (now >= h->hinted[r] + HINT_GRACE_MS || h->gone[tt_star_parent(r)]))
            tt_star_hub_gone(s, r, 0);
    if (!h->q_active)
        return;
    int all = 1;
    for (int r = 0; r < h->n && all; r++)
        all = h->answered[r] || h->gone[r];
    if (all || now >= h->q_deadline)
        query_finish(s);
}

static void failed(tt_star_t *s, int from, tutti_status_t st, uint64_t call, const char *why)
{
    tt_star_hub_t *h = s->hub;
    if (h->failed[from])
        return;
    h->failed[from] = 1;
    if (h->first_failed < 0 || call < h->first_call) {
        h->first_failed = from;
        h->first_status = st;
        h->first_call = call;
        snprintf(h->first_text, TT_STAR_TEXT, "%s", why);
    }
    down(s, TT_STAR_FAILED, from, st, call, why, strlen(why) + 1, 0);
}

void tt_star_hub_frame(tt_star_t *s, int from, const tt_star_hdr_t *hd, const char *payload)
{
    tt_star_hub_t *h = s->hub;
    switch (hd->type) {
    case TT_STAR_DATA: gather(s, from, hd, payload); break;
    case TT_STAR_FAIL: failed(s, from, (tutti_status_t)hd->status, hd->seq, payload); break;
    case TT_STAR_LEAVING: leaving(s, from, hd->seq); break;
    case TT_STAR_REVOKE:
        if (h->revoker < 0) { /* the first revocation speaks for all */
            h->revoker = from;
            down(s, TT_STAR_REVOKED, from, 0, 0, NULL, 0, 0);
        }
        break;
    case TT_STAR_QUERY: query_start(s, from); break;
    case TT_STAR_STATE: query_answer(s, from, hd, payload); break;
    case TT_STAR_GONE: tt_star_hub_gone(s, hd->rank, hd->seq == 1); break;
    default: TT_DEBUG(TT_SUB_INIT, "star hub: rank %d sent a frame of type %u", from, hd->type); break;
    }
}

void tt_star_hub_gone(tt_star_t *s, int r, int hint)
{
    tt_star_hub_t *h = s->hub;
    if (r <= 0 || r >= h->n || h->gone[r])
        return;
    if (hint) {
        h->nhinted += !h->hinted[r];
        if (!h->hinted[r])
            h->hinted[r] = tt_now_ms();
        return;
    }
    h->nhinted -= h->hinted[r] != 0;
    h->gone[r] = 1;
    if (h->done_sent)
        return;       /* the job is over */
    if (h->failed[r]) /* it said why: its end is no news, but a shrink must know */
        return down(s, TT_STAR_FAILED, r, TUTTI_ERR_PEER_FAILED, 0, "", 1, TT_STAR_FAILED_ENDED);
    /* A rank in destroy that closes was announced as leaving: only those
     * waiting with it in destroy's barrier need to hear it is gone. */
    static const char why[] = "its process ended or its connection closed";
    down(s, TT_STAR_FAILED, r, TUTTI_ERR_PEER_FAILED, 0, why, sizeof why,
         TT_STAR_FAILED_DIED | (h->leaving[r] ? TT_STAR_FAILED_FOR_LEAVERS : 0));
}

/* A notice to one link only (an orphan, which passes it to its subtree). */
static void tell(tt_star_t *s, tt_star_link_t *l, int type, int rank, tutti_status_t st, uint64_t seq,
                 const char *text, int reserved)
{
    tt_star_frame_t *f = tt_star_frame_new(type, rank, st, seq, text, text ? strlen(text) + 1 : 0);
    if (!f)
        return;
    f->hdr.reserved = (uint16_t)reserved;
    tt_star_link_queue(s, l, &f->hdr, f->payload);
    free(f);
}

void tt_star_hub_adopt(tt_star_t *s, tt_star_link_t *l)
{
    tt_star_hub_t *h = s->hub;
    TT_DEBUG(TT_SUB_INIT, "star hub: rank %d attached to rank 0 (its parent is gone)", l->rank);
    if (h->first_failed >= 0)
        tell(s, l, TT_STAR_FAILED, h->first_failed, h->first_status, h->first_call, h->first_text, 0);
    for (int r = 1; r < h->n; r++)
        if (h->gone[r])
            tell(s, l, TT_STAR_FAILED, r, TUTTI_ERR_PEER_FAILED, 0, "",
                 h->failed[r] ? TT_STAR_FAILED_ENDED
                              : TT_STAR_FAILED_DIED | (h->leaving[r] ? TT_STAR_FAILED_FOR_LEAVERS : 0));
    if (h->left_rank >= 0)
        tell(s, l, TT_STAR_LEFT, h->left_rank, 0, h->leave_after[h->left_rank], NULL, 0);
    if (h->revoker >= 0)
        tell(s, l, TT_STAR_REVOKED, h->revoker, 0, 0, NULL, 0);
    if (h->done_sent)
        tell(s, l, TT_STAR_DONE, 0, h->done_status, 0, h->done_text, 0);
}
