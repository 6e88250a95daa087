/* SPDX-License-Identifier: MIT */
/*
 * A join spread over several roots (tutti_comm_init_roots), so that no
 * process admits every rank of a large job. The ranks fall in contiguous
 * blocks, one per unique id; block i joins root i, which is the rank of
 * that block whose process made id i (or, where none did, the block's
 * first rank, binding the id's address); root 0 is rank 0. Each root
 * admits its block as rank 0 admits a one-root job; another root then
 * sends rank 0 its block's listeners in one frame (TT_STAR_BLOCK), and
 * rank 0 answers with the listeners its block's ranks have for parents
 * (TT_STAR_PARENTS), which it needs to welcome them. Rank 0 handles N
 * small records and one connection per rank of block 0 and per root; a
 * root, one per rank of its block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "comm/star_impl.h"
#include "core/clock.h"
#include "core/log.h"

int tt_root_first(int root, int nranks, int nroots)
{
    int small = nranks / nroots, larger = nranks % nroots; /* the first `larger` blocks have one more */
    return root * small + (root < larger ? root : larger);
}

int tt_root_of(int rank, int nranks, int nroots)
{
    int small = nranks / nroots, larger = nranks % nroots, edge = larger * (small + 1);
    return rank < edge ? rank / (small + 1) : larger + (rank - edge) / small;
}

int tt_root_size(int root, int nranks, int nroots)
{
    return tt_root_first(root + 1, nranks, nroots) - tt_root_first(root, nranks, nroots);
}

tutti_status_t tt_bootstrap_serves(tt_bootstrap_t *bs, const tt_id_t *id, int *listen_fd, char *err,
                                   size_t errlen)
{
    *listen_fd = -1;
    if (bs->block == 0 && bs->rank != 0)
        return TUTTI_SUCCESS; /* rank 0 serves the first block, as in a one-root job */
    if ((*listen_fd = tt_bootstrap_take_listener(id->key)) >= 0 || bs->nranks == 1)
        return TUTTI_SUCCESS;
    tt_sockaddr_t addr = id->root;
    if (bs->rank == 0) {
        char where[80];
        tt_sock_addr_str(&addr, where, sizeof where);
        tutti_status_t st = tt_sock_listen(&addr, listen_fd);
        if (st)
            snprintf(err, errlen, "rank 0 could not listen on %s for the bootstrap", where);
        return st;
    }
    /* No process of this block made the id here: its first rank binds the
     * address, where it can (another rank's process may hold it). */
    int why = 0;
    if (bs->rank != tt_root_first(bs->block, bs->nranks, bs->nroots) ||
        tt_sock_listen_quiet(&addr, listen_fd, &why)) {
        *listen_fd = -1;
        TT_DEBUG(TT_SUB_INIT, "rank %d joins root %d of %d as a member", bs->rank, bs->block, bs->nroots);
    }
    return TUTTI_SUCCESS;
}

int tt_bootstrap_read_block(tt_bootstrap_t *bs, int fd, int r, int64_t deadline)
{
    int root = tt_root_of(r, bs->nranks, bs->nroots), first = tt_root_first(root, bs->nranks, bs->nroots);
    size_t n = (size_t)tt_root_size(root, bs->nranks, bs->nroots);
    tt_star_hdr_t h;
    if (tt_sock_recv_all(fd, &h, sizeof h, deadline) || !tt_star_hdr_ok(&h, bs->nranks))
        return -1;
    if (h.type == TT_STAR_JOIN)
        return -2; /* a member's join: its ids are not rank 0's */
    if (h.type != TT_STAR_BLOCK || h.seq != (uint64_t)first || h.len != n * sizeof *bs->addrs ||
        tt_sock_recv_all(fd, &bs->addrs[first], h.len, deadline))
        return -1;
    bs->bytes_in += sizeof h + h.len;
    for (int q = first; q < first + (int)n; q++)
        bs->rank_fds[q] = q == r ? fd : TT_BOOTSTRAP_BY_ROOT;
    return 0;
}

/* The ranks whose listeners the ranks of block `root` have for parents. */
static void parents_of(const tt_bootstrap_t *bs, int root, int *lo, int *n)
{
    int first = tt_root_first(root, bs->nranks, bs->nroots);
    int last = first + tt_root_size(root, bs->nranks, bs->nroots) - 1;
    *lo = tt_star_parent(first);
    *n = tt_star_parent(last) - *lo + 1;
}

tutti_status_t tt_bootstrap_send_parents(tt_bootstrap_t *bs, int fd, int r, int64_t deadline)
{
    int lo, n;
    parents_of(bs, tt_root_of(r, bs->nranks, bs->nroots), &lo, &n);
    size_t len = (size_t)(n + 1) * sizeof *bs->addrs;
    tt_sockaddr_t *p = malloc(len);
    if (!p)
        return TUTTI_ERR_NO_MEMORY;
    p[0] = bs->addr;
    memcpy(&p[1], &bs->addrs[lo], (size_t)n * sizeof *bs->addrs);
    tutti_status_t st = tt_star_send(fd, TT_STAR_PARENTS, 0, 0, (uint64_t)lo, p, len, deadline - tt_now_ms());
    free(p);
    if (!st)
        bs->bytes_out += sizeof(tt_star_hdr_t) + len;
    return st;
}

tutti_status_t tt_bootstrap_report(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen)
{
    int first = tt_root_first(bs->block, bs->nranks, bs->nroots), lo, n;
    size_t len = (size_t)tt_root_size(bs->block, bs->nranks, bs->nroots) * sizeof *bs->addrs;
    tutti_status_t st = tt_star_send(bs->up_fd, TT_STAR_BLOCK, bs->rank, 0, (uint64_t)first,
                                     &bs->addrs[first], len, deadline - tt_now_ms());
    if (st) {
        snprintf(err, errlen, "root %d (rank %d) could not tell rank 0 where its ranks listen: %s", bs->block,
                 bs->rank, tutti_strerror(st));
        return st;
    }
    bs->bytes_out += sizeof(tt_star_hdr_t) + len;
    parents_of(bs, bs->block, &lo, &n);
    tt_star_hdr_t h;
    char text[TT_STAR_TEXT + 1] = "";
    size_t want = (size_t)(n + 1) * sizeof *bs->addrs;
    tt_sockaddr_t *p = malloc(want);
    /* As a joined rank waits for its welcome: rank 0's reason comes at its
     * own deadline, and every failure says something. */
    int64_t until = deadline + TT_BOOTSTRAP_GRACE_MS;
    st = p ? tt_sock_recv_all(bs->up_fd, &h, sizeof h, until) : TUTTI_ERR_NO_MEMORY;
    if (!st && h.type == TT_STAR_WELCOME && h.status && h.len <= TT_STAR_TEXT &&
        !tt_sock_recv_all(bs->up_fd, text, h.len, until)) {
        snprintf(err, errlen, "rank %d: %s", bs->rank, text); /* rank 0 says why the job will not form */
        st = (tutti_status_t)h.status;
    } else if (st || !tt_star_hdr_ok(&h, bs->nranks) || h.type != TT_STAR_PARENTS || h.seq != (uint64_t)lo ||
               h.len != want || tt_sock_recv_all(bs->up_fd, p, want, until)) {
        snprintf(err, errlen, "root %d (rank %d): rank 0 did not say where its ranks' parents listen%s",
                 bs->block, bs->rank,
                 st == TUTTI_ERR_TIMEOUT ? ": not every rank joined within TUTTI_TIMEOUT" : "");
        st = st == TUTTI_ERR_TIMEOUT || st == TUTTI_ERR_NO_MEMORY ? st : TUTTI_ERR_PEER_FAILED;
    }
    if (!st) {
        bs->bytes_in += sizeof h + want;
        bs->root = bs->addrs[0] = p[0];
        memcpy(&bs->addrs[lo], &p[1], (size_t)n * sizeof *bs->addrs);
    }
    free(p);
    return st;
}
