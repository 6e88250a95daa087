/* SPDX-License-Identifier: MIT */
/*
 * A shrink's agreement: which ranks of comm form the new communicator,
 * reached without a working collective on comm (rank 0 may be dead), so
 * that no two groups of its ranks ever both go on.
 *
 * Every survivor knows the ranks the caller excluded and the ranks it found
 * dead: rank 0 relays each rank whose connection to it closed unannounced
 * (the star), a listener that refuses a connection belongs to a process
 * that no longer holds comm (rescue.c), and with TUTTI_SHRINK_DEAD a rank
 * stopped on this host counts as dead too. The lowest rank a survivor
 * believes alive coordinates: it admits the others on its listener, each
 * proving this shrink's key (shrink_inbox.c), until every rank it waits for
 * has joined or is found dead, a member disagrees, or TUTTI_TIMEOUT passes.
 *
 * Then it decides. Before any member hears of a communicator, every rank
 * left out that may still hold comm is told so (its listener keeps the
 * verdict for it, stopped or not; one that went on in a successor of comm
 * answers that this rank was left behind, and it gives way), and only then
 * does the coordinator look at its own listener once more: a verdict there
 * means another coordinator decided first, and it gives way. Of two
 * coordinators that leave each other out, the second to look sees the
 * first's verdict, so at most one goes on. A rank that cannot be told (its
 * host unreachable) may be alive beyond a partition: then the members must
 * be more than half of the ranks not known gone. A member whose
 * coordinator is gone (its connection closed, refused, or answered without
 * the key; the star says it died) turns to the next lowest rank, after a
 * look at its own listener. The coordinator is always the lowest member,
 * so it is rank 0 of the new communicator, and the connections it admitted
 * become the new star.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/error.h"
#include "comm/handle.h"
#include "comm/shrink.h"
#include "comm/star.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/ranks.h"

#define PROBE_EVERY_MS 200
#define TELL_MS 1000 /* to leave a verdict at one rank's listener */
#define LOOK_MS 20   /* between the coordinator's looks at the news: a death ends its wait soon */
#define REPLY_MS 500 /* for the listeners told a decision to take it or answer it */

/* Whether comm was aborted from another thread meanwhile. */
static int aborted(const tt_shrink_t *sh)
{
    return tt_comm_lookup(sh->comm->handle, NULL) != sh->comm;
}

static tutti_status_t aborted_error(const tt_shrink_t *sh)
{
    return tt_comm_error(NULL, TUTTI_ERR_ABORTED, "tutti_comm_shrink: rank %d: the communicator was aborted",
                         sh->me);
}

/* Whether rank r is one this shrink waits for. */
static int candidate(const tt_shrink_t *sh, int r)
{
    return !sh->excluded[r] && !sh->dead[r];
}

/* What the star knows gone (a rank that left comm is told, not
 * forgotten: its process may live on), and the ranks of this host whose
 * process ended; with TUTTI_SHRINK_DEAD, stopped ranks (a coordinator:
 * among those that did not join). Returns whether the star is blind
 * (rank 0 is gone). */
static int learn(tt_shrink_t *sh, int coordinating)
{
    enum { HEARD_DIED = 0xff }; /* what the star says died, until this host has a look */
    int blind = 1;
    if (sh->comm->bs.star)
        tt_star_dead(sh->comm->bs.star, sh->dead, HEARD_DIED, TT_GONE, &blind);
    for (int r = 0; r < sh->n; r++) {
        /* Said to have died, and alive here: it left comm, and its word of
         * it was lost on the way (its parent in the star had gone). */
        if (sh->dead[r] == HEARD_DIED)
            sh->dead[r] = tt_rescue_alive(sh->comm, r) ? TT_GONE : TT_DIED;
        if (r == sh->me || !candidate(sh, r) || (coordinating && sh->joined[r].fd >= 0))
            continue;
        if (tt_rescue_ended(sh->comm, r))
            sh->dead[r] = TT_DIED;
        else if ((sh->flags & TUTTI_SHRINK_DEAD) && tt_rescue_stopped(sh->comm, r))
            sh->dead[r] = TT_STOPPED;
    }
    return blind;
}

/* A member that joined and then closed its connection is gone. */
static void watch_members(tt_shrink_t *sh)
{
    for (int r = 0; r < sh->n; r++) {
        int *fd = &sh->joined[r].fd;
        if (*fd >= 0 && sh->dead[r] == TT_DIED) { /* the star saw it go */
            close(*fd);
            *fd = -1;
        }
        if (*fd < 0)
            continue;
        struct pollfd p = {.fd = *fd, .events = POLLIN};
        char b;
        ssize_t k = poll(&p, 1, 0) > 0 ? recv(*fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            close(*fd);
            *fd = -1;
            sh->dead[r] = TT_GONE; /* or gave up on this rank: it is told, not forgotten */
        }
    }
}

static int waiting_for(const tt_shrink_t *sh)
{
    int w = 0;
    for (int r = 0; r < sh->n; r++)
        w += r != sh->me && candidate(sh, r) && sh->joined[r].fd < 0;
    return w;
}

/* The ranks waited for at the deadline: dead with TUTTI_SHRINK_DEAD, else the shrink fails. */
static tutti_status_t silent(tt_shrink_t *sh)
{
    unsigned char *late = calloc((size_t)sh->n, 1);
    if (!late)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    for (int r = 0; r < sh->n; r++)
        late[r] = r != sh->me && candidate(sh, r) && sh->joined[r].fd < 0;
    char who[256];
    tt_ranks_str(late, sh->n, who, sizeof who);
    tutti_status_t st = TUTTI_SUCCESS;
    if (sh->flags & TUTTI_SHRINK_DEAD) {
        TT_WARN(TT_SUB_INIT, "shrink: %s joined no shrink within %lld ms (TUTTI_TIMEOUT): left out", who,
                (long long)sh->comm->timeout_ms);
        for (int r = 0; r < sh->n; r++)
            if (late[r])
                sh->dead[r] = TT_SILENT;
    } else {
        st = tt_comm_error(NULL, TUTTI_ERR_TIMEOUT,
                           "tutti_comm_shrink: %s did not join within %lld ms (TUTTI_TIMEOUT)", who,
                           (long long)sh->comm->timeout_ms);
    }
    free(late);
    return st;
}

/* The ranks that were to remain and died. */
static tutti_status_t check_lost(tt_shrink_t *sh)
{
    unsigned char *lost = calloc((size_t)sh->n, 1);
    if (!lost)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    for (int r = 0; r < sh->n; r++)
        lost[r] = !sh->excluded[r] && sh->dead[r];
    char who[256];
    int n = tt_ranks_str(lost, sh->n, who, sizeof who);
    free(lost);
    if (!n || (sh->flags & TUTTI_SHRINK_DEAD))
        return TUTTI_SUCCESS;
    return tt_comm_error(NULL, TUTTI_ERR_PEER_FAILED,
                         "tutti_comm_shrink: %s died before or during the shrink; exclude %s, or pass "
                         "TUTTI_SHRINK_DEAD",
                         who, n > 1 ? "them" : "it");
}

/* Leaves the decision in rank r's listener. 1: it is there (over TCP: the
 * peer's kernel has it), 0: r no longer holds comm, -1: r is unreachable.
 * With kept, a connection that took it stays open there for a reply. */
static int tell_one(tt_shrink_t *sh, int r, int *kept, unsigned char nonce[TT_RESCUE_NONCE])
{
    int fd;
    int64_t until = tt_now_ms() + TELL_MS;
    tutti_status_t st = tt_rescue_connect(sh->comm, r, until, &fd);
    if (st == TUTTI_ERR_PEER_FAILED)
        return 0;
    if (st)
        return -1;
    tt_rescue_nonce(nonce);
    tt_rescue_decision_t d = sh->d;
    d.newrank = -1;
    memset(d.key, 0, sizeof d.key); /* a rank left out has no use for it, and the address may not be r's */
    st = tt_rescue_send(sh, fd, TT_RESCUE_VERDICT, r, nonce, NULL, &d, sizeof d, sh->member, until);
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    int unsent = 0, tcp = getsockname(fd, (struct sockaddr *)&a, &alen) == 0 && a.ss_family != AF_UNIX;
    while (!st && tcp && ioctl(fd, TIOCOUTQ, &unsent) == 0 && unsent > 0 && tt_now_ms() < until)
        usleep(1000);
    if (!st && !unsent && kept) {
        *kept = fd;
        return 1;
    }
    close(fd);
    return st ? -1 : unsent > 0 ? -1 : 1;
}

/*
 * Waits, REPLY_MS at most (half TUTTI_TIMEOUT when that is less), for
 * each listener told a decision (fd[r]) to take it (it closes the
 * connection) or to answer it: one that a rank which went on from comm to
 * a successor keeps answers that this rank was left behind
 * (rescue_keep.c), and this rank must not go on then. A rank busy or
 * stopped elsewhere does neither: its verdict waits for it.
 */
static tutti_status_t replies(tt_shrink_t *sh, int *fd, unsigned char (*nonce)[TT_RESCUE_NONCE])
{
    tutti_status_t st = TUTTI_SUCCESS;
    struct pollfd *p = calloc((size_t)sh->n, sizeof *p);
    int *rank = calloc((size_t)sh->n, sizeof *rank);
    int64_t wait = sh->comm->timeout_ms / 2 < REPLY_MS ? sh->comm->timeout_ms / 2 : REPLY_MS;
    for (int64_t until = tt_now_ms() + wait; p && rank;) {
        int np = 0;
        for (int r = 0; r < sh->n; r++)
            if (fd[r] >= 0) {
                rank[np] = r;
                p[np++] = (struct pollfd){.fd = fd[r], .events = POLLIN};
            }
        int64_t left = until - tt_now_ms();
        int ready = np && left > 0 ? poll(p, (nfds_t)np, (int)left) : -1;
        if (ready < 0 && (!np || left <= 0 || errno != EINTR))
            break;
        for (int i = 0; i < np; i++) {
            tutti_status_t said;
            if (!p[i].revents)
                continue;
            if (!st && tt_rescue_read_reply(sh, rank[i], fd[rank[i]], nonce[rank[i]], &said))
                st = said; /* the first is said; the rest would say the same */
            close(fd[rank[i]]);
            fd[rank[i]] = -1;
        }
    }
    for (int r = 0; r < sh->n; r++)
        if (fd[r] >= 0)
            close(fd[r]);
    free(p);
    free(rank);
    return st;
}

/*
 * Tells every rank left out that may still hold comm what was decided
 * (sh->d, sh->member). On success, then: a rank that answers for a
 * successor of comm says this rank was left behind; with a rank
 * unreachable, the members must be a majority of the ranks not known
 * gone; and a verdict in this rank's listener means another coordinator
 * decided first.
 */
static tutti_status_t tell(tt_shrink_t *sh)
{
    int gone = 0, unreachable = 0;
    int *fd = malloc(sizeof(int) * (size_t)sh->n);
    unsigned char(*nonce)[TT_RESCUE_NONCE] = malloc(TT_RESCUE_NONCE * (size_t)sh->n);
    if (!fd || !nonce) {
        free(fd);
        free(nonce);
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    }
    for (int r = 0; r < sh->n; r++) {
        fd[r] = -1;
        if (r == sh->me || sh->member[r] || sh->joined[r].fd >= 0)
            continue;
        /* Its process ended: no one to tell. Stopped: it cannot answer now. */
        int *kept = sh->d.status || sh->dead[r] == TT_STOPPED ? NULL : &fd[r];
        int told = sh->dead[r] == TT_DIED ? 0 : tell_one(sh, r, kept, nonce[r]);
        gone += told == 0;
        unreachable += told < 0;
    }
    tutti_status_t st = replies(sh, fd, nonce);
    free(fd);
    free(nonce);
    if (sh->d.status)
        return sh->d.status;
    if (st)
        return st;
    if (unreachable && 2 * sh->d.nmembers <= sh->n - gone)
        return tt_comm_error(NULL, TUTTI_ERR_PEER_FAILED,
                             "tutti_comm_shrink: %d rank%s could not be reached, and the %d members are no "
                             "majority of the %d ranks that may be alive: the smaller side of a partition "
                             "does not go on",
                             unreachable, unreachable > 1 ? "s" : "", sh->d.nmembers, sh->n - gone);
    tt_rescue_inbox_serve(sh->inbox, 1, -1, tt_now_ms()); /* what came meanwhile, read now */
    return tt_rescue_inbox_verdict(sh->inbox);
}

/* Fills sh->d and sh->member: the members in comm's order and a fresh key, or why not (st). */
static tutti_status_t decision(tt_shrink_t *sh, tutti_status_t st)
{
    unsigned char key[TT_KEY_BYTES] = {0};
    if (!st)
        st = tt_random_key(key);
    int n = 0;
    for (int r = 0; r < sh->n; r++) {
        sh->member[r] = !st && (r == sh->me || sh->joined[r].fd >= 0);
        n += sh->member[r];
    }
    sh->d = (tt_rescue_decision_t){.status = st,
                                   .nmembers = st ? 0 : n,
                                   .newrank = st ? -1 : 0,
                                   .flags = sh->flags & TUTTI_SHRINK_DEAD,
                                   .exclude_hash = sh->exclude_hash};
    memcpy(sh->d.key, key, sizeof key);
    if (st)
        snprintf(sh->d.why, sizeof sh->d.why, "%s", tutti_comm_last_error(NULL));
    return st;
}

/* The coordinator's answer to every member, once it stopped waiting
 * (st: why it did): the ranks left out are told first. */
static tutti_status_t decide(tt_shrink_t *sh, tutti_status_t st)
{
    if (!st && sh->mismatch[0])
        st = tt_comm_error(NULL, TUTTI_ERR_MISMATCH, "tutti_comm_shrink: %s", sh->mismatch);
    if (!st)
        st = check_lost(sh);
    st = decision(sh, st);
    if (!st && (st = tell(sh)) != TUTTI_SUCCESS) /* gave way: the members and the rest hear why */
        decision(sh, st);
    if (st)
        tell(sh);
    sh->rank_fds = st ? NULL : malloc(sizeof(int) * (size_t)sh->d.nmembers);
    if (!st && !sh->rank_fds)
        decision(sh, st = tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory"));
    for (int r = 0, at = 0; r < sh->n; r++) {
        if (r == sh->me && !st)
            sh->rank_fds[at++] = -1;
        if (sh->joined[r].fd < 0)
            continue;
        if (!st && !sh->member[r]) { /* joined after the decision: it was told */
            close(sh->joined[r].fd);
            sh->joined[r].fd = -1;
            continue;
        }
        tt_rescue_answer(sh, r, st ? -1 : at);
        if (st)
            close(sh->joined[r].fd);
        else
            sh->rank_fds[at++] = sh->joined[r].fd;
        sh->joined[r].fd = -1;
    }
    sh->d.newrank = 0;
    return st;
}

static tutti_status_t coordinate(tt_shrink_t *sh)
{
    tutti_status_t st = TUTTI_SUCCESS;
    TT_INFO(TT_SUB_INIT, "shrink: rank %d coordinates", sh->me);
    for (int64_t next_probe = 0;;) {
        if ((st = tt_rescue_inbox_verdict(sh->inbox)) != TUTTI_SUCCESS || sh->mismatch[0])
            break;
        int blind = learn(sh, 1);
        watch_members(sh);
        int64_t now = tt_now_ms();
        for (int r = 0; blind && now >= next_probe && r < sh->n; r++) /* rank 0 no longer relays deaths */
            if (r != sh->me && candidate(sh, r) && sh->joined[r].fd < 0 && tt_rescue_gone(sh, r))
                sh->dead[r] = TT_DIED;
        if (blind && now >= next_probe)
            next_probe = now + PROBE_EVERY_MS;
        if (!waiting_for(sh))
            break;
        if (aborted(sh)) {
            st = aborted_error(sh);
            break;
        }
        if (now >= sh->admit_until) {
            st = silent(sh);
            break;
        }
        int64_t step = now + LOOK_MS;
        tt_rescue_inbox_serve(sh->inbox, 1, -1, step < sh->admit_until ? step : sh->admit_until);
    }
    return decide(sh, st);
}

/* The lowest rank believed alive: the coordinator. */
static int lowest(const tt_shrink_t *sh)
{
    for (int r = 0; r < sh->n; r++)
        if (r == sh->me || candidate(sh, r))
            return r;
    return sh->me;
}

/*
 * Waits until fd (to coordinator c) is readable, serving this rank's
 * listener meanwhile. *gone when c is gone: the star says it died or, with
 * TUTTI_SHRINK_DEAD, it is stopped here; a verdict that came ends the wait
 * with its status.
 */
static tutti_status_t await(tt_shrink_t *sh, int c, int fd, int *gone)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0) /* what c sent (whole), or its connection closing */
            return TUTTI_SUCCESS;
        tutti_status_t st = tt_rescue_inbox_verdict(sh->inbox);
        if (st)
            return st;
        learn(sh, 0);
        if ((*gone = sh->dead[c] != 0))
            return TUTTI_ERR_PEER_FAILED;
        if (aborted(sh))
            return aborted_error(sh);
        if (tt_now_ms() >= sh->until)
            return tt_comm_error(NULL, TUTTI_ERR_TIMEOUT,
                                 "tutti_comm_shrink: rank %d, the coordinator, did not answer rank %d within "
                                 "TUTTI_TIMEOUT",
                                 c, sh->me);
        tt_rescue_inbox_serve(sh->inbox, 0, fd, tt_now_ms() + TT_RESCUE_STEP_MS);
    }
}

/* Connects to c, serving this rank's listener between tries; *gone when c refuses. */
static tutti_status_t reach(tt_shrink_t *sh, int c, int *fd, int *gone)
{
    for (;;) {
        int64_t now = tt_now_ms(), until = now + TELL_MS < sh->until ? now + TELL_MS : sh->until;
        tutti_status_t st = tt_rescue_connect(sh->comm, c, until, fd);
        *gone = st == TUTTI_ERR_PEER_FAILED;
        if (st != TUTTI_ERR_TIMEOUT)
            return st;
        if ((st = tt_rescue_inbox_verdict(sh->inbox)) != TUTTI_SUCCESS)
            return st;
        if (aborted(sh))
            return aborted_error(sh);
        if (tt_now_ms() >= sh->until)
            return tt_comm_error(NULL, TUTTI_ERR_TIMEOUT,
                                 "tutti_comm_shrink: rank %d could not reach rank %d within TUTTI_TIMEOUT",
                                 sh->me, c);
        tt_rescue_inbox_serve(sh->inbox, 0, -1, tt_now_ms() + TT_RESCUE_STEP_MS);
    }
}

/* A member's exchange with coordinator c: the handshake, then its answer.
 * *gone says c is gone (refused, closed, or without the key). */
static tutti_status_t exchange(tt_shrink_t *sh, int c, int *fd, int *gone)
{
    unsigned char mine[TT_RESCUE_NONCE], theirs[TT_RESCUE_NONCE];
    tutti_status_t st = reach(sh, c, fd, gone);
    if (!st) {
        tt_rescue_nonce(mine);
        st = tt_rescue_send(sh, *fd, TT_RESCUE_HELLO, c, mine, NULL, NULL, 0, NULL,
                            tt_now_ms() + sh->comm->timeout_ms);
        *gone = st != TUTTI_SUCCESS;
    }
    if (!st)
        st = await(sh, c, *fd, gone);
    if (!st) {
        st = tt_rescue_join(sh, c, *fd, mine, theirs);
        *gone = st == TUTTI_ERR_PEER_FAILED || st == TUTTI_ERR_AUTH;
    }
    /* c took the challenge, so it has begun its shrink now: it decides
     * within its TUTTI_TIMEOUT, however late it came. */
    int64_t decided_by = tt_now_ms() + 2 * sh->comm->timeout_ms;
    if (!st && sh->until < decided_by)
        sh->until = decided_by;
    if (!st)
        st = await(sh, c, *fd, gone);
    if (!st) {
        st = tt_rescue_read_answer(sh, c, *fd, mine, theirs);
        *gone = st == TUTTI_ERR_PEER_FAILED || st == TUTTI_ERR_AUTH;
    }
    if (!st && sh->d.status)
        st = tt_comm_error(NULL, (tutti_status_t)sh->d.status, "%.*s", TT_RESCUE_WHY, sh->d.why);
    return st;
}

/* Joins the lowest rank alive, moving on while they turn out gone. */
static tutti_status_t follow(tt_shrink_t *sh)
{
    for (;;) {
        tutti_status_t st = tt_rescue_inbox_verdict(sh->inbox);
        if (st)
            return st;
        learn(sh, 0);
        int c = lowest(sh);
        if (c == sh->me)
            return coordinate(sh);
        if (aborted(sh))
            return aborted_error(sh);
        int fd = -1, gone = 0;
        st = exchange(sh, c, &fd, &gone);
        if (gone) { /* the next one coordinates */
            TT_INFO(TT_SUB_INIT, "shrink: rank %d, which was to coordinate, is gone%s", c,
                    st == TUTTI_ERR_AUTH ? " (what answers at its listener does not hold the key)" : "");
            /* Maybe only slow: if it goes on, it is told. What failed the
             * challenge is not c: c left that address, so no one is told. */
            if (!sh->dead[c])
                sh->dead[c] = st == TUTTI_ERR_AUTH ? TT_DIED : TT_GONE;
            if (fd >= 0)
                close(fd);
            tt_rescue_inbox_serve(sh->inbox, 0, -1, tt_now_ms()); /* its verdict, if it left one */
            continue;
        }
        if (st) {
            if (fd >= 0)
                close(fd);
            return st;
        }
        sh->up_fd = fd;
        return TUTTI_SUCCESS;
    }
}

tutti_status_t tt_shrink_agree(tt_shrink_t *sh)
{
    sh->up_fd = -1;
    sh->rank_fds = NULL;
    sh->mismatch[0] = '\0';
    if (!(sh->inbox = tt_rescue_inbox_new(sh)))
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    tt_rescue_inbox_serve(sh->inbox, 0, -1, tt_now_ms()); /* a verdict left while this rank was away */
    tutti_status_t st = follow(sh);
    for (int r = 0; r < sh->n; r++)
        if (sh->joined[r].fd >= 0) { /* held for a coordination that did not come */
            close(sh->joined[r].fd);
            sh->joined[r].fd = -1;
        }
    tt_rescue_inbox_free(sh->inbox);
    sh->inbox = NULL;
    return st;
}
