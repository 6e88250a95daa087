/* SPDX-License-Identifier: MIT */
/*
 * Joining the bootstrap's tree. Rank 0 admits every rank on the job's root
 * address (many at once, by key: core/admit.c); each sends the address of
 * a listener of its own. Once all are in, rank 0 answers each with where
 * its parent in the tree listens and closes: it holds these connections
 * only while the communicator forms, and handles one small record per
 * rank. Each rank then connects to its parent. A rank that cannot join is
 * named, and the ranks that did are told why the job will not form.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/star_impl.h"
#include "core/admit.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/ranks.h"
#include "core/try.h"

/* What rank 0 tells a joining rank. */
typedef struct {
    tt_sockaddr_t parent, root;
} welcome_t;

/* Whether this rank's root admits rank r: every other rank in a one-root
 * job; its own block's, and the other roots with theirs, on rank 0; its
 * own block's on another root. */
static int admits(const tt_bootstrap_t *bs, int r)
{
    return r >= 0 && r < bs->nranks && r != bs->rank &&
           (bs->block == 0 || tt_root_of(r, bs->nranks, bs->nroots) == bs->block);
}

/* Whether rank r comes to rank 0 as the root of another block. */
static int other_root(const tt_bootstrap_t *bs, int r)
{
    return bs->block == 0 && tt_root_of(r, bs->nranks, bs->nroots) != 0;
}

/* The ranks that have not joined, for the message that says the job failed. */
static void missing_ranks(const tt_bootstrap_t *bs, char *out, size_t len)
{
    unsigned char *missing = calloc((size_t)bs->nranks, 1);
    if (!missing) {
        snprintf(out, len, "some ranks");
        return;
    }
    for (int r = 0; r < bs->nranks; r++)
        missing[r] = admits(bs, r) && bs->rank_fds[r] == -1;
    tt_ranks_str(missing, bs->nranks, out, len);
    free(missing);
}

/* Tells the ranks that joined why the job will not form (they wait for
 * their welcome), so they fail at once with the reason. What they sent
 * meanwhile is read and dropped until they close (1 s at most): a socket
 * closed with unread bytes is reset, and the reason with it. */
void tt_bootstrap_tell_joined(const tt_bootstrap_t *bs, tutti_status_t st, const char *why)
{
    for (int r = 0; r < bs->nranks; r++)
        if (bs->rank_fds[r] >= 0) {
            tt_star_send(bs->rank_fds[r], TT_STAR_WELCOME, 0, st, 0, why, strlen(why) + 1, 1000);
            shutdown(bs->rank_fds[r], SHUT_WR);
        }
    int64_t until = tt_now_ms() + 1000;
    for (int r = 0; r < bs->nranks; r++)
        while (bs->rank_fds[r] >= 0) {
            char sink[512];
            struct pollfd p = {.fd = bs->rank_fds[r], .events = POLLIN};
            int64_t left = until - tt_now_ms();
            if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                break;
            ssize_t n = recv(bs->rank_fds[r], sink, sizeof sink, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                break;
        }
}

/* Reads rank r's join (its listener's address) from fd: 0; -1 when it
 * sent something else or nothing in time; -2 when it brought a block as
 * another root does, so its ids are not this root's. */
static int read_join(tt_bootstrap_t *bs, int fd, int r, int64_t deadline)
{
    tt_star_hdr_t h;
    tt_sockaddr_t addr;
    if (tt_sock_recv_all(fd, &h, sizeof h, deadline) || !tt_star_hdr_ok(&h, bs->nranks))
        return -1;
    if (h.type == TT_STAR_BLOCK)
        return -2;
    if (h.type != TT_STAR_JOIN || h.len != sizeof addr || tt_sock_recv_all(fd, &addr, sizeof addr, deadline))
        return -1;
    bs->bytes_in += sizeof h + sizeof addr;
    bs->addrs[r] = addr;
    return 0;
}

/* A hello this root does not admit: another size, a rank of another
 * block, one that joined already. Logged and told, then closed. */
static void refuse_rank(const tt_bootstrap_t *bs, int fd, const tt_hello_t *h)
{
    TT_WARN(TT_SUB_INIT, "refused rank %d of %d: this communicator has %d ranks%s", h->rank, h->nranks,
            bs->nranks,
            h->nranks != bs->nranks ? ""
            : !admits(bs, h->rank)  ? ", and that rank joins another of its roots"
                                    : " and that rank already joined");
    tt_hello_t no = {.magic = TT_HELLO_MAGIC, .rank = TT_HELLO_REFUSED_RANK};
    if (send(fd, &no, sizeof no, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        TT_DEBUG(TT_SUB_INIT, "the refusal of rank %d did not go out: %s", h->rank, strerror(errno));
    close(fd);
}

/* Rank r came as a member where another block's root was due
 * (as_member), or the other way round: its ids are not this root's. Every
 * rank this root admitted, r too, is told at once. */
static tutti_status_t ids_differ(const tt_bootstrap_t *bs, const char *me, int r, int as_member, char *err,
                                 size_t errlen)
{
    snprintf(err, errlen,
             "%s: rank %d joined as %s, but this root counts %d root%s: every rank must pass the same ids to "
             "tutti_comm_init_roots",
             me, r, as_member ? "a member of this root's block" : "another block's root", bs->nroots,
             bs->nroots == 1 ? "" : "s");
    tt_bootstrap_tell_joined(bs, TUTTI_ERR_CONFIG, err);
    return TUTTI_ERR_CONFIG;
}

tutti_status_t tt_bootstrap_root_admit(tt_bootstrap_t *bs, int listen_fd, int64_t deadline, char *err,
                                       size_t errlen)
{
    int joined = 1, lost = -1;
    int want = bs->block == 0 ? bs->nranks : tt_root_size(bs->block, bs->nranks, bs->nroots);
    char me[48] = "bootstrap root";
    if (bs->block)
        snprintf(me, sizeof me, "bootstrap root %d (rank %d)", bs->block, bs->rank);
    tt_admit_t *a = tt_admit_new(listen_fd, bs->key, TT_SUB_INIT, "the bootstrap root", NULL, NULL);
    if (!a) {
        snprintf(err, errlen, "%s: no memory to admit the ranks", me);
        return TUTTI_ERR_NO_MEMORY;
    }
    a->answer_refusals = 1; /* a joiner with another key learns it is refused (TUTTI_ERR_AUTH) */
    tutti_status_t st = TUTTI_SUCCESS;
    while (joined < want) {
        int fd;
        tt_hello_t h;
        st = tt_admit_next(a, deadline, &fd, &h);
        if (st != TUTTI_SUCCESS) {
            char missing[256];
            missing_ranks(bs, missing, sizeof missing);
            snprintf(err, errlen, "%s: %d of %d ranks joined before %s; missing: %s", me, joined, want,
                     st == TUTTI_ERR_TIMEOUT ? "the timeout"
                     : a->fd_error           ? "it ran out of descriptors (see above)"
                                             : "accept failed",
                     missing);
            tt_bootstrap_tell_joined(bs, st, err);
            break;
        }
        bs->bytes_in += sizeof h;
        if (h.nranks != bs->nranks || !admits(bs, h.rank) || bs->rank_fds[h.rank] != -1) {
            refuse_rank(bs, fd, &h);
            continue;
        }
        /* The answer tells the joiner it reached tutti's root of this job;
         * its address follows at once. One that has the key and then goes
         * has died while the job formed, which the ranks that joined learn
         * now rather than at the timeout. */
        int64_t until = tt_now_ms() + TT_ADMIT_HELLO_MS;
        until = until < deadline ? until : deadline;
        int root = other_root(bs, h.rank); /* another block's root brings its block */
        int many =
            root ? tt_root_size(tt_root_of(h.rank, bs->nranks, bs->nroots), bs->nranks, bs->nroots) : 1;
        int rc =
            tt_hello_send(fd, bs->key, 0, bs->nranks, 0, deadline)
                ? -1
                : (root ? tt_bootstrap_read_block(bs, fd, h.rank, until) : read_join(bs, fd, h.rank, until));
        if (rc == -2) { /* told with the others, so that it fails at once too */
            bs->rank_fds[h.rank] = fd;
            st = ids_differ(bs, me, h.rank, root, err, errlen);
            break;
        }
        if (rc) {
            close(fd);
            lost = lost < 0 ? h.rank : lost;
            bs->rank_fds[h.rank] = -2; /* neither joined nor missing: the others need not wait for it */
            joined += many;
            continue;
        }
        bs->bytes_out += sizeof h;
        bs->rank_fds[h.rank] = fd;
        bs->admitted++;
        joined += many;
        TT_DEBUG(TT_SUB_INIT, "bootstrap: rank %d joined (%d/%d)", h.rank, joined, bs->nranks);
    }
    tt_admit_free(a);
    if (!st && lost >= 0) {
        snprintf(err, errlen, "%s: rank %d died or lost its connection while the job formed", me, lost);
        tt_bootstrap_tell_joined(bs, TUTTI_ERR_PEER_FAILED, err);
        st = TUTTI_ERR_PEER_FAILED;
    }
    return st;
}

tutti_status_t tt_bootstrap_root_read(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen)
{
    for (int r = 1; r < bs->nranks; r++)
        if (read_join(bs, bs->rank_fds[r], r, deadline)) {
            snprintf(err, errlen, "rank 0: rank %d did not send where it listens", r);
            tt_bootstrap_tell_joined(bs, TUTTI_ERR_PEER_FAILED, err);
            return TUTTI_ERR_PEER_FAILED;
        }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_welcome(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen)
{
    for (int r = 0; r < bs->nranks; r++) {
        if (bs->rank_fds[r] < 0)
            continue; /* this rank, or one that joined through its block's root */
        welcome_t w = {.parent = bs->addrs[tt_star_parent(r)], .root = bs->root};
        tutti_status_t st =
            other_root(bs, r) ? tt_bootstrap_send_parents(bs, bs->rank_fds[r], r, deadline) : TUTTI_SUCCESS;
        if (!st)
            st =
                tt_star_send(bs->rank_fds[r], TT_STAR_WELCOME, 0, 0, 0, &w, sizeof w, deadline - tt_now_ms());
        if (st) {
            snprintf(err, errlen, "rank 0 could not tell rank %d where its parent listens: %s", r,
                     tutti_strerror(st));
            tt_bootstrap_tell_joined(bs, st, err);
            return st;
        }
        bs->bytes_out += sizeof(tt_star_hdr_t) + sizeof w;
        close(bs->rank_fds[r]);
        bs->rank_fds[r] = -1;
    }
    return TUTTI_SUCCESS;
}

/* Why the first bytes from the root's address are not the job's root's. */
static const char *not_root(const tt_hello_t *h, size_t got, const unsigned char *key)
{
    if (got >= sizeof h->magic && h->magic != TT_HELLO_MAGIC)
        return "it answered with bytes that are not tutti's, so another program holds that address";
    if (got == sizeof *h && !tt_hello_matches(h, key))
        return "it is the root of another tutti job (another key)";
    return NULL;
}

/*
 * The joiner's side of the root's answer: anything but the answer, or the
 * connection closed, means whatever listens at the root's address is not
 * this job's root, and is said at once instead of at the deadline. A root
 * that is silent may merely be late (its listener is made before it
 * serves), so that is only warned about, once.
 */
static tutti_status_t await_root(tt_bootstrap_t *bs, const char *where, const char *note, int64_t deadline,
                                 char *err, size_t errlen)
{
    tt_hello_t h;
    size_t got = 0;
    int64_t warn_at = tt_now_ms() + TT_HELLO_WAIT_MS;
    while (got < sizeof h) {
        int64_t now = tt_now_ms(), until = warn_at > now && warn_at < deadline ? warn_at : deadline;
        if (now >= deadline) {
            snprintf(err, errlen, "rank %d: the bootstrap root at %s did not answer before the timeout%s",
                     bs->rank, where, note);
            return TUTTI_ERR_TIMEOUT;
        }
        struct pollfd p = {.fd = bs->up_fd, .events = POLLIN};
        int rc = poll(&p, 1, (int)(until - now < 1000 ? until - now : 1000));
        if (rc == 0 && warn_at && tt_now_ms() >= warn_at) {
            TT_WARN(TT_SUB_INIT,
                    "rank %d: the bootstrap root at %s has not answered for %d s; still waiting%s", bs->rank,
                    where, TT_HELLO_WAIT_MS / 1000, note);
            warn_at = 0;
        }
        if (rc <= 0)
            continue;
        ssize_t n = recv(bs->up_fd, (char *)&h + got, sizeof h - got, MSG_DONTWAIT);
        if (n > 0)
            got += (size_t)n;
        if (got == sizeof h && h.magic == TT_HELLO_MAGIC && h.rank < 0) {
            snprintf(err, errlen, "rank %d: the bootstrap root at %s refused it: %s", bs->rank, where,
                     h.rank == TT_HELLO_REFUSED_KEY
                         ? "its key is not the job's (another TUTTI_KEY or unique id)"
                         : "another process joined as this rank, or it counts another number of ranks");
            return TUTTI_ERR_AUTH;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            /* A root that dies before answering closes so too: only a
             * program that answers is told apart from it (not_root). */
            snprintf(
                err, errlen,
                "rank %d: the bootstrap root at %s closed the connection without answering: it died (its "
                "log says why), or the program there is not this job's root%s",
                bs->rank, where, note);
            return TUTTI_ERR_PEER_FAILED;
        }
        const char *why = not_root(&h, got, bs->key);
        if (why) {
            snprintf(err, errlen, "rank %d: the program at %s is not tutti's bootstrap root: %s%s", bs->rank,
                     where, why, note);
            return TUTTI_ERR_CONFIG;
        }
    }
    bs->bytes_in += sizeof h;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_reach_root(tt_bootstrap_t *bs, const tt_sockaddr_t *root, int64_t deadline,
                                       char *err, size_t errlen)
{
    char where[80], note[260] = "";
    tt_sock_addr_str(root, where, sizeof where);
    tt_bootstrap_root_note(bs->key, note, sizeof note);
    tutti_status_t st = tt_sock_connect(root, deadline, &bs->up_fd);
    if (!st)
        st = tt_hello_send(bs->up_fd, bs->key, bs->rank, bs->nranks, 0, deadline);
    if (st) {
        snprintf(err, errlen, "rank %d could not reach the bootstrap root at %s: %s", bs->rank, where,
                 tutti_strerror(st));
        return st;
    }
    bs->bytes_out += sizeof(tt_hello_t);
    return await_root(bs, where, note, deadline, err, errlen);
}

tutti_status_t tt_bootstrap_member_join(tt_bootstrap_t *bs, const tt_sockaddr_t *root, int64_t deadline,
                                        char *err, size_t errlen)
{
    TT_TRY(tt_bootstrap_reach_root(bs, root, deadline, err, errlen));
    return tt_bootstrap_send_join(bs, deadline, err, errlen);
}

tutti_status_t tt_bootstrap_send_join(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen)
{
    tutti_status_t st = tt_star_send(bs->up_fd, TT_STAR_JOIN, bs->rank, 0, 0, &bs->addr, sizeof bs->addr,
                                     deadline - tt_now_ms());
    if (st) {
        snprintf(err, errlen, "rank %d could not tell rank 0 where it listens: %s", bs->rank,
                 tutti_strerror(st));
        return st;
    }
    bs->bytes_out += sizeof(tt_star_hdr_t) + sizeof bs->addr;
    return TUTTI_SUCCESS;
}

/* Who welcomes this rank: rank 0, or for a member of another block, that
 * block's root (a root, which has rank_fds, reported to rank 0). */
static void welcomer(const tt_bootstrap_t *bs, char *out, size_t len)
{
    int first = tt_root_first(bs->block, bs->nranks, bs->nroots);
    if (bs->block == 0 || bs->rank_fds)
        snprintf(out, len, "rank 0");
    else
        snprintf(out, len, "bootstrap root %d (of ranks %d-%d)", bs->block, first,
                 first + tt_root_size(bs->block, bs->nranks, bs->nroots) - 1);
}

/* Reads rank 0's welcome (or its block root's): where the parent and rank
 * 0 listen, or why the job will not form. */
static tutti_status_t read_welcome(tt_bootstrap_t *bs, welcome_t *w, int64_t deadline, char *err,
                                   size_t errlen)
{
    tt_star_hdr_t h;
    tutti_status_t st = tt_sock_recv_all(bs->up_fd, &h, sizeof h, deadline);
    if (!st && (!tt_star_hdr_ok(&h, bs->nranks) || h.type != TT_STAR_WELCOME ||
                h.len > (h.status ? TT_STAR_TEXT : sizeof *w) || (!h.status && h.len != sizeof *w)))
        st = TUTTI_ERR_PEER_FAILED;
    char text[TT_STAR_TEXT + 1] = "";
    if (!st)
        st = tt_sock_recv_all(bs->up_fd, h.status ? (void *)text : (void *)w, h.len, deadline);
    if (st) {
        char who[64];
        welcomer(bs, who, sizeof who);
        snprintf(err, errlen, "rank %d: %s did not say where this rank's parent listens: %s", bs->rank, who,
                 st == TUTTI_ERR_TIMEOUT ? "not every rank joined within TUTTI_TIMEOUT"
                                         : "it closed the connection: it died (its log says why)");
        return st;
    }
    bs->bytes_in += sizeof h + h.len;
    if (h.status) {
        snprintf(err, errlen, "rank %d: %s", bs->rank, text);
        return (tutti_status_t)h.status;
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_attach(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen)
{
    welcome_t w;
    /* Rank 0 says why the job did not form at its own deadline, which can
     * come a little after this rank's (it may have begun later): wait that
     * much longer, so that the reason arrives rather than a bare timeout. */
    TT_TRY(read_welcome(bs, &w, deadline + TT_BOOTSTRAP_GRACE_MS, err, errlen));
    close(bs->up_fd);
    bs->up_fd = -1;
    bs->root = w.root;
    int parent = tt_star_parent(bs->rank);
    tutti_status_t st = tt_sock_connect(&w.parent, deadline, &bs->up_fd);
    if (!st)
        st = tt_hello_send(bs->up_fd, bs->key, bs->rank, bs->nranks, TT_STAR_HELLO_CHILD, deadline);
    if (st) {
        char where[80];
        tt_sock_addr_str(&w.parent, where, sizeof where);
        snprintf(err, errlen, "rank %d could not reach its parent in the bootstrap's tree, rank %d at %s: %s",
                 bs->rank, parent, where, tutti_strerror(st));
        return st;
    }
    bs->bytes_out += sizeof(tt_hello_t);
    return TUTTI_SUCCESS;
}
