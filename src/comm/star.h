/* SPDX-License-Identifier: MIT */
/*
 * The star: after the bootstrap join, every rank's connection to rank 0 is
 * served by a thread of its own, so news travels whatever the ranks' main
 * threads are doing (a collective, user code, a stopped peer). Rank 0's
 * thread is also the hub that relays. Over it go the set-up exchanges, a
 * rank giving up (and why), a rank entering destroy, a revocation, and
 * the who-is-stuck query: the hub asks every rank's thread where its rank
 * is and sends the report to all.
 */
#ifndef TT_STAR_H
#define TT_STAR_H

#include <stddef.h>
#include <stdint.h>

#include "comm/stuck.h"
#include "tutti.h"

#define TT_STAR_MAGIC 0x74747378u /* "ttsx" */
#define TT_STAR_TEXT 1024         /* bytes of a notice's text */

/* Frames on the star's connections. */
typedef enum {
    TT_STAR_DATA = 1, /* member -> hub: its part of exchange `seq` */
    TT_STAR_ALL,      /* hub -> member: every part of exchange `seq`, in rank order */
    TT_STAR_FAIL,     /* member -> hub: it gave up with `status`; text says why */
    TT_STAR_FAILED,   /* hub -> member: rank `rank` gave up (relayed FAIL; `seq` 1: its connection closed,
                       * 2: its connection closed after it gave up) */
    TT_STAR_LEAVING,  /* member -> hub: in tutti_comm_destroy after `seq` collectives */
    TT_STAR_LEFT,     /* hub -> member: rank `rank` is in destroy after `seq` collectives */
    TT_STAR_DONE,     /* hub -> member: every rank is in destroy; `status` says whether they agree */
    TT_STAR_QUERY,    /* member -> hub: who is stuck? */
    TT_STAR_POLL,     /* hub -> member: where is your rank (query `seq`)? */
    TT_STAR_STATE,    /* member -> hub: tt_stuck_state_t for query `seq` */
    TT_STAR_REPORT,   /* hub -> member: the who-is-stuck report (text) */
    TT_STAR_REVOKE,   /* member -> hub: it revoked the communicator */
    TT_STAR_REVOKED,  /* hub -> member: rank `rank` revoked the communicator */
    TT_STAR_TYPES
} tt_star_type_t;

typedef struct {
    uint32_t magic;
    uint16_t type;
    uint16_t reserved;
    int32_t rank; /* the sender, or the rank a relay speaks of */
    int32_t status;
    uint32_t len; /* payload bytes after the header */
    uint32_t pad;
    uint64_t seq;
} tt_star_hdr_t;

/* The largest payload a frame may carry (an exchange of every rank's record). */
#define TT_STAR_MAX_PAYLOAD ((uint32_t)64 << 20)

/* Whether a received header is well formed for a star of nranks ranks
 * (known type, rank in range, bounded length); for the readers and fuzzing. */
int tt_star_hdr_ok(const tt_star_hdr_t *h, int nranks);

/* What a rank's main thread learns from the star (under the lock). */
typedef struct {
    int died_rank;   /* the first rank whose connection to rank 0 closed unannounced, -1 */
    int failed_rank; /* the first rank that gave up and said why, -1 */
    tutti_status_t failed_status;
    char failed_text[TT_STAR_TEXT];
    int left_rank; /* the first rank in destroy, -1 */
    uint64_t left_after;
    int have_report;
    char report[TT_STAR_TEXT * 2];
    int revoked_rank; /* the rank that revoked the communicator (this one too), -1 */
} tt_star_news_t;

typedef struct tt_star tt_star_t;

/* How the star reads its rank's progress when the hub asks. */
typedef void (*tt_star_describe_fn)(void *arg, tt_stuck_state_t *out);

/*
 * Starts the star over a joined bootstrap: fd is the connection to rank 0
 * (rank 0: -1) and rank_fds rank 0's connections to every rank; the star
 * owns them from here. NULL (said why) when it cannot start.
 */
tt_star_t *tt_star_start(int rank, int nranks, int fd, int *rank_fds, int64_t timeout_ms);
/* Where the ranks run (set-up's records), for the report's view of stopped ranks. */
void tt_star_set_view(tt_star_t *s, const void *endpoints, tt_star_describe_fn describe, void *arg);
/* Called on the star's thread when another rank revokes the communicator
 * (it interrupts the calls waiting on it); a revocation that arrived
 * before fn was set is delivered at once, on the caller's thread. */
void tt_star_on_revoke(tt_star_t *s, void (*fn)(void *arg, int rank), void *arg);

/* fd (tt_wake_ring) is rung with every piece of news, so that a call
 * asleep in the engine looks at it at once; -1: none. */
void tt_star_set_wake(tt_star_t *s, int fd);

/* all (nranks * size bytes) gets every rank's mine in rank order; fails at
 * once, saying why, when a rank gave up or left meanwhile. */
tutti_status_t tt_star_allgather(tt_star_t *s, const void *mine, void *all, size_t size);
/* destroy's barrier after ncalls collectives: waits until every rank is in
 * destroy; an error (said why) when ranks disagree or one gave up. */
tutti_status_t tt_star_leave(tt_star_t *s, uint64_t ncalls);
/* Tells every rank that this one gave up, with status and why. */
void tt_star_fail(tt_star_t *s, tutti_status_t status, const char *why);
/* Asks who is stuck and waits (a second or two) for the report; out gets
 * it, or what this rank alone can tell when the hub does not answer. */
void tt_star_who_is_stuck(tt_star_t *s, const tt_stuck_state_t *mine, char *out, size_t len);

/* Revokes the communicator here (the news says so from now on) and tells
 * every rank through the hub; a second call does nothing. */
void tt_star_revoke(tt_star_t *s);
/* Marks in dead (nranks bytes) every rank known to have died: the hub saw
 * its connection close unannounced (or it is the hub, and this rank's
 * connection to it closed). *blind says the hub is gone, so deaths after
 * it are not seen here. */
void tt_star_dead(tt_star_t *s, unsigned char *dead, int *blind);

/* Non-zero once news arrived (one relaxed load: cheap enough for every call). */
int tt_star_has_news(tt_star_t *s);
/* A copy of the news. */
void tt_star_news(tt_star_t *s, tt_star_news_t *out);

/* Stops the thread and closes the connections. */
void tt_star_stop(tt_star_t *s);
/* In a forked child: closes this process's copies of the descriptors and
 * frees nothing (the parent's thread may have been mid-way through its
 * memory when it forked). */
void tt_star_forget(tt_star_t *s);

#endif
