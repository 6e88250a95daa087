/* SPDX-License-Identifier: MIT */
/*
 * The star, now a tree: after the bootstrap join every rank holds one
 * connection to its parent in a tree of fan-out TT_STAR_FANOUT rooted at
 * rank 0, and accepts its children's, all served by a thread of its own,
 * so news travels whatever the ranks' main threads are doing. What goes up
 * (a rank's part of an exchange, a rank giving up and why, a rank entering
 * destroy, a revocation, a who-is-stuck query and the answers, a child
 * found dead) is relayed to rank 0, whose thread is the hub; what the hub
 * says goes down to every rank. A child whose parent dies attaches to
 * rank 0 instead. Each rank also listens for short point-to-point
 * messages from any rank (the pairs' connection requests).
 */
#ifndef TT_STAR_H
#define TT_STAR_H

#include <stddef.h>
#include <stdint.h>

#include "comm/stuck.h"
#include "core/sock.h"
#include "tutti.h"

#define TT_STAR_MAGIC 0x74747378u /* "ttsx" */
#define TT_STAR_TEXT 1024         /* bytes of a notice's text */
#define TT_STAR_FANOUT 4          /* children per rank: rank r's parent is (r - 1) / TT_STAR_FANOUT */

/* Frames on the tree's connections; `rank` is the rank a frame speaks of
 * (its sender, for what goes up), so relays pass frames on unchanged. */
typedef enum {
    TT_STAR_DATA = 1, /* up: rank's part of exchange `seq` */
    TT_STAR_ALL,      /* down: exchange `seq`'s broadcast (every part, in rank order) */
    TT_STAR_FAIL,     /* up: rank gave up with `status` in collective `seq` (the first it did not
                       * finish); text says why */
    TT_STAR_FAILED,   /* down: rank gave up (relayed FAIL), died or ended: `reserved` holds
                       * TT_STAR_FAILED_* flags */
    TT_STAR_LEAVING,  /* up: rank is in tutti_comm_destroy after `seq` collectives */
    TT_STAR_LEFT,     /* down: rank is the first in destroy, after `seq` collectives */
    TT_STAR_DONE,     /* down: every rank is in destroy; `status` says whether they agree */
    TT_STAR_QUERY,    /* up: rank asks who is stuck */
    TT_STAR_POLL,     /* down: where is your rank (query `seq`)? */
    TT_STAR_STATE,    /* up: rank's tt_stuck_state_t for query `seq` */
    TT_STAR_REPORT,   /* down: the who-is-stuck report (text) */
    TT_STAR_REVOKE,   /* up: rank revoked the communicator */
    TT_STAR_REVOKED,  /* down: rank revoked the communicator */
    TT_STAR_GONE,     /* up: rank's connection closed unannounced; `seq` 0: its parent saw it, 1: its child */
    /* From here on the join's frames and messages, which the tree never relays. */
    TT_STAR_JOIN,    /* joiner -> rank 0 at the bootstrap: its listener's address */
    TT_STAR_WELCOME, /* rank 0 -> joiner: where its parent and rank 0 listen; `status` non-zero: the job
                      * will not form, and why */
    TT_STAR_MSG,     /* point to point, on a connection of its own: tag `seq` */
    TT_STAR_BLOCK,   /* another root -> rank 0 at the bootstrap: the listeners of its block of ranks,
                      * from rank `seq` */
    TT_STAR_PARENTS, /* rank 0 -> another root: rank 0's listener, then those of ranks `seq`.. that
                      * its block's ranks have for parents */
    TT_STAR_TYPES
} tt_star_type_t;

/* TT_STAR_FAILED's flags: only for the ranks in destroy; the rank died
 * (closed unannounced); it ended after giving up (no news, but a shrink
 * must know). */
#define TT_STAR_FAILED_FOR_LEAVERS 1u
#define TT_STAR_FAILED_DIED 2u
#define TT_STAR_FAILED_ENDED 4u

typedef struct {
    uint32_t magic;
    uint16_t type;
    uint16_t reserved;
    int32_t rank;
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
    int died_rank;   /* the first rank whose connection closed unannounced, -1 */
    int failed_rank; /* the rank that gave up earliest and said why, -1 */
    tutti_status_t failed_status;
    uint64_t failed_from; /* the first collective it did not finish: earlier ones end on their own */
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
/* A point-to-point message, offered to its handler on the star's thread
 * as it arrives: 1 when the handler took it, 0 to keep it for
 * tt_star_take_msg. */
typedef int (*tt_star_mail_fn)(void *arg, int from, uint64_t tag, const void *payload, size_t len);

/* Where a rank's thread starts from (bootstrap.c joined it): its listener
 * (children and messages come there) and its connection to its parent
 * (-1 on rank 0), which it owns from here; root: where rank 0 listens. */
typedef struct {
    int rank, nranks;
    int listen_fd, up_fd;
    tt_sockaddr_t root;
    const unsigned char *key;
    int64_t timeout_ms;
    uint64_t bytes_out, bytes_in; /* what the join moved, counted on */
} tt_star_join_t;

/* The tree's parent of rank r (-1 for rank 0). */
static inline int tt_star_parent(int r)
{
    return r > 0 ? (r - 1) / TT_STAR_FANOUT : -1;
}

/* Starts the thread over a joined rank; NULL (said why) when it cannot. */
tt_star_t *tt_star_start(const tt_star_join_t *j);
/* Where the ranks run (set-up's records), for the report's view of stopped ranks. */
void tt_star_set_view(tt_star_t *s, const void *endpoints, tt_star_describe_fn describe, void *arg);
/* Called on the star's thread when another rank revokes the communicator
 * (it interrupts the calls waiting on it); a revocation that arrived
 * before fn was set is delivered at once, on the caller's thread. */
void tt_star_on_revoke(tt_star_t *s, void (*fn)(void *arg, int rank), void *arg);
/* fd (tt_wake_ring) is rung with every piece of news and every message,
 * so that a call asleep in the engine looks at once; -1: none. */
void tt_star_set_wake(tt_star_t *s, int fd);

/* all (nranks * size bytes) gets every rank's mine in rank order; fails at
 * once, saying why, when a rank gave up or left meanwhile. */
tutti_status_t tt_star_allgather(tt_star_t *s, const void *mine, void *all, size_t size);
/* Every rank's mine to rank 0, into its all (nranks * size bytes; unused
 * elsewhere); the other ranks return once theirs is on its way. */
tutti_status_t tt_star_gather(tt_star_t *s, const void *mine, void *all, size_t size);
/* Rank 0's buf (size bytes) to every rank's buf. */
tutti_status_t tt_star_bcast(tt_star_t *s, void *buf, size_t size);
/* destroy's barrier after ncalls collectives: waits until every rank is in
 * destroy; an error (said why) when ranks disagree or one gave up. */
tutti_status_t tt_star_leave(tt_star_t *s, uint64_t ncalls);
/* Tells every rank that this one gave up in collective `from` (the first
 * it did not finish), with status and why. */
void tt_star_fail(tt_star_t *s, tutti_status_t status, uint64_t from, const char *why);
/* Asks who is stuck and waits (a second or two) for the report; out gets
 * it, or what this rank alone can tell when the hub does not answer. */
void tt_star_who_is_stuck(tt_star_t *s, const tt_stuck_state_t *mine, char *out, size_t len);

/* Revokes the communicator here (the news says so from now on) and tells
 * every rank through the hub; a second call does nothing. */
void tt_star_revoke(tt_star_t *s);
/* How a rank is known gone: it died (the rank that saw its connection
 * close unannounced told the hub, which told all), or it left: it gave up
 * and then closed its connection, freeing the communicator, and its
 * process may live on (in a successor of it, say). */
enum { TT_STAR_RANK_DIED = 1, TT_STAR_RANK_LEFT };
/* Sets dead[r] (nranks bytes), where it is 0, to died or left for every
 * rank known gone so. *blind says the hub is gone, so what happens after
 * it is not seen here. */
void tt_star_dead(tt_star_t *s, unsigned char *dead, unsigned char died, unsigned char left, int *blind);

/* Non-zero once news arrived (one relaxed load: cheap enough for every call). */
int tt_star_has_news(tt_star_t *s);
/* A copy of the news. */
void tt_star_news(tt_star_t *s, tt_star_news_t *out);

/* Point-to-point messages (star_mail.c). Sends one to rank peer, which
 * listens at to, on a connection of its own (so it never waits for the
 * peer's main thread); its thread offers it to the handler, or keeps it. */
tutti_status_t tt_star_send_msg(tt_star_t *s, const tt_sockaddr_t *to, int peer, uint64_t tag,
                                const void *payload, size_t len, int64_t deadline_ms);
/* The same, where the receiver may not listen yet: while the connection is
 * refused, watch(arg) is asked between tries, and what it returns other
 * than TUTTI_SUCCESS (news that ends the caller's wait) ends the send. */
tutti_status_t tt_star_send_msg_watched(tt_star_t *s, const tt_sockaddr_t *to, int peer, uint64_t tag,
                                        const void *payload, size_t len, int64_t deadline_ms,
                                        tutti_status_t (*watch)(void *arg), void *arg);
/* The handler of arriving messages (NULL: keep them all). */
void tt_star_on_mail(tt_star_t *s, tt_star_mail_fn fn, void *arg);
/* Takes the oldest kept message from rank from with tag: 1 and up to cap
 * bytes in buf (*len: its whole length); 0 when there is none. */
int tt_star_take_msg(tt_star_t *s, int from, uint64_t tag, void *buf, size_t cap, size_t *len);
/* Waits until a message arrives, the handler calls tt_star_mail_kick, news
 * comes, or deadline_ms (tt_now_ms clock). */
void tt_star_wait_mail(tt_star_t *s, int64_t deadline_ms);
/* Wakes tt_star_wait_mail (from a mail handler that changed what the
 * waiter looks at). */
void tt_star_mail_kick(tt_star_t *s);

/* Bytes this rank's bootstrap has sent and received so far (the join, the
 * tree's frames and the messages it sent or got). */
void tt_star_bytes(tt_star_t *s, uint64_t *out, uint64_t *in);

/* Stops the thread (after sending what it still had to send, for a
 * moment at most) and closes the connections. */
void tt_star_stop(tt_star_t *s);
/* In a forked child: closes this process's copies of the descriptors and
 * frees nothing (the parent's thread may have been mid-way through its
 * memory when it forked). */
void tt_star_forget(tt_star_t *s);

#endif
