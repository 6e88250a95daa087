/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap: rank 0 admits the ranks presenting the job key, they form a
 * tree (the star, star.h), which then offers gather, broadcast, all-gather
 * and barrier for communicator set-up, news, and point-to-point messages.
 */
#ifndef TT_BOOTSTRAP_H
#define TT_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/sock.h"
#include "tutti.h"

typedef struct {
    int rank, nranks;
    unsigned char key[TT_KEY_BYTES];
    int64_t timeout_ms;
    int up_fd;     /* the connection to rank 0 while joining, then to the parent, until the star takes it */
    int *rank_fds; /* a root: its connection to each joining rank ([0] unused), until it welcomed them */
    tt_sockaddr_t *addrs;         /* a root: each joining rank's listener, from its join */
    int nroots, block;            /* the join's roots, and the one this rank's block joins */
    int admitted;                 /* a root: the connections it admitted (ranks, other roots) */
    int listen_fd;                /* this rank's listener (children, messages), until the star takes it */
    tt_sockaddr_t addr;           /* ... the address other ranks reach it at */
    tt_sockaddr_t root;           /* rank 0's listener */
    uint64_t bytes_out, bytes_in; /* what the join moved */
    struct tt_star *star;         /* serves the tree once the rank joined (NULL with one rank) */
} tt_bootstrap_t;

/* The unique id's layout inside tutti_unique_id_t. */
typedef struct {
    uint32_t magic;
    uint32_t version;
    unsigned char key[TT_KEY_BYTES];
    tt_sockaddr_t root;
} tt_id_t;

/* A rank_fds entry: the rank joined through its block's root (bootstrap_roots.c). */
#define TT_BOOTSTRAP_BY_ROOT (-3)
/* Past its deadline, a joined rank (or another root) still waits this long
 * for rank 0's word: rank 0 says why the job will not form at its own
 * deadline, which comes later where it began later. */
#define TT_BOOTSTRAP_GRACE_MS 1000

/* Reads a unique id's bytes into id: 0 when they are one tutti made (magic,
 * version, an IPv4 or IPv6 address of the right length), else -1. */
int tt_id_decode(const unsigned char bytes[TUTTI_UNIQUE_ID_BYTES], tt_id_t *id);

/* What a process keeps for a job by key (bootstrap_kept.c). Hands a socket
 * listening for this key to a later rank-0 tt_bootstrap_init in this
 * process (tutti_get_unique_id, or a launcher's inherited socket). */
void tt_bootstrap_keep_listener(const unsigned char *key, int fd);
/* Closes the kept listener for key, if set-up failed before using it. */
void tt_bootstrap_drop_listener(const unsigned char *key);
/* How the job's root address was chosen ("MASTER_PORT 29500 + ..."),
 * added to every message about reaching it. */
void tt_bootstrap_note_root(const unsigned char *key, const char *note);
/* " (NOTE)" for the job's root, or "", into out. */
void tt_bootstrap_root_note(const unsigned char *key, char *out, size_t outlen);
/* The kept listener for key, now the caller's; -1 when none is kept. */
int tt_bootstrap_take_listener(const unsigned char *key);

/*
 * Joins the tree through nids roots (ids[0]'s key is the job's). Every
 * rank opens a listener of its own. Rank 0 serves on its kept listener
 * for the key, or else binds the root, and answers each rank it admits
 * with its own hello; other ranks connect to the root and wait for that
 * answer, so a program at the root's address that is not the job's root
 * is told at once. Each joining rank sends its listener's address; once
 * all joined, rank 0 tells each where its parent listens and closes, and
 * each rank connects to its parent. With several roots, each serves a
 * block of the ranks so (bootstrap_roots.c). Connections with a wrong key
 * are refused and logged; the rest go on.
 */
tutti_status_t tt_bootstrap_init(tt_bootstrap_t *bs, int nranks, int rank, const tt_id_t *ids, int nids,
                                 int64_t timeout_ms, char *err, size_t errlen);
/* Joins a tree over connections made already (a shrink's), as if each
 * rank had joined rank 0 through them: up_fd is this rank's connection to
 * rank 0, or, on rank 0, rank_fds (malloc'd, nranks entries, [0] unused)
 * its connection to each rank. Takes them (closed on failure too). */
tutti_status_t tt_bootstrap_adopt(tt_bootstrap_t *bs, int nranks, int rank, const unsigned char *key,
                                  int up_fd, int *rank_fds, int64_t timeout_ms, char *err, size_t errlen);
/* all (nranks * size bytes) gets every rank's mine in rank order; fails
 * at once (logged) when a rank gave up or left meanwhile. */
tutti_status_t tt_bootstrap_allgather(tt_bootstrap_t *bs, const void *mine, void *all, size_t size);
/* The two halves: every rank's mine to rank 0's all; rank 0's buf to every rank's. */
tutti_status_t tt_bootstrap_gather(tt_bootstrap_t *bs, const void *mine, void *all, size_t size);
tutti_status_t tt_bootstrap_bcast(tt_bootstrap_t *bs, void *buf, size_t size);
tutti_status_t tt_bootstrap_barrier(void *bs);
/* destroy's barrier: every rank called destroy after ncalls collectives. */
tutti_status_t tt_bootstrap_leave(tt_bootstrap_t *bs, uint64_t ncalls);
/* Tells every rank that this one gave up in collective `from` (the first
 * it did not finish; 0 in set-up), with status and why. */
void tt_bootstrap_fail(tt_bootstrap_t *bs, tutti_status_t st, uint64_t from, const char *why);
/* For set-up waits (tt_tp_env_t.watch): non-zero (logged) once a rank gave up. */
tutti_status_t tt_bootstrap_watch(void *bs);
/* Bytes this rank's bootstrap sent and received so far (its join, the tree's frames, messages). */
void tt_bootstrap_bytes(const tt_bootstrap_t *bs, uint64_t *out, uint64_t *in);
void tt_bootstrap_close(tt_bootstrap_t *bs);
/* In a forked child: closes this process's copies only. */
void tt_bootstrap_forget(tt_bootstrap_t *bs);

/* The join's halves (bootstrap_join.c). A root: admits every rank of its
 * block on listen_fd with its listener's address (rank_fds, addrs; rank 0
 * also the other roots with their blocks'); the others: connect to root,
 * present the key (reach_root), send their address. Then rank 0 welcomes
 * each rank (where its parent and rank 0 listen) and each attaches to its
 * parent (up_fd). err gets why one failed; tell_joined passes it on to
 * the ranks a root admitted, which wait for its word. */
tutti_status_t tt_bootstrap_root_admit(tt_bootstrap_t *bs, int listen_fd, int64_t deadline, char *err,
                                       size_t errlen);
tutti_status_t tt_bootstrap_reach_root(tt_bootstrap_t *bs, const tt_sockaddr_t *root, int64_t deadline,
                                       char *err, size_t errlen);
tutti_status_t tt_bootstrap_member_join(tt_bootstrap_t *bs, const tt_sockaddr_t *root, int64_t deadline,
                                        char *err, size_t errlen);
void tt_bootstrap_tell_joined(const tt_bootstrap_t *bs, tutti_status_t st, const char *why);
/* Rank 0: reads each rank's address from rank_fds (adopted ones). */
tutti_status_t tt_bootstrap_root_read(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen);
tutti_status_t tt_bootstrap_welcome(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen);
/* A member: sends its address on up_fd; waits for the welcome, attaches. */
tutti_status_t tt_bootstrap_send_join(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen);
tutti_status_t tt_bootstrap_attach(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen);

/* Several roots (bootstrap_roots.c). Root i's block of ranks: the first,
 * its size; the root whose block a rank is in. */
int tt_root_first(int root, int nranks, int nroots);
int tt_root_size(int root, int nranks, int nroots);
int tt_root_of(int rank, int nranks, int nroots);
/* Whether this rank serves its block's root (id: that root's): *listen_fd
 * its listener, or -1 when it joins as a member. */
tutti_status_t tt_bootstrap_serves(tt_bootstrap_t *bs, const tt_id_t *id, int *listen_fd, char *err,
                                   size_t errlen);
/* Another root, on up_fd to rank 0's root: its block's listeners, then
 * rank 0's answer, the parents' listeners, or why the job will not form. */
tutti_status_t tt_bootstrap_report(tt_bootstrap_t *bs, int64_t deadline, char *err, size_t errlen);
/* Rank 0: reads root r's block of listeners from fd (0; -1 when it sends
 * nothing or something malformed; -2 when r joins as a member would, so
 * its ids are not rank 0's), and sends root r the parents' listeners its
 * block needs. */
int tt_bootstrap_read_block(tt_bootstrap_t *bs, int fd, int r, int64_t deadline);
tutti_status_t tt_bootstrap_send_parents(tt_bootstrap_t *bs, int fd, int r, int64_t deadline);

#endif
