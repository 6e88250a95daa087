/* SPDX-License-Identifier: MIT */
/*
 * The messages of a shrink's agreement. Each carries a header (who sends
 * it, to whom, in a communicator of how many, its nonce), a body, and a
 * code over the nonce it answers, the header and the body, keyed with the
 * shrink's key, which never travels. A coordinator thus proves the key to
 * a member before the member says anything of its own, and an answer
 * cannot be replayed to another member or another exchange; what an answer
 * says is then checked field by field before anything trusts it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/error.h"
#include "comm/shrink.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/ranks.h"

void tt_rescue_nonce(unsigned char nonce[TT_RESCUE_NONCE])
{
    if (tt_random_key(nonce)) { /* no random source: still unique per exchange */
        int64_t t = tt_now_ns();
        pid_t pid = getpid();
        memcpy(nonce, &t, sizeof t);
        memcpy(nonce + sizeof t, &pid, sizeof pid);
    }
}

static size_t tail_len(const tt_shrink_t *sh, tt_rescue_kind_t kind)
{
    return kind == TT_RESCUE_HELLO || kind == TT_RESCUE_CHALLENGE ? 0 : (size_t)sh->n;
}

size_t tt_rescue_body_len(const tt_shrink_t *sh, tt_rescue_kind_t kind)
{
    (void)sh;
    switch (kind) {
    case TT_RESCUE_JOIN: return sizeof(tt_rescue_join_t);
    case TT_RESCUE_ANSWER:
    case TT_RESCUE_VERDICT: return sizeof(tt_rescue_decision_t);
    default: return 0;
    }
}

/* Bytes after the header: body, tail and (but for a hello) the code. */
static size_t payload_len(const tt_shrink_t *sh, tt_rescue_kind_t kind)
{
    return tt_rescue_body_len(sh, kind) + tail_len(sh, kind) + (kind == TT_RESCUE_HELLO ? 0 : TT_MAC_BYTES);
}

/* The code of msg (header, then len bytes), answering the nonce theirs. */
static int code_of(const tt_shrink_t *sh, const unsigned char *theirs, const tt_rescue_hdr_t *hdr,
                   const unsigned char *p, size_t len, unsigned char out[TT_MAC_BYTES])
{
    static const unsigned char none[TT_RESCUE_NONCE];
    unsigned char *buf = malloc(TT_RESCUE_NONCE + sizeof *hdr + len);
    if (!buf)
        return -1;
    memcpy(buf, theirs ? theirs : none, TT_RESCUE_NONCE);
    memcpy(buf + TT_RESCUE_NONCE, hdr, sizeof *hdr);
    memcpy(buf + TT_RESCUE_NONCE + sizeof *hdr, p, len);
    tt_mac(sh->key, buf, TT_RESCUE_NONCE + sizeof *hdr + len, out);
    free(buf);
    return 0;
}

tutti_status_t tt_rescue_send(const tt_shrink_t *sh, int fd, tt_rescue_kind_t kind, int to,
                              const unsigned char *mine, const unsigned char *theirs, const void *body,
                              size_t len, const unsigned char *tail, int64_t deadline_ms)
{
    size_t tl = tail_len(sh, kind), plen = payload_len(sh, kind);
    tt_rescue_hdr_t h = {.magic = TT_RESCUE_MAGIC,
                         .kind = kind,
                         .no = sh->no,
                         .rank = sh->me,
                         .to = to,
                         .nranks = sh->n,
                         .len = (uint32_t)plen};
    memcpy(h.nonce, mine, TT_RESCUE_NONCE);
    unsigned char *msg = malloc(sizeof h + plen);
    if (!msg)
        return TUTTI_ERR_NO_MEMORY;
    memcpy(msg, &h, sizeof h);
    if (len) /* a hello or a challenge has no body, and no tail: NULL */
        memcpy(msg + sizeof h, body, len);
    if (tl)
        memcpy(msg + sizeof h + len, tail, tl);
    tutti_status_t st = TUTTI_SUCCESS;
    if (kind != TT_RESCUE_HELLO &&
        code_of(sh, theirs, &h, msg + sizeof h, len + tl, msg + sizeof h + len + tl))
        st = TUTTI_ERR_NO_MEMORY;
    if (!st)
        st = tt_sock_send_all(fd, msg, sizeof h + plen, deadline_ms);
    free(msg);
    return st;
}

int tt_rescue_hdr_ok(const tt_shrink_t *sh, const tt_rescue_hdr_t *hdr, tt_rescue_kind_t kind, int from)
{
    /* A verdict of any shrink may leave this rank out (tt_rescue_verdict_ok);
     * every other message is of one shrink, and taken only by it. */
    return hdr->magic == TT_RESCUE_MAGIC && hdr->kind == (uint32_t)kind && hdr->nranks == sh->n &&
           (kind == TT_RESCUE_VERDICT || hdr->no == sh->no) &&
           hdr->to == sh->me && hdr->rank >= 0 && hdr->rank < sh->n && hdr->rank != sh->me &&
           (from < 0 || hdr->rank == from) && hdr->len == payload_len(sh, kind);
}

int tt_rescue_check(const tt_shrink_t *sh, const tt_rescue_hdr_t *hdr, const unsigned char *payload,
                    const unsigned char *theirs)
{
    unsigned char want[TT_MAC_BYTES];
    size_t len = hdr->len - TT_MAC_BYTES;
    return hdr->len >= TT_MAC_BYTES && code_of(sh, theirs, hdr, payload, len, want) == 0 &&
           tt_mac_equal(want, payload + len);
}

/* Reads one whole message of kind from rank c (sent whole, so it comes
 * promptly once it begins) and checks its code; *payload is the caller's. */
static tutti_status_t recv_checked(const tt_shrink_t *sh, int fd, tt_rescue_kind_t kind, int c,
                                   const unsigned char *theirs, tt_rescue_hdr_t *hdr, unsigned char **payload)
{
    int64_t until = tt_now_ms() + TT_RESCUE_STEP_MS * 10;
    *payload = NULL;
    if (tt_sock_recv_all(fd, hdr, sizeof *hdr, until))
        return TUTTI_ERR_PEER_FAILED;
    if (!tt_rescue_hdr_ok(sh, hdr, kind, c))
        return TUTTI_ERR_AUTH;
    *payload = malloc(hdr->len);
    if (!*payload)
        return TUTTI_ERR_NO_MEMORY;
    if (tt_sock_recv_all(fd, *payload, hdr->len, until))
        return TUTTI_ERR_PEER_FAILED;
    return tt_rescue_check(sh, hdr, *payload, theirs) ? TUTTI_SUCCESS : TUTTI_ERR_AUTH;
}

tutti_status_t tt_rescue_join(tt_shrink_t *sh, int c, int fd, unsigned char mine[TT_RESCUE_NONCE],
                              unsigned char theirs[TT_RESCUE_NONCE])
{
    tt_rescue_hdr_t hdr;
    unsigned char *p;
    tutti_status_t st = recv_checked(sh, fd, TT_RESCUE_CHALLENGE, c, mine, &hdr, &p);
    free(p);
    if (st)
        return st;
    memcpy(theirs, hdr.nonce, TT_RESCUE_NONCE);
    tt_rescue_join_t j = {.flags = sh->flags & TUTTI_SHRINK_DEAD, .exclude_hash = sh->exclude_hash};
    return tt_rescue_send(sh, fd, TT_RESCUE_JOIN, c, mine, theirs, &j, sizeof j, sh->dead,
                          tt_now_ms() + sh->comm->timeout_ms);
}

/* The mask of the new key for the member whose exchange used nonces m (its own) and c. */
static void key_mask(const tt_shrink_t *sh, const unsigned char *m, const unsigned char *c,
                     unsigned char out[TT_MAC_BYTES])
{
    unsigned char both[2 * TT_RESCUE_NONCE];
    memcpy(both, m, TT_RESCUE_NONCE);
    memcpy(both + TT_RESCUE_NONCE, c, TT_RESCUE_NONCE);
    tt_mac(sh->key, both, sizeof both, out);
}

/* Whether a decision from coordinator c holds together, as a member
 * (want_member 1: this rank in it, at newrank) or a left-out rank (0). A
 * decision made with another list is checked only for its shape: it says
 * the lists differ. */
static int decision_ok(const tt_shrink_t *sh, int c, const tt_rescue_decision_t *d,
                       const unsigned char *member, int want_member)
{
    if (d->status < TUTTI_SUCCESS || d->status > TUTTI_ERR_REVOKED || !memchr(d->why, '\0', sizeof d->why))
        return 0;
    int same = d->flags == (sh->flags & TUTTI_SHRINK_DEAD) && d->exclude_hash == sh->exclude_hash;
    int count = 0, below = 0;
    for (int r = 0; r < sh->n; r++) {
        if (member[r] > 1 || (member[r] && (d->status || r < c || (same && sh->excluded[r]))))
            return 0;
        count += member[r];
        below += member[r] && r < sh->me;
    }
    if (d->status)
        return d->nmembers == 0 && d->newrank == -1;
    if (member[c] != 1 || member[sh->me] != want_member || d->nmembers != count || count < 1 + want_member)
        return 0;
    return !want_member ? d->newrank == -1 : same && d->newrank == below;
}

tutti_status_t tt_rescue_read_answer(tt_shrink_t *sh, int c, int fd, const unsigned char *mine,
                                     const unsigned char *theirs)
{
    tt_rescue_hdr_t hdr;
    unsigned char *p;
    tutti_status_t st = recv_checked(sh, fd, TT_RESCUE_ANSWER, c, mine, &hdr, &p);
    if (!st && memcmp(hdr.nonce, theirs, TT_RESCUE_NONCE))
        st = TUTTI_ERR_AUTH; /* the code binds it, but say so plainly */
    if (!st) {
        memcpy(&sh->d, p, sizeof sh->d);
        memcpy(sh->member, p + sizeof sh->d, (size_t)sh->n);
        if (!decision_ok(sh, c, &sh->d, sh->member, 1))
            st =
                tt_comm_error(NULL, TUTTI_ERR_INTERNAL,
                              "tutti_comm_shrink: rank %d, the coordinator, answered rank %d with a decision "
                              "that does not hold together (status %d, %d members, new rank %d)",
                              c, sh->me, sh->d.status, sh->d.nmembers, sh->d.newrank);
    }
    free(p);
    if (!st && !sh->d.status) {
        unsigned char mask[TT_MAC_BYTES];
        key_mask(sh, mine, theirs, mask);
        for (int i = 0; i < TT_KEY_BYTES; i++)
            sh->d.key[i] ^= mask[i];
    }
    return st;
}

void tt_rescue_answer(tt_shrink_t *sh, int m, int newrank)
{
    tt_rescue_member_t *j = &sh->joined[m];
    tt_rescue_decision_t d = sh->d;
    d.newrank = newrank;
    if (!d.status) {
        unsigned char mask[TT_MAC_BYTES];
        key_mask(sh, j->theirs, j->mine, mask);
        for (int i = 0; i < TT_KEY_BYTES; i++)
            d.key[i] ^= mask[i];
    }
    if (tt_rescue_send(sh, j->fd, TT_RESCUE_ANSWER, m, j->mine, j->theirs, &d, sizeof d, sh->member,
                       tt_now_ms() + sh->comm->timeout_ms))
        TT_DEBUG(TT_SUB_INIT, "shrink: the answer did not reach rank %d (it died: the set-up will say)", m);
}

int tt_rescue_read_reply(const tt_shrink_t *sh, int r, int fd, const unsigned char *mine, tutti_status_t *st)
{
    tt_rescue_hdr_t hdr;
    tt_rescue_decision_t d;
    unsigned char *p;
    int ok = recv_checked(sh, fd, TT_RESCUE_VERDICT, r, mine, &hdr, &p) == TUTTI_SUCCESS;
    if (ok) {
        memcpy(&d, p, sizeof d);
        ok = tt_rescue_verdict_ok(sh, &hdr, &d, p + sizeof d, st);
    }
    free(p);
    return ok;
}

int tt_rescue_verdict_ok(const tt_shrink_t *sh, const tt_rescue_hdr_t *hdr, const tt_rescue_decision_t *d,
                         const unsigned char *member, tutti_status_t *st)
{
    int from = hdr->rank;
    if (!decision_ok(sh, from, d, member, 0))
        return 0;
    if (!d->status) { /* whichever shrink of comm it was: this rank is out of comm's future */
        char who[256];
        tt_ranks_str(member, sh->n, who, sizeof who);
        sh->comm->shrunk_out_by = from;
        sh->comm->shrunk_out_no = hdr->no;
        *st = tt_comm_error(NULL, TUTTI_ERR_REVOKED,
                            "tutti_comm_shrink: rank %d was excluded by the survivors: rank %d coordinated "
                            "this communicator's shrink #%u and made a communicator of ranks %s without it",
                            sh->me, from, hdr->no + 1, who);
        return 1;
    }
    if (hdr->no != sh->no) /* another shrink's failure: not this one's */
        return 0;
    *st = tt_comm_error(NULL, (tutti_status_t)d->status, "%s (told by rank %d)", d->why, from);
    return 1;
}
