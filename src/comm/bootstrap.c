/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap: the job's keyed listeners (bootstrap_kept.c), joining the tree
 * (bootstrap_join.c), then the star's thread serves it (star.c): set-up
 * exchanges, failures, destroy's barrier and messages go through it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/star.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "core/log.h"

/* This rank's listener, for its children and messages, on the address
 * the tcp transport would take (TUTTI_SOCKET_IFNAME). */
static tutti_status_t open_listener(tt_bootstrap_t *bs, char *err, size_t errlen)
{
    tutti_status_t st = tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), &bs->addr);
    if (!st)
        st = tt_sock_listen(&bs->addr, &bs->listen_fd); /* says why */
    if (st)
        snprintf(err, errlen, "rank %d could not open the bootstrap's listener", bs->rank);
    return st;
}

static void setup_fields(tt_bootstrap_t *bs, int nranks, int rank, const unsigned char *key,
                         int64_t timeout_ms)
{
    memset(bs, 0, sizeof *bs);
    bs->rank = rank;
    bs->nranks = nranks;
    bs->timeout_ms = timeout_ms;
    bs->up_fd = bs->listen_fd = -1;
    bs->nroots = 1;
    memcpy(bs->key, key, TT_KEY_BYTES);
}

/* Rank 0's connections to each rank, none yet. */
static tutti_status_t root_arrays(tt_bootstrap_t *bs)
{
    if (!bs->rank_fds && !(bs->rank_fds = malloc(sizeof(int) * (size_t)bs->nranks)))
        return TUTTI_ERR_NO_MEMORY;
    if (!(bs->addrs = calloc((size_t)bs->nranks, sizeof *bs->addrs)))
        return TUTTI_ERR_NO_MEMORY;
    return TUTTI_SUCCESS;
}

static tutti_status_t start_star(tt_bootstrap_t *bs, char *err, size_t errlen);

/* A root: admits its block on listen_fd (and closes it); another root
 * then reports to rank 0 at root0 (bootstrap_roots.c); welcomes its
 * block; attaches. */
static tutti_status_t serve(tt_bootstrap_t *bs, int listen_fd, const tt_sockaddr_t *root0, int64_t deadline,
                            char *err, size_t errlen)
{
    bs->addrs[bs->rank] = bs->addr;
    if (bs->block == 0)
        bs->root = bs->addr;
    tutti_status_t st =
        bs->nranks > 1 ? tt_bootstrap_root_admit(bs, listen_fd, deadline, err, errlen) : TUTTI_SUCCESS;
    if (listen_fd >= 0) /* the id's address is free again once the block is in */
        close(listen_fd);
    if (st || bs->block == 0)
        return st ? st : tt_bootstrap_welcome(bs, deadline, err, errlen);
    st = tt_bootstrap_reach_root(bs, root0, deadline, err, errlen);
    if (!st)
        st = tt_bootstrap_report(bs, deadline, err, errlen);
    if (st) {
        tt_bootstrap_tell_joined(bs, st, err); /* the block's ranks wait for this root's word */
        return st;
    }
    st = tt_bootstrap_welcome(bs, deadline, err, errlen);
    return st ? st : tt_bootstrap_attach(bs, deadline, err, errlen);
}

tutti_status_t tt_bootstrap_init(tt_bootstrap_t *bs, int nranks, int rank, const tt_id_t *ids, int nids,
                                 int64_t timeout_ms, char *err, size_t errlen)
{
    setup_fields(bs, nranks, rank, ids[0].key, timeout_ms);
    bs->nroots = nids;
    bs->block = tt_root_of(rank, nranks, nids);
    int64_t deadline = tt_now_ms() + timeout_ms;
    int listen_fd = -1;
    tutti_status_t st = nranks > 1 ? open_listener(bs, err, errlen) : TUTTI_SUCCESS;
    if (!st)
        st = tt_bootstrap_serves(bs, &ids[bs->block], &listen_fd, err, errlen);
    if (!st && listen_fd < 0 && rank != 0) {
        st = tt_bootstrap_member_join(bs, &ids[bs->block].root, deadline, err, errlen);
        if (!st)
            st = tt_bootstrap_attach(bs, deadline, err, errlen);
    } else if (!st) {
        st = root_arrays(bs);
        for (int i = 0; !st && i < nranks; i++)
            bs->rank_fds[i] = -1;
        if (!st)
            st = serve(bs, listen_fd, &ids[0].root, deadline, err, errlen);
        else if (listen_fd >= 0)
            close(listen_fd);
    }
    if (!st)
        st = start_star(bs, err, errlen);
    if (st)
        tt_bootstrap_close(bs);
    return st;
}

tutti_status_t tt_bootstrap_adopt(tt_bootstrap_t *bs, int nranks, int rank, const unsigned char *key,
                                  int up_fd, int *rank_fds, int64_t timeout_ms, char *err, size_t errlen)
{
    setup_fields(bs, nranks, rank, key, timeout_ms);
    bs->up_fd = up_fd;
    bs->rank_fds = rank_fds;
    int64_t deadline = tt_now_ms() + timeout_ms;
    tutti_status_t st = open_listener(bs, err, errlen);
    if (!st && rank != 0) {
        st = tt_bootstrap_send_join(bs, deadline, err, errlen);
        if (!st)
            st = tt_bootstrap_attach(bs, deadline, err, errlen);
    } else if (!st) {
        st = root_arrays(bs);
        if (!st) {
            bs->rank_fds[0] = -1;
            bs->root = bs->addrs[0] = bs->addr;
            st = tt_bootstrap_root_read(bs, deadline, err, errlen);
        }
        if (!st)
            st = tt_bootstrap_welcome(bs, deadline, err, errlen);
    }
    if (!st)
        st = start_star(bs, err, errlen);
    if (st)
        tt_bootstrap_close(bs);
    return st;
}

/* Hands the listener and the parent's connection to the star's thread. */
static tutti_status_t start_star(tt_bootstrap_t *bs, char *err, size_t errlen)
{
    if (bs->nranks == 1)
        return TUTTI_SUCCESS;
    tt_star_join_t j = {.rank = bs->rank,
                        .nranks = bs->nranks,
                        .listen_fd = bs->listen_fd,
                        .up_fd = bs->up_fd,
                        .root = bs->rank == 0 ? bs->addr : bs->root,
                        .key = bs->key,
                        .timeout_ms = bs->timeout_ms,
                        .bytes_out = bs->bytes_out,
                        .bytes_in = bs->bytes_in};
    bs->star = tt_star_start(&j);
    if (!bs->star) {
        snprintf(err, errlen, "rank %d: the bootstrap's service did not start", bs->rank);
        return TUTTI_ERR_SYSTEM;
    }
    bs->up_fd = bs->listen_fd = -1; /* the star's now */
    free(bs->addrs);
    bs->addrs = NULL;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_gather(tt_bootstrap_t *bs, const void *mine, void *all, size_t size)
{
    if (!bs->star) {
        memcpy(all, mine, size);
        return TUTTI_SUCCESS;
    }
    return tt_star_gather(bs->star, mine, all, size);
}

tutti_status_t tt_bootstrap_bcast(tt_bootstrap_t *bs, void *buf, size_t size)
{
    return bs->star ? tt_star_bcast(bs->star, buf, size) : TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_allgather(tt_bootstrap_t *bs, const void *mine, void *all, size_t size)
{
    if (!bs->star) {
        memcpy(all, mine, size);
        return TUTTI_SUCCESS;
    }
    return tt_star_allgather(bs->star, mine, all, size);
}

tutti_status_t tt_bootstrap_barrier(void *arg)
{
    tt_bootstrap_t *bs = arg;
    char token = 1;
    char *all = malloc((size_t)bs->nranks);
    if (!all)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = tt_bootstrap_allgather(bs, &token, all, 1);
    free(all);
    return st;
}

tutti_status_t tt_bootstrap_leave(tt_bootstrap_t *bs, uint64_t ncalls)
{
    return bs->star ? tt_star_leave(bs->star, ncalls) : TUTTI_SUCCESS;
}

void tt_bootstrap_fail(tt_bootstrap_t *bs, tutti_status_t st, uint64_t from, const char *why)
{
    tt_star_fail(bs->star, st, from, why);
}

tutti_status_t tt_bootstrap_watch(void *arg)
{
    tt_bootstrap_t *bs = arg;
    if (!tt_star_has_news(bs->star))
        return TUTTI_SUCCESS;
    tt_star_news_t n;
    tt_star_news(bs->star, &n);
    if (n.died_rank >= 0) {
        TT_ERROR(TT_SUB_INIT, "rank %d died or lost its connection during set-up", n.died_rank);
        return TUTTI_ERR_PEER_FAILED;
    }
    if (n.failed_rank < 0)
        return TUTTI_SUCCESS;
    TT_ERROR(TT_SUB_INIT, "rank %d gave up during set-up (%s): %s", n.failed_rank,
             tutti_status_name(n.failed_status), n.failed_text);
    return n.failed_status == TUTTI_ERR_ABORTED ? TUTTI_ERR_PEER_FAILED : n.failed_status;
}

void tt_bootstrap_bytes(const tt_bootstrap_t *bs, uint64_t *out, uint64_t *in)
{
    *out = bs->bytes_out;
    *in = bs->bytes_in;
    if (bs->star)
        tt_star_bytes(bs->star, out, in);
}

static void close_fds(tt_bootstrap_t *bs)
{
    if (bs->up_fd >= 0)
        close(bs->up_fd);
    if (bs->listen_fd >= 0)
        close(bs->listen_fd);
    bs->up_fd = bs->listen_fd = -1;
    if (bs->rank_fds) {
        for (int r = 1; r < bs->nranks; r++)
            if (bs->rank_fds[r] >= 0)
                close(bs->rank_fds[r]);
        free(bs->rank_fds);
        bs->rank_fds = NULL;
    }
    free(bs->addrs);
    bs->addrs = NULL;
}

void tt_bootstrap_close(tt_bootstrap_t *bs)
{
    tt_star_stop(bs->star);
    bs->star = NULL;
    close_fds(bs);
}

void tt_bootstrap_forget(tt_bootstrap_t *bs)
{
    tt_star_forget(bs->star);
    bs->star = NULL;
    close_fds(bs);
}
