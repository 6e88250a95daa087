/* SPDX-License-Identifier: MIT */
/*
 * The call-by-call agreement on the device transport's board (agree.c).
 */
#ifndef TT_COMM_AGREE_H
#define TT_COMM_AGREE_H

#include "comm/comm.h"

/*
 * Announces collective seq (signature sig) to the device transport's
 * board; capable says this rank could run it on its device buffers. When
 * it could, waits for every rank's announcement: *all says whether every
 * rank could and their devices reach each other; a rank that could but
 * announced another signature is a mismatch. Without a device transport,
 * *all is 0.
 */
tutti_status_t tt_comm_agree(tt_comm_t *comm, uint64_t seq, int capable, uint64_t sig, int *all);

/* Whether a wait of call's (seq: its number, UINT64_MAX for point to
 * point) must end, and ended it: news from the star (a revocation, a rank
 * that died or gave up) or this rank's abort; the communicator failed. */
int tt_comm_wait_ended(tt_comm_t *comm, const char *call, uint64_t seq);

/* Binds the device transport to GPU device on the first call (later calls
 * say what the first found): 1 when direct runs are possible from here. */
int tt_comm_device_bind(tt_comm_t *comm, int device);

#endif
