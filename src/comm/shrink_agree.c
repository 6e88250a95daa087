/* SPDX-License-Identifier: MIT */
/*
 * A shrink's agreement: which ranks of comm form the new communicator,
 * reached without a working collective on comm (rank 0 may be dead).
 *
 * Every survivor knows the ranks the caller excluded and the ranks it found
 * dead: rank 0 relays each rank whose connection to it closed unannounced
 * (the star), a listener that refuses a connection belongs to a process
 * that is gone (rescue.c), and with TUTTI_SHRINK_DEAD a rank stopped on
 * this host counts as dead too. The lowest rank a survivor believes alive
 * coordinates: it admits the others on its listener, each presenting this
 * shrink's key, its exclude list (as a hash) and what it knows dead, until
 * every rank it waits for has joined or is found dead (probing the
 * listeners itself once rank 0, which relays deaths, is gone), or
 * TUTTI_TIMEOUT passes. Then it answers each member: the members in comm's
 * order, a fresh key, or why the shrink failed. A member whose
 * coordinator is gone (connection refused or closed, or the star says it
 * died) turns to the next lowest rank. The coordinator is always the
 * lowest member, so it is rank 0 of the new communicator, and the
 * connections it admitted become the new star.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/shrink.h"
#include "comm/star.h"
#include "core/admit.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/ranks.h"

#define STEP_MS 100 /* between looks at the news while waiting */
#define PROBE_EVERY_MS 200

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

/* What the star knows dead; with TUTTI_SHRINK_DEAD, stopped ranks among
 * those of want (NULL: all). Returns whether the star is blind (rank 0 is gone). */
static int learn(tt_shrink_t *sh, const int *want)
{
    int blind = 1;
    if (sh->comm->bs.star)
        tt_star_dead(sh->comm->bs.star, sh->dead, &blind);
    for (int r = 0; r < sh->n; r++)
        if (r != sh->me && candidate(sh, r) && (!want || want[r] < 0) && (sh->flags & TUTTI_SHRINK_DEAD) &&
            tt_rescue_stopped(sh->comm, r))
            sh->dead[r] = TT_STOPPED;
    return blind;
}

/* A member that joined and then closed its connection has died. */
static void watch_members(tt_shrink_t *sh, int *fds)
{
    for (int r = 0; r < sh->n; r++) {
        if (fds[r] >= 0 && sh->dead[r]) { /* the star saw it go */
            close(fds[r]);
            fds[r] = -1;
        }
        if (fds[r] < 0)
            continue;
        struct pollfd p = {.fd = fds[r], .events = POLLIN};
        char b;
        ssize_t k = poll(&p, 1, 0) > 0 ? recv(fds[r], &b, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            close(fds[r]);
            fds[r] = -1;
            sh->dead[r] = TT_DIED;
        }
    }
}

static int waiting_for(const tt_shrink_t *sh, const int *fds)
{
    int w = 0;
    for (int r = 0; r < sh->n; r++)
        w += r != sh->me && candidate(sh, r) && fds[r] < 0;
    return w;
}

/* Reads a member's join message after its hello; a probe (rank -1), a
 * rank not waited for or a malformed message is dropped. A member whose
 * list or flags differ from ours is kept, to be told. */
static void admit_member(tt_shrink_t *sh, int *fds, int fd, const tt_hello_t *h, char *mismatch, size_t len)
{
    int r = h->rank;
    size_t size = sizeof(tt_rescue_join_t) + (size_t)sh->n;
    unsigned char *msg =
        r >= 0 && r < sh->n && h->nranks == sh->n && r != sh->me && !sh->excluded[r] && fds[r] < 0
            ? malloc(size)
            : NULL;
    tt_rescue_join_t j;
    if (!msg || tt_sock_recv_all(fd, msg, size, tt_now_ms() + TT_ADMIT_HELLO_MS) ||
        (memcpy(&j, msg, sizeof j), j.magic != TT_RESCUE_MAGIC)) {
        if (r >= 0)
            TT_DEBUG(TT_SUB_INIT, "shrink: dropped a connection from rank %d", r);
        free(msg);
        close(fd);
        return;
    }
    if (!*mismatch && (j.flags != (sh->flags & TUTTI_SHRINK_DEAD) || j.exclude_hash != sh->exclude_hash))
        snprintf(mismatch, len, "rank %d passed another exclude list or TUTTI_SHRINK_DEAD than rank %d", r,
                 sh->me);
    for (int q = 0; q < sh->n; q++) /* what it knows dead, we know too */
        if (q != sh->me && q != r && fds[q] < 0 && msg[sizeof j + (size_t)q] && !sh->dead[q])
            sh->dead[q] = msg[sizeof j + (size_t)q];
    sh->dead[r] = TT_ALIVE;
    fds[r] = fd;
    free(msg);
    TT_DEBUG(TT_SUB_INIT, "shrink: rank %d joined rank %d", r, sh->me);
}

/* The ranks waited for at the deadline: dead with TUTTI_SHRINK_DEAD, else the shrink fails. */
static tutti_status_t silent(tt_shrink_t *sh, const int *fds)
{
    unsigned char *late = calloc((size_t)sh->n, 1);
    if (!late)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    for (int r = 0; r < sh->n; r++)
        late[r] = r != sh->me && candidate(sh, r) && fds[r] < 0;
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

/* Sends member r (new rank newrank, or -1 on failure) the answer. */
static void answer(tt_shrink_t *sh, int fd, int newrank)
{
    tt_rescue_decision_t d = sh->d;
    d.newrank = newrank;
    size_t size = sizeof d + (size_t)sh->n;
    unsigned char *msg = malloc(size);
    if (!msg)
        return; /* the member then sees its connection close */
    memcpy(msg, &d, sizeof d);
    memcpy(msg + sizeof d, sh->member, (size_t)sh->n);
    if (tt_sock_send_all(fd, msg, size, tt_now_ms() + sh->comm->timeout_ms))
        TT_DEBUG(TT_SUB_INIT, "shrink: the answer did not reach a member (it died: the set-up will say)");
    free(msg);
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

/* The coordinator's answer to every member, once it stopped waiting
 * (st: why it did). */
static tutti_status_t decide(tt_shrink_t *sh, int *fds, tutti_status_t st, const char *mismatch)
{
    if (!st && *mismatch)
        st = tt_comm_error(NULL, TUTTI_ERR_MISMATCH, "tutti_comm_shrink: %s", mismatch);
    if (!st)
        st = check_lost(sh);
    unsigned char key[TT_KEY_BYTES] = {0};
    if (!st)
        st = tt_random_key(key);
    int n = 0;
    for (int r = 0; r < sh->n; r++) {
        sh->member[r] = !st && (r == sh->me || fds[r] >= 0);
        n += sh->member[r];
    }
    sh->rank_fds = st ? NULL : malloc(sizeof(int) * (size_t)n);
    if (!st && !sh->rank_fds)
        st = tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    sh->d = (tt_rescue_decision_t){.magic = TT_RESCUE_MAGIC, .status = st, .nmembers = st ? 0 : n};
    memcpy(sh->d.key, key, sizeof key);
    if (st)
        snprintf(sh->d.why, sizeof sh->d.why, "%s", tutti_comm_last_error(NULL));
    for (int r = 0, at = 0; r < sh->n; r++) {
        if (r == sh->me && !st)
            sh->rank_fds[at++] = -1;
        if (fds[r] < 0)
            continue;
        answer(sh, fds[r], st ? -1 : at);
        if (st)
            close(fds[r]);
        else
            sh->rank_fds[at++] = fds[r];
    }
    sh->d.newrank = 0;
    return st;
}

static tutti_status_t coordinate(tt_shrink_t *sh)
{
    int *fds = malloc(sizeof(int) * (size_t)sh->n);
    tt_admit_t *a =
        tt_admit_new(sh->comm->rescue_fd, sh->key, TT_SUB_INIT, "the shrink's coordinator", NULL, NULL);
    char mismatch[256] = "";
    tutti_status_t st =
        fds && a ? TUTTI_SUCCESS : tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    for (int r = 0; fds && r < sh->n; r++)
        fds[r] = -1;
    TT_INFO(TT_SUB_INIT, "shrink: rank %d coordinates", sh->me);
    for (int64_t next_probe = 0; !st;) {
        int blind = learn(sh, fds);
        watch_members(sh, fds);
        int64_t now = tt_now_ms();
        for (int r = 0; blind && now >= next_probe && r < sh->n; r++) /* rank 0 no longer relays deaths */
            if (r != sh->me && candidate(sh, r) && fds[r] < 0 && tt_rescue_gone(sh, r))
                sh->dead[r] = TT_DIED;
        if (blind && now >= next_probe)
            next_probe = now + PROBE_EVERY_MS;
        if (!waiting_for(sh, fds))
            break;
        if (aborted(sh)) {
            st = aborted_error(sh);
            break;
        }
        if (now >= sh->admit_until) {
            st = silent(sh, fds);
            break;
        }
        int fd;
        tt_hello_t h;
        int64_t step = now + STEP_MS < sh->admit_until ? now + STEP_MS : sh->admit_until;
        tutti_status_t got = tt_admit_next(a, step, &fd, &h);
        if (got == TUTTI_SUCCESS)
            admit_member(sh, fds, fd, &h, mismatch, sizeof mismatch);
        else if (got != TUTTI_ERR_TIMEOUT)
            st = tt_comm_context(NULL, got, "tutti_comm_shrink: rank %d could not admit the others", sh->me);
    }
    if (a)
        tt_admit_free(a);
    if (fds)
        st = decide(sh, fds, st, mismatch);
    free(fds);
    return st;
}

/* The lowest rank believed alive: the coordinator. */
static int lowest(const tt_shrink_t *sh)
{
    for (int r = 0; r < sh->n; r++)
        if (r == sh->me || candidate(sh, r))
            return r;
    return sh->me;
}

/* Hello and join message to coordinator c over fd. */
static tutti_status_t send_join(const tt_shrink_t *sh, int fd)
{
    size_t size = sizeof(tt_rescue_join_t) + (size_t)sh->n;
    unsigned char *msg = malloc(size);
    if (!msg)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    tt_rescue_join_t j = {
        .magic = TT_RESCUE_MAGIC, .flags = sh->flags & TUTTI_SHRINK_DEAD, .exclude_hash = sh->exclude_hash};
    memcpy(msg, &j, sizeof j);
    memcpy(msg + sizeof j, sh->dead, (size_t)sh->n);
    int64_t until = tt_now_ms() + sh->comm->timeout_ms;
    tutti_status_t st = tt_hello_send(fd, sh->key, sh->me, sh->n, 0, until);
    if (!st)
        st = tt_sock_send_all(fd, msg, size, until);
    free(msg);
    return st;
}

/*
 * Waits for coordinator c's answer on fd. TUTTI_ERR_PEER_FAILED (said
 * nothing) when c is gone: its connection closed, the star says it died,
 * or, with TUTTI_SHRINK_DEAD, it is stopped here.
 */
static tutti_status_t await_answer(tt_shrink_t *sh, int c, int fd)
{
    size_t size = sizeof sh->d + (size_t)sh->n;
    unsigned char *msg = malloc(size);
    if (!msg)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_comm_shrink: no memory");
    tutti_status_t st = TUTTI_ERR_TIMEOUT;
    for (;;) {
        /* An answer already here is read even if its sender died since. */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, STEP_MS) > 0) { /* the answer (sent whole), or the connection closing */
            st = tt_sock_recv_all(fd, msg, size, tt_now_ms() + sh->comm->timeout_ms);
            break;
        }
        learn(sh, NULL);
        if (sh->dead[c] || aborted(sh) || tt_now_ms() >= sh->until)
            break;
    }
    if (st == TUTTI_SUCCESS) {
        memcpy(&sh->d, msg, sizeof sh->d);
        memcpy(sh->member, msg + sizeof sh->d, (size_t)sh->n);
        if (sh->d.magic != TT_RESCUE_MAGIC)
            st = TUTTI_ERR_PEER_FAILED;
    } else if (st == TUTTI_ERR_PEER_FAILED || sh->dead[c]) {
        st = TUTTI_ERR_PEER_FAILED;
    } else if (aborted(sh)) {
        st = aborted_error(sh);
    } else {
        st = tt_comm_error(NULL, TUTTI_ERR_TIMEOUT,
                           "tutti_comm_shrink: rank %d, the coordinator, did not answer "
                           "rank %d within TUTTI_TIMEOUT",
                           c, sh->me);
    }
    free(msg);
    return st;
}

/* Joins the lowest rank alive, moving on while they turn out dead. */
static tutti_status_t follow(tt_shrink_t *sh)
{
    for (;;) {
        learn(sh, NULL);
        int c = lowest(sh);
        if (c == sh->me)
            return coordinate(sh);
        if (aborted(sh))
            return aborted_error(sh);
        int fd = -1;
        tutti_status_t st = tt_rescue_connect(&sh->comm->rescue[c], sh->until, &fd);
        if (!st)
            st = send_join(sh, fd);
        if (!st)
            st = await_answer(sh, c, fd);
        if (st == TUTTI_ERR_PEER_FAILED) { /* c is gone: the next one coordinates */
            TT_INFO(TT_SUB_INIT, "shrink: rank %d, which was to coordinate, is gone", c);
            if (!sh->dead[c])
                sh->dead[c] = TT_DIED;
            if (fd >= 0)
                close(fd);
            continue;
        }
        if (st == TUTTI_ERR_TIMEOUT && fd < 0)
            st = tt_comm_error(NULL, st,
                               "tutti_comm_shrink: rank %d could not reach rank %d within TUTTI_TIMEOUT",
                               sh->me, c);
        if (!st && sh->d.status) {
            st = tt_comm_error(NULL, (tutti_status_t)sh->d.status, "%.*s", TT_RESCUE_WHY, sh->d.why);
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
    return follow(sh);
}
