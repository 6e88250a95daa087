/* SPDX-License-Identifier: MIT */
/*
 * The star's state, shared by its thread and member side (star.c), the
 * tree's links (star_link.c), rank 0's hub (star_hub.c) and the
 * point-to-point messages (star_mail.c) only.
 */
#ifndef TT_STAR_IMPL_H
#define TT_STAR_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "comm/star.h"
#include "core/admit.h"

/* Hello channels: what a connection to a rank's listener is for. */
enum {
    TT_STAR_HELLO_JOIN = 0, /* to rank 0's bootstrap address: joining the job */
    TT_STAR_HELLO_CHILD,    /* a child attaching to its parent */
    TT_STAR_HELLO_ORPHAN,   /* a rank whose parent is gone, attaching to rank 0 */
    TT_STAR_HELLO_MSG       /* one point-to-point message, then close */
};

#define TT_STAR_INBOUND 16 /* message connections read at once */

/* One connection's frame being read: header, then payload. */
typedef struct {
    tt_star_hdr_t hdr;
    size_t got;    /* bytes of header and payload so far */
    char *payload; /* len + 1 bytes (NUL-terminated) once the header is in */
} tt_star_reader_t;

/* A frame waiting to be written: the header and the payload are one run
 * of bytes, so a relay writes it as it came. */
typedef struct tt_star_frame {
    struct tt_star_frame *next;
    size_t sent; /* bytes of header and payload written so far */
    tt_star_hdr_t hdr;
    char payload[];
} tt_star_frame_t;

/* A connection of the tree: to the parent, or from a child. Written only
 * by the thread, never blocking: what does not fit waits in out. */
typedef struct {
    int fd; /* -1: none (rank 0's parent, or lost) */
    int rank;
    tt_star_reader_t rd;
    tt_star_frame_t *out, **out_tail;
} tt_star_link_t;

/* A kept point-to-point message. */
typedef struct tt_star_mail {
    struct tt_star_mail *next;
    int from;
    uint64_t tag;
    size_t len;
    char payload[];
} tt_star_mail_t;

/* A message connection being read. */
typedef struct {
    int fd, from;
    int64_t deadline;
    tt_star_reader_t rd;
} tt_star_inbound_t;

/* Rank 0's relay; touched by the star's thread only. */
typedef struct {
    int n;
    unsigned char *gone;    /* it died, or ended (a notice went down) */
    unsigned char *failed;  /* it said it gave up */
    unsigned char *leaving; /* it is in destroy */
    int64_t *hinted;        /* when a child of its said it closed (0: not) */
    int nhinted;
    uint64_t *leave_after; /* ... after this many collectives */
    int nleaving, done_sent, left_rank, revoker;
    tutti_status_t done_status;
    char *done_text;
    int first_failed; /* for a rank that attaches late (an orphan): the first failure, its reason */
    tutti_status_t first_status;
    uint64_t first_call; /* the collective it gave up in */
    char *first_text;
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

/* What the links (star_link.c) hand up what they read and see to: this
 * rank's roles, set by star.c when the thread starts, so that the links
 * call no file above them (star_hub.c hands rank 0's own frames to its
 * member role the same way). */
typedef struct {
    void (*member_frame)(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);
    void (*member_lost)(tt_star_t *s);
    void (*mail_in)(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);
    void (*hub_frame)(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);
    void (*hub_gone)(tt_star_t *s, int r, int hint);
    void (*hub_adopt)(tt_star_t *s, tt_star_link_t *l);
} tt_star_roles_t;
/* Every rank's roles, as star.c fills them in (star.c). */
extern const tt_star_roles_t tt_star_roles;

struct tt_star {
    tt_star_roles_t roles;
    _Atomic int news;    /* a rank gave up or left, or a report came */
    _Atomic int wake_fd; /* rung with news and mail: wakes a call asleep in the engine (-1: none) */
    _Atomic uint64_t bytes_out, bytes_in;
    int rank, nranks;
    int64_t timeout_ms;
    int wait_ms; /* how long the hub waits for the ranks' answers */
    unsigned char key[TT_KEY_BYTES];
    int kick_fd; /* eventfd: the main thread queued frames, or asks the thread to stop */
    pthread_t thread;
    int running;
    pthread_mutex_t lock; /* what follows down to `up`, and the wake-ups of the caller */
    pthread_cond_t cond;
    tt_star_frame_t *queued, **queued_tail; /* the main thread's frames, for the thread to send */
    int stopping;
    /* The thread's turns round its connections, begun and ended, for a
     * wait that must know it read what came before (star_wait.c). */
    uint64_t turns_begun, turns_done;
    int turn_wanted;    /* the main thread waits for a turn: told of each */
    uint64_t words_out; /* rank 0's broadcasts written whole to its children */
    int word_news;      /* a rank had given up or died when the last one was */
    int word_taken;     /* the thread's own: one is taken and not yet all written */
    tt_star_news_t n;
    unsigned char *dead; /* nranks: TT_STAR_RANK_DIED or TT_STAR_RANK_LEFT for every rank known gone */
    void (*on_revoke)(void *arg, int rank);
    void *on_revoke_arg;
    uint64_t xround;                       /* exchanges this rank took part in */
    void *gather_buf;                      /* rank 0: where the exchange being gathered goes */
    uint64_t gathered;                     /* rank 0: the last exchange gathered whole */
    tt_star_frame_t *bcasts, **bcast_tail; /* broadcasts received, not yet taken */
    int done, hub_gone;
    int hub_failed; /* rank 0 said it gave up: its connection closing is no death */
    tutti_status_t done_status;
    char done_text[TT_STAR_TEXT];
    const void *endpoints; /* tt_endpoint_t[nranks] */
    tt_star_describe_fn describe;
    void *describe_arg;
    tt_star_mail_t *mailbox, **mail_tail;
    uint64_t mail_seen;        /* bumped by every message and kick: tt_star_wait_mail's condition */
    pthread_mutex_t mail_lock; /* held while the handler runs: unsetting it waits for it */
    tt_star_mail_fn on_mail;
    void *on_mail_arg;
    /* What this rank said up, said again when it attaches to rank 0 after
     * its parent died (what was on the way may have died with it). */
    int said_fail, said_leaving, said_revoke;
    tutti_status_t fail_status;
    uint64_t fail_from;
    char fail_text[TT_STAR_TEXT];
    uint64_t leave_after;
    /* The tree: touched by the thread only. */
    int listen_fd;
    tt_sockaddr_t root_addr;
    tt_admit_t *admit;
    tt_star_link_t up;
    tt_star_link_t **kids;
    int nkids, kids_cap;
    int *lost_kids; /* children seen dying, said again after re-attaching */
    int nlost, lost_cap;
    unsigned char kid_seen[TT_STAR_FANOUT]; /* its k-th child attached once */
    int64_t attach_until;                   /* a child not attached by then died while joining (0: checked) */
    tt_star_inbound_t inbound[TT_STAR_INBOUND];
    int ninbound;
    tt_star_hub_t *hub; /* rank 0 only */
};

/* Frames (star_link.c). A frame of type with payload, allocated; NULL
 * without memory. */
tt_star_frame_t *tt_star_frame_new(int type, int rank, tutti_status_t status, uint64_t seq, const void *p,
                                   size_t len);
/* Writes one frame on a blocking-style fd (the join's), whole or not at all within timeout_ms. */
tutti_status_t tt_star_send(int fd, int type, int rank, tutti_status_t status, uint64_t seq,
                            const void *payload, size_t len, int64_t timeout_ms);
/* Reads what fd has; calls handle for each whole frame. -1 once the
 * connection closed, failed or sent a malformed frame; else 0. */
int tt_star_read(int fd, tt_star_reader_t *rd, int nranks,
                 void (*handle)(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload),
                 tt_star_t *s, int from);
void tt_star_reader_reset(tt_star_reader_t *rd);

/* Queues a copy of a frame on a link (dropped without memory, or with no connection). */
void tt_star_link_queue(tt_star_t *s, tt_star_link_t *l, const tt_star_hdr_t *h, const char *payload);
/* A frame to every child. */
void tt_star_to_kids(tt_star_t *s, const tt_star_hdr_t *h, const char *payload);
/* A frame from this rank up toward rank 0 (the hub itself, on rank 0). */
void tt_star_up(tt_star_t *s, int type, tutti_status_t status, uint64_t seq, const void *p, size_t len);
/* Writes what the links hold, as far as the sockets take it. */
void tt_star_flush(tt_star_t *s);
/* The thread's poll set: the links, the listener and what it admits. */
int tt_star_pollfds(tt_star_t *s, struct pollfd *fds, int cap, int64_t *wake);
/* Serves what poll found on those descriptors (first at fds[0]). */
void tt_star_serve(tt_star_t *s, const struct pollfd *fds, int n);
/* Children that never attached, past the deadline, are reported gone. */
void tt_star_check_kids(tt_star_t *s);
/* Closes every descriptor of the tree (a forked child's copies too). */
void tt_star_links_close(tt_star_t *s);
/* Closes and frees every link, their queued frames dropped. */
void tt_star_links_free(tt_star_t *s);

/* A member's handling of one whole frame from its parent (after passing it down). */
void tt_star_member_frame(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);
/* The news that rank 0 is gone; under no lock. */
void tt_star_member_lost(tt_star_t *s);

/* Messages (star_mail.c): a frame read on a message connection. */
void tt_star_mail_in(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);
void tt_star_mail_free(tt_star_t *s);

/* The hub (star_hub.c): a frame from rank `from` (its sender, wherever it
 * entered the tree), rank r's connection closing (seen by its parent, or
 * hinted by its child), a rank attaching late, the report's deadline. */
tt_star_hub_t *tt_star_hub_new(int nranks);
void tt_star_hub_free(tt_star_hub_t *h);
void tt_star_hub_frame(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload);
void tt_star_hub_gone(tt_star_t *s, int r, int hint);
void tt_star_hub_adopt(tt_star_t *s, tt_star_link_t *l);
void tt_star_hub_tick(tt_star_t *s);
/* When the hub next needs its thread awake (-1: no deadline). */
int64_t tt_star_hub_wake(const tt_star_t *s);

#endif
