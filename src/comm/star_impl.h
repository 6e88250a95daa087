/* SPDX-License-Identifier: MIT */
/* The star's state, shared by its member side (star.c) and rank 0's hub (star_hub.c) only. */
#ifndef TT_STAR_IMPL_H
#define TT_STAR_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "comm/star.h"

/* One connection's frame being read: header, then payload. */
typedef struct {
    tt_star_hdr_t hdr;
    size_t got;    /* bytes of header and payload so far */
    char *payload; /* len + 1 bytes (NUL-terminated) once the header is in */
} tt_star_reader_t;

/* Rank 0's relay; touched by the star's thread only. */
typedef struct {
    int n;
    int *fds;               /* to each rank's member; [0] is rank 0's own */
    tt_star_reader_t *rd;   /* one per rank */
    unsigned char *gone;    /* its connection closed */
    unsigned char *failed;  /* it said it gave up */
    unsigned char *leaving; /* it is in destroy */
    int revoke_sent;        /* a revocation was relayed */
    uint64_t *leave_after;  /* ... after this many collectives */
    int nleaving, done_sent;
    uint64_t xseq; /* the exchange being gathered */
    int xcount;    /* parts in */
    size_t xsize;  /* bytes of each part */
    char *xbuf;
    unsigned char *xhave;
    uint64_t qid; /* the who-is-stuck query being answered */
    int q_active, q_asker;
    int64_t q_deadline;
    tt_stuck_state_t *states;
    unsigned char *answered;
} tt_star_hub_t;

struct tt_star {
    _Atomic int news;    /* a rank gave up or left, or a report came */
    _Atomic int wake_fd; /* rung with news: wakes a collective asleep in the engine (-1: none) */
    int rank, nranks;
    int64_t timeout_ms;
    int wait_ms; /* how long the hub waits for the ranks' answers */
    int mfd;     /* this rank's connection to the hub (rank 0: a socketpair) */
    int stop_pipe[2];
    pthread_t thread;
    int running;
    pthread_mutex_t send_lock; /* frames on mfd come from the thread and the caller */
    pthread_mutex_t lock;      /* what follows, and the wake-ups of the caller */
    pthread_cond_t cond;
    tt_star_news_t n;
    unsigned char *dead; /* nranks: every rank known to have died */
    void (*on_revoke)(void *arg, int rank);
    void *on_revoke_arg;
    uint64_t xround, all_round; /* exchanges this rank started; the last one answered */
    void *all_buf;
    size_t all_size;
    int done, hub_gone;
    int hub_failed; /* rank 0 said it gave up: its connection closing is no death */
    tutti_status_t done_status;
    char done_text[TT_STAR_TEXT];
    const void *endpoints; /* tt_endpoint_t[nranks] */
    tt_star_describe_fn describe;
    void *describe_arg;
    tt_star_reader_t mrd;
    tt_star_hub_t *hub; /* rank 0 only */
};

/* Writes one frame on fd (whole, or not at all within the deadline). */
tutti_status_t tt_star_send(int fd, int type, int rank, tutti_status_t status, uint64_t seq,
                            const void *payload, size_t len, int64_t timeout_ms);
/* Reads what fd has; calls handle for each whole frame. -1 once the
 * connection closed, failed or sent a malformed frame; else 0. */
int tt_star_read(int fd, tt_star_reader_t *rd, int nranks,
                 void (*handle)(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload),
                 tt_star_t *s, int from);
void tt_star_reader_reset(tt_star_reader_t *rd);

/* A member's handling of one whole frame from the hub. */
void tt_star_member_frame(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);

/* The hub: set up with rank 0's connections, a frame from rank r, rank r's
 * connection closing, the report's deadline passing. */
tt_star_hub_t *tt_star_hub_new(int nranks, int own_fd, int *rank_fds);
void tt_star_hub_free(tt_star_hub_t *h, int close_fds);
void tt_star_hub_frame(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);
void tt_star_hub_gone(tt_star_t *s, int r);
void tt_star_hub_tick(tt_star_t *s);

#endif
