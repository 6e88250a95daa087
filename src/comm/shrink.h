/* SPDX-License-Identifier: MIT */
/*
 * What tutti_comm_shrink (shrink.c) shares with its agreement
 * (shrink_agree.c) and the listeners it runs over (rescue.c): the state of
 * one shrink on one rank, and the two messages of the agreement.
 */
#ifndef TT_SHRINK_H
#define TT_SHRINK_H

#include <stdint.h>

#include "comm/comm.h"

#define TT_RESCUE_MAGIC 0x74747273u /* "ttrs" */
#define TT_RESCUE_WHY 512

/* Member -> coordinator after its hello; then nranks bytes: the ranks it
 * knows dead. */
typedef struct {
    uint32_t magic;
    uint32_t flags;        /* the caller's TUTTI_SHRINK_DEAD */
    uint64_t exclude_hash; /* of the caller's exclude list, as a set */
} tt_rescue_join_t;

/* Coordinator -> member; then nranks bytes: 1 for the ranks kept. */
typedef struct {
    uint32_t magic;
    int32_t status; /* TUTTI_SUCCESS, or why the shrink failed (why says more) */
    int32_t nmembers, newrank;
    unsigned char key[TT_KEY_BYTES]; /* the new communicator's */
    char why[TT_RESCUE_WHY];
} tt_rescue_decision_t;

/* Why a rank is left out besides the caller's list (tt_shrink_t.dead). */
enum { TT_ALIVE = 0, TT_DIED, TT_STOPPED, TT_SILENT };

/* One shrink on this rank. */
typedef struct {
    tutti_comm_t comm;
    int n, me;
    unsigned flags;
    unsigned char key[TT_KEY_BYTES]; /* this shrink's, presented to the coordinator */
    uint64_t exclude_hash;
    unsigned char *excluded; /* the caller's list, by rank of comm */
    unsigned char *dead;     /* TT_DIED, TT_STOPPED, TT_SILENT by rank */
    int64_t admit_until;     /* the coordinator waits for members until then */
    int64_t until;           /* a member waits for an answer until then */
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

/* Connects to a rank's listener, once: TUTTI_ERR_PEER_FAILED when it is
 * refused (the process that listened is gone), TUTTI_ERR_TIMEOUT at
 * deadline_ms; logs nothing. */
tutti_status_t tt_rescue_connect(const tt_sockaddr_t *addr, int64_t deadline_ms, int *fd);
/* Whether rank's listener refuses a connection (its process is gone). A
 * rank that accepts gets a hello with this shrink's key and rank -1,
 * which its admission drops quietly. */
int tt_rescue_gone(const tt_shrink_t *sh, int rank);
/* Whether rank runs on this host and is stopped (SIGSTOP, a debugger). */
int tt_rescue_stopped(tutti_comm_t comm, int rank);

#endif
