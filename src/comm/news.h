/* SPDX-License-Identifier: MIT */
/*
 * What the other ranks' news means for a call (news.c): whether it may
 * start, must end, and the who-is-stuck report.
 */
#ifndef TT_COMM_NEWS_H
#define TT_COMM_NEWS_H

#include "comm/comm.h"

/* Whether call may start on comm: TUTTI_ERR_REVOKED once it was revoked,
 * TUTTI_ERR_ABORTED once a call failed on it (recorded and logged). */
tutti_status_t tt_comm_usable(tt_comm_t *comm, const char *call);

/*
 * News from the other ranks (news.c), for a call described as `call`:
 * collective number seq, or a send or receive (seq UINT64_MAX).
 * Non-zero (recorded and logged) when the call must end: a rank gave up or
 * died, one entered destroy before making this collective, or a rank timed
 * out and the who-is-stuck report came. One load when there is no news.
 */
tutti_status_t tt_comm_news(tt_comm_t *comm, const char *call, uint64_t seq);

/* Whether there is news at all (two relaxed loads). */
int tt_comm_has_news(tt_comm_t *comm);

/* TUTTI_ERR_REVOKED (recorded and logged) once comm was revoked, by this
 * rank or another, for call; else TUTTI_SUCCESS. */
tutti_status_t tt_comm_revoked(tt_comm_t *comm, const char *call);

/* The who-is-stuck report for this rank's timed-out call, into out. */
void tt_comm_who_is_stuck(tt_comm_t *comm, char *out, size_t len);

#endif
