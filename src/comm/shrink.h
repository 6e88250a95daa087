/* SPDX-License-Identifier: MIT */
/*
 * What tutti_comm_shrink (shrink.c) shares with its agreement
 * (shrink_agree.c), the messages of the agreement (rescue_wire.c), what
 * this rank's listener receives during a shrink (shrink_inbox.c) and the
 * listeners themselves (rescue.c): the state of one shrink on one rank.
 *
 * Every message is bound to this shrink's key, which never travels: a
 * member presents a fresh nonce, the coordinator proves the key over it
 * (CHALLENGE), the member proves it over the coordinator's nonce (JOIN),
 * and the answer carries a code over both nonces (ANSWER). A verdict
 * (VERDICT) goes one way, to a rank the coordinator left out or must tell
 * at once that the shrink failed, and names the rank it is for.
 */
#ifndef TT_SHRINK_H
#define TT_SHRINK_H

#include <stdint.h>

#include "comm/comm.h"
#include "core/mac.h"

#define TT_RESCUE_MAGIC 0x74747273u /* "ttrs" */
#define TT_RESCUE_WHY 512
#define TT_RESCUE_NONCE 16
#define TT_RESCUE_STEP_MS 100 /* between looks at the news while waiting */

typedef enum {
    TT_RESCUE_HELLO = 1, /* member -> coordinator: its nonce */
    TT_RESCUE_CHALLENGE, /* coordinator -> member: its nonce, a code over the member's */
    TT_RESCUE_JOIN,      /* member -> coordinator: its list and what it knows dead, coded */
    TT_RESCUE_ANSWER,    /* coordinator -> member: the decision, coded over both nonces */
    TT_RESCUE_VERDICT    /* coordinator -> a rank's listener: the decision, for that rank */
} tt_rescue_kind_t;

typedef struct {
    uint32_t magic;
    uint32_t kind;
    uint32_t no;                          /* which of comm's shrinks the sender is in (they must agree) */
    int32_t rank;                         /* the sender's rank in comm */
    int32_t to;                           /* the rank the message is for */
    int32_t nranks;                       /* comm's size */
    uint32_t len;                         /* bytes after the header, its code included */
    unsigned char nonce[TT_RESCUE_NONCE]; /* the sender's, fresh for this exchange */
} tt_rescue_hdr_t;

/* A JOIN's body; then nranks bytes: the ranks the member knows dead. */
typedef struct {
    uint32_t flags; /* the caller's TUTTI_SHRINK_DEAD */
    uint32_t pad;
    uint64_t exclude_hash; /* of the caller's exclude list, as a set */
} tt_rescue_join_t;

/* An ANSWER's or VERDICT's body; then nranks bytes: 1 for the members. */
typedef struct {
    int32_t status; /* TUTTI_SUCCESS, or why the shrink failed (why says more) */
    int32_t nmembers, newrank;
    uint32_t flags;
    uint64_t exclude_hash;
    unsigned char key[TT_KEY_BYTES]; /* the new communicator's, masked for this member */
    char why[TT_RESCUE_WHY];
} tt_rescue_decision_t;

/* Why a rank is left out besides the caller's list (tt_shrink_t.dead).
 * Only TT_DIED, a process seen to end, goes without a verdict: a rank
 * that closed or failed an exchange (TT_GONE) may be alive and shrinking
 * with others, and must hear that it was left out; so must one that left
 * comm (TT_GONE too), which may have gone on in a successor of comm and
 * answer that this rank was left behind (rescue_keep.c). */
enum { TT_ALIVE = 0, TT_DIED, TT_STOPPED, TT_SILENT, TT_GONE, TT_LEFT_OUT };

/* A member the coordinator admitted (by rank of comm). */
typedef struct {
    int fd; /* -1: none */
    unsigned char theirs[TT_RESCUE_NONCE], mine[TT_RESCUE_NONCE];
    tt_rescue_join_t join;
} tt_rescue_member_t;

typedef struct tt_rescue_inbox tt_rescue_inbox_t;

/* One shrink on this rank. */
typedef struct {
    tt_comm_t *comm;
    int n, me;
    unsigned flags;
    unsigned no;                     /* comm's shrinks begun before this one */
    unsigned char key[TT_KEY_BYTES]; /* comm's recovery key: every message proves it */
    uint64_t exclude_hash;
    unsigned char *excluded;    /* the caller's list, by rank of comm */
    unsigned char *dead;        /* TT_DIED, TT_STOPPED, TT_SILENT, TT_LEFT_OUT by rank */
    int64_t admit_until;        /* the coordinator waits for members until then */
    int64_t until;              /* a member waits for an answer until then */
    tt_rescue_inbox_t *inbox;   /* this rank's listener during the shrink */
    tt_rescue_member_t *joined; /* the coordinator's members, by rank */
    char mismatch[256];         /* how the first member that disagreed differs */
    /* The outcome: the coordinator's answer, the members (by rank of
     * comm), and the connections that become the new star. */
    tt_rescue_decision_t d;
    unsigned char *member;
    int up_fd;     /* a member's connection to the coordinator */
    int *rank_fds; /* the coordinator's to each member, by new rank */
} tt_shrink_t;

/* The agreement (shrink_agree.c): on success sh->d, sh->member and the
 * connections are set; else the reason is recorded on comm. */
tutti_status_t tt_shrink_agree(tt_shrink_t *sh);

/* The messages (rescue_wire.c). Each read fails quietly, with
 * TUTTI_ERR_AUTH for a message that does not prove this shrink's key,
 * TUTTI_ERR_PEER_FAILED for a closed or malformed connection. */
void tt_rescue_nonce(unsigned char nonce[TT_RESCUE_NONCE]);
tutti_status_t tt_rescue_send(const tt_shrink_t *sh, int fd, tt_rescue_kind_t kind, int to,
                              const unsigned char *mine, const unsigned char *theirs, const void *body,
                              size_t len, const unsigned char *tail, int64_t deadline_ms);
/* Whether hdr opens a well-formed message of kind for this shrink, from
 * rank `from` (-1: any), whose body and tail (nranks bytes) follow. */
int tt_rescue_hdr_ok(const tt_shrink_t *sh, const tt_rescue_hdr_t *hdr, tt_rescue_kind_t kind, int from);
size_t tt_rescue_body_len(const tt_shrink_t *sh, tt_rescue_kind_t kind);
/* Checks the code of a whole message (header, then payload of hdr->len
 * bytes) against the nonce it answers (NULL for a verdict). */
int tt_rescue_check(const tt_shrink_t *sh, const tt_rescue_hdr_t *hdr, const unsigned char *payload,
                    const unsigned char *theirs);
/* The member's side: HELLO, CHALLENGE checked, JOIN; then the ANSWER,
 * checked and validated field by field into sh->d and sh->member. */
tutti_status_t tt_rescue_join(tt_shrink_t *sh, int c, int fd, unsigned char mine[TT_RESCUE_NONCE],
                              unsigned char theirs[TT_RESCUE_NONCE]);
tutti_status_t tt_rescue_read_answer(tt_shrink_t *sh, int c, int fd, const unsigned char *mine,
                                     const unsigned char *theirs);
/* The coordinator's answer to member m (new rank newrank, -1 on failure). */
void tt_rescue_answer(tt_shrink_t *sh, int m, int newrank);
/* Whether a verdict counts for this rank: one that leaves it out, of
 * whichever of comm's shrinks (remembered on comm: no later shrink of comm
 * takes it back), or this shrink's failure; *st and the last error say
 * what it means here. */
int tt_rescue_verdict_ok(const tt_shrink_t *sh, const tt_rescue_hdr_t *hdr, const tt_rescue_decision_t *d,
                         const unsigned char *member, tutti_status_t *st);

/* This rank's listener during the shrink (shrink_inbox.c): joins
 * (admitted into sh->joined when this rank coordinates, held otherwise)
 * and verdicts. serve waits until deadline_ms, or until something came,
 * or extra_fd (-1: none) is readable; 1 when something came. */
tt_rescue_inbox_t *tt_rescue_inbox_new(tt_shrink_t *sh);
void tt_rescue_inbox_free(tt_rescue_inbox_t *in);
int tt_rescue_inbox_serve(tt_rescue_inbox_t *in, int coordinating, int extra_fd, int64_t deadline_ms);
/* Closes what comm's listener holds for a shrink that did not come. */
void tt_rescue_held_free(tt_comm_t *comm);
/* TUTTI_SUCCESS, or the status of the verdict that arrived (said on comm). */
tutti_status_t tt_rescue_inbox_verdict(const tt_rescue_inbox_t *in);

/* A reply on the connection a verdict went to rank r over (its nonce
 * mine): 1 when one came that holds, *st its status (said). */
int tt_rescue_read_reply(const tt_shrink_t *sh, int r, int fd, const unsigned char *mine, tutti_status_t *st);

/* comm's recovery key (rescue.c): every survivor derives the same one from
 * comm's key, and neither can be worked back from what the messages show. */
void tt_rescue_key(tt_comm_t *comm, unsigned char key[TT_KEY_BYTES]);
/* Keeps for the rest of this process's life the listeners of a
 * communicator of n ranks it left for a successor (rescue_keep.c), where it
 * was rank me (the Unix one's file at path; NULL: none): they answer a rank
 * left behind, under comm's recovery key, that comm was succeeded as said.
 * Takes the descriptors. */
void tt_rescue_keep(const unsigned char *key, int n, int me, int tcp_fd, int unix_fd, const char *path,
                    const char *said);

/* Connects to rank's listener, once: TUTTI_ERR_PEER_FAILED when it is
 * refused (no process holds comm there), TUTTI_ERR_TIMEOUT at
 * deadline_ms; logs nothing. */
tutti_status_t tt_rescue_connect(tt_comm_t *comm, int rank, int64_t deadline_ms, int *fd);
/* Whether rank's listener refuses a connection (its process is gone). */
int tt_rescue_gone(const tt_shrink_t *sh, int rank);
/* Whether rank runs on this host and is stopped (SIGSTOP, a debugger). */
int tt_rescue_stopped(tt_comm_t *comm, int rank);
/* Whether rank ran on this host and its process has ended. */
int tt_rescue_ended(tt_comm_t *comm, int rank);
/* Whether rank runs on this host and its process lives. */
int tt_rescue_alive(tt_comm_t *comm, int rank);

#endif
