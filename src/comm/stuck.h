/* SPDX-License-Identifier: MIT */
/*
 * Where a rank is, for the who-is-stuck report: the engine keeps its rank's
 * progress in relaxed atomics (written at a call's start and end and when it
 * starts waiting, never per message), the star's thread reads a snapshot
 * when the hub asks, and the hub turns every rank's snapshot into the
 * report that names the ranks that never reached the call or stopped.
 */
#ifndef TT_STUCK_H
#define TT_STUCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* One rank's snapshot, as it travels to the hub. */
typedef struct {
    int32_t in_call;   /* 1 inside a collective */
    int32_t timed_out; /* it reached TUTTI_TIMEOUT in that call */
    uint64_t seq;      /* that call's number, or the last call's */
    uint8_t coll, dtype, op;
    uint8_t kind; /* the step it waits on (0 send, 1 receive, 2 receive to reduce); 255: none */
    int32_t root;
    uint64_t count;
    int32_t peer; /* the rank it waits on, -1 */
    int32_t round, nrounds, slice, nslices;
    int32_t pad;
    int64_t for_ms;   /* how long it has waited in the call, or since its last call ended */
    uint64_t started; /* collectives it has started */
} tt_stuck_state_t;

#define TT_STUCK_NO_STEP 255

/* A rank's progress, written by whichever thread runs its collectives. */
typedef struct {
    _Atomic int32_t in_call, timed_out, ran;
    _Atomic uint64_t seq;
    _Atomic uint32_t sig; /* coll | dtype << 8 | op << 16 */
    _Atomic int32_t root;
    _Atomic uint64_t count;
    _Atomic int32_t peer, kind, round, nrounds, slice, nslices;
    _Atomic int64_t since_ns; /* waiting since, or the last call's end */
    _Atomic uint64_t started;
} tt_progress_t;

void tt_progress_begin(tt_progress_t *p, uint64_t seq, int coll, int dtype, int op, int root, uint64_t count);
void tt_progress_wait(tt_progress_t *p, int peer, int kind, int round, int nrounds, int slice, int nslices,
                      int64_t since_ns);
void tt_progress_timed_out(tt_progress_t *p);
void tt_progress_end(tt_progress_t *p);
void tt_progress_read(const tt_progress_t *p, tt_stuck_state_t *out);

/* "allreduce #5 (count 1000, fp32, sum)": the call a snapshot is in or last made. */
void tt_stuck_call(const tt_stuck_state_t *st, char *out, size_t len);

/* How the hub tells a stopped process: 'T' stopped, 'Z' ended, 'R'/'S'/'D'
 * running, 0 when it cannot tell (another host). */
typedef int (*tt_stuck_proc_fn)(void *arg, int rank);

/*
 * The report from every rank's snapshot (answered[r] zero: rank r did not
 * answer within wait_ms): first the ranks at fault (silent, stopped, never
 * reached the call, in another call), then what every other rank waits for.
 * asker is a rank that timed out; its call is the one the report is about.
 */
void tt_stuck_compile(int nranks, const tt_stuck_state_t *states, const unsigned char *answered, int asker,
                      int wait_ms, tt_stuck_proc_fn proc, void *arg, char *out, size_t len);

/* The state ('T', 'Z', ...) of process pid from /proc, 0 when unknown. */
int tt_stuck_proc_state(int pid);

#endif
