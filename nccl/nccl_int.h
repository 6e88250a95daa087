/* SPDX-License-Identifier: MIT */
/*
 * What the files of libnccl.so.2 share: the communicator behind an
 * ncclComm_t, the way every call enters and leaves it, the translation of
 * NCCL's enums and results to tutti's and back, and the group's queue.
 */
#ifndef TT_NCCL_INT_H
#define TT_NCCL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "nccl/nccl_abi.h"
#include "sched/schedule.h"
#include "tutti.h"

#define TT_NCCL_MAX_REDOPS 64   /* live ncclRedOpCreatePreMulSum operators per communicator */
#define TT_NCCL_MAX_PENDING 256 /* destroyed ranks of this process waiting for the rest of their job */

/* A pre-multiplied sum: each rank multiplies its input by scalar, then the
 * ranks sum. The scalar is read at creation (host immediate) or when each
 * collective runs (device residence: its pointer is kept). */
typedef struct {
    int used;
    ncclDataType_t ndtype;
    tutti_dtype_t dtype;
    int on_pointer; /* 1: read *scalar_ptr when the collective runs */
    const void *scalar_ptr;
    unsigned char value[8]; /* host immediate: the scalar's bytes */
} tt_nccl_redop_t;

struct ncclComm {
    uint64_t magic;
    _Atomic(tutti_comm_t) tc; /* NULL until the init finished */
    int rank, nranks, device;
    int blocking; /* config.blocking: 0 makes init, split and finalize return ncclInProgress */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    ncclResult_t state; /* ncclInProgress while a worker runs, else the outcome of init/finalize */
    int users;          /* calls inside (tt_nccl_enter), under lock */
    int closing;        /* destroy or abort began: no new calls */
    pthread_t worker;   /* the init or finalize running in the background */
    int has_worker;
    int finalized; /* tc was destroyed by ncclCommFinalize */
    int owner_pid; /* the process that made it: a forked child's copy is refused */
    tt_nccl_redop_t redops[TT_NCCL_MAX_REDOPS];
    char error[512]; /* what the background work or a queued call failed with */
    int revoked;     /* ncclCommRevoke was called on it */
    /* A deferred or background init: what to join. */
    struct {
        int nranks, rank;
        tutti_unique_id_t id;
        tutti_unique_id_t *ids; /* the scalable init's roots (malloc'd; NULL: id alone) ... */
        int nids;               /* ... how many */
        tutti_comm_t parent; /* split, shrink, grow: the parent's communicator ... */
        ncclComm_t split_of; /* ... and its handle, held (a call inside it) until the child is made */
        enum { TT_NCCL_SPLIT = 0, TT_NCCL_SHRINK, TT_NCCL_GROW } how;
        int color, key; /* split */
        int *exclude;   /* shrink: the ranks left out (malloc'd) ... */
        int nexclude;   /* ... how many */
        unsigned flags; /* ... and TUTTI_SHRINK_*; split: TUTTI_SPLIT_* */
        int has_id;     /* grow: id holds rank 0's unique id */
    } init;
};

/* One-time set-up of the library: NCCL_DEBUG, the version line. */
void tt_nccl_once(void);

/* Results and errors. Each failing call records its text (ncclGetLastError)
 * and returns its result. */
ncclResult_t tt_nccl_error(ncclComm_t comm, ncclResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a fault already logged where it was found (on a worker
 * thread, in tutti): records the text, logs nothing. */
ncclResult_t tt_nccl_context(ncclResult_t res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After a tutti call failed with st: its text (already logged by tutti)
 * becomes the last error; returns the matching ncclResult_t. */
ncclResult_t tt_nccl_failed(ncclComm_t comm, tutti_status_t st);
ncclResult_t tt_nccl_result(tutti_status_t st);

/* Enum translation, one table each; a value without a counterpart is an
 * error naming it (call is the API call). */
ncclResult_t tt_nccl_dtype(ncclDataType_t in, tutti_dtype_t *out, const char *call);
ncclResult_t tt_nccl_op(ncclComm_t comm, ncclRedOp_t in, ncclDataType_t dtype, tutti_op_t *out,
                        const tt_nccl_redop_t **premul, const char *call);

/*
 * The registry of live communicators. What the application holds is a
 * handle (a registry slot and a generation, never the address), which the
 * exported calls turn into the communicator: enter checks that *comm is a
 * live handle (and waits for its background init), counts the call in and
 * replaces *comm by the communicator; leave counts it out. reenter does
 * the same for a communicator the library already holds (a group's calls).
 */
ncclResult_t tt_nccl_enter(ncclComm_t *comm, const char *call);
/* Whether comm was made by another process (this one is a fork of it). */
int tt_nccl_forked(ncclComm_t comm);
ncclResult_t tt_nccl_reenter(ncclComm_t comm, const char *call);
void tt_nccl_leave(ncclComm_t comm);
ncclComm_t tt_nccl_new(int nranks, int rank, int blocking);
/* Registers comm: its handle, NULL when the registry is full. */
ncclComm_t tt_nccl_register(ncclComm_t comm);
/* Takes comm out of the registry (no call enters it after) and waits for
 * the calls inside to leave; 0 when it was not live. retire_handle does so
 * for the communicator behind a handle, which it returns (NULL: not live);
 * in a forked child it waits for nothing (the calls were the parent's). */
int tt_nccl_retire(ncclComm_t comm, int aborting);
ncclComm_t tt_nccl_retire_handle(ncclComm_t handle, int aborting);
void tt_nccl_free(ncclComm_t comm);
/* Copies the text of the background failure of the communicator behind
 * handle; 0 when there is none or the handle is not live. */
int tt_nccl_copy_error(ncclComm_t handle, char *out, size_t len);
/* tutti's communicator behind the handle tc, for the calls that reach
 * inside it (handles are never addresses); NULL once tc is destroyed. */
static inline tt_comm_t *tt_nccl_inner(tutti_comm_t tc)
{
    return tc ? tt_comm_lookup(tc, NULL) : NULL;
}

/* comm's tutti handle (NULL once aborted): read once per use, since an
 * abort on another thread clears it. */
static inline tutti_comm_t tt_nccl_tc(ncclComm_t comm)
{
    return atomic_load_explicit(&comm->tc, memory_order_acquire);
}
/* How many live communicators of this process belong to the job (the
 * ranks of one tutti communicator) with this key tag. */
int tt_nccl_live_in_job(uint64_t key_tag);
/* Joins the background worker, if any. */
void tt_nccl_join(ncclComm_t comm);

/* Starts comm's init (from comm->init) on a worker thread. */
ncclResult_t tt_nccl_start_init(ncclComm_t comm);
/* Starts comm's finalize on a worker thread (life.c). */
ncclResult_t tt_nccl_start_finalize(ncclComm_t comm);
/* Splits parent (inside tt_nccl_enter) as ncclCommSplit does; share: the
 * child takes the parent's connections (TUTTI_SPLIT_SHARE). */
ncclResult_t tt_nccl_split(ncclComm_t parent, int color, int key, int blocking, int share, ncclComm_t *out);
/* A communicator to be made from parent (inside tt_nccl_enter), which it
 * holds until made; NULL without memory. */
ncclComm_t tt_nccl_child(ncclComm_t parent, int blocking);
/* Registers comm, hands out its handle in *out and starts its init: at the
 * group's end inside a group, in the background when non-blocking
 * (ncclInProgress), else here. */
ncclResult_t tt_nccl_launch(ncclComm_t comm, ncclComm_t *out);
/* Under the registry lock: whether handle is live, and its communicator's
 * state (an asynchronous failure of its tutti communicator included), size,
 * rank and device, without waiting. */
int tt_nccl_snapshot(ncclComm_t handle, ncclResult_t *state, int *nranks, int *rank, int *device);
/* What an init config says: blocking or not; an invalid config is an error. */
ncclResult_t tt_nccl_config(const ncclConfig_t *config, int inherit, int *blocking, const char *call);
/* Whether a split or shrink shares its parent's resources: the config's
 * int at offset off (splitShare, shrinkShare) when the config has it and
 * it is set, else NCCL's variable env (NCCL_COMM_SPLIT_SHARE_RESOURCES, ...). */
int tt_nccl_config_share(const ncclConfig_t *config, size_t off, const char *env);

/* The collectives of the NCCL API that tutti has none of: made of sends
 * and receives (exec.c), numbered after tt_coll_t's. */
enum { TT_NCCL_GATHER = TT_COLL_COUNT, TT_NCCL_SCATTER };

/* A call of the NCCL API on a communicator, as the group keeps it. */
typedef struct {
    int kind; /* a tt_coll_t, TT_NCCL_GATHER or TT_NCCL_SCATTER */
    const void *send;
    void *recv;
    size_t count;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int has_premul;         /* op is a pre-multiplied sum ... */
    tt_nccl_redop_t premul; /* ... as the operator was at the call (it may be destroyed after) */
    int root;               /* the peer for send and receive */
    ncclComm_t comm;
    void *stream;
} tt_nccl_op_t;

/* Runs op now, or queues it when a group is open on this thread. */
ncclResult_t tt_nccl_submit(const tt_nccl_op_t *op, const char *call);
/* Records the failure of a call made inside an open group: ncclGroupEnd
 * returns it and runs nothing. */
void tt_nccl_group_note(ncclResult_t res);
/* Queues an init (or a finalize) for the group's end, where all start at
 * once; 0 when no group is open. */
int tt_nccl_group_defer_init(ncclComm_t comm);
int tt_nccl_group_defer_finalize(ncclComm_t comm);
/* Runs one communicator's calls: the collectives in order, then every
 * send and receive as one batch (exec.c). Inside tt_nccl_enter. */
ncclResult_t tt_nccl_run(ncclComm_t comm, const tt_nccl_op_t *ops, int n);
/* A collective with a pre-multiplied sum: scales into a temporary and
 * runs the sum from it (premul.c). */
ncclResult_t tt_nccl_run_premul(tutti_comm_t tc, const tt_nccl_op_t *op);

#endif
