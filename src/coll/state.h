/* SPDX-License-Identifier: MIT */
/* The coll layer's state on a communicator, for the files of this layer only. */
#ifndef TT_COLL_STATE_H
#define TT_COLL_STATE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "sched/cache.h"

typedef struct {
    tt_sched_cache_t sched_cache;
    void *scratch; /* host scratch of the schedules, kept between calls */
    size_t scratch_bytes;
    void *engine_ws; /* the engine's per-call arrays, kept between calls */
    size_t engine_ws_bytes;
    struct pollfd *wait_fds; /* what the engine sleeps on (coll/wait.c) */
    int wait_cap;
    uint64_t bytes_sent;
    int any_next;              /* the peer a receive from any source asks first */
    struct {                   /* tutti-explain --measure: what the last call ran */
        int64_t *round_end_ns; /* caller's array of cap entries; NULL: not traced */
        int cap, nrounds, nslices;
        const tt_algorithm_t *algo;
    } trace;
} tt_coll_state_t;

/* The state, made on first use; NULL (said why) without memory. */
tt_coll_state_t *tt_coll_state(tt_comm_t *comm);

#endif
