/* SPDX-License-Identifier: MIT */
/*
 * Communicator life cycle: create, destroy and abort (in a forked child:
 * releasing only the child's copy); a failed call told to the peers; the
 * layers' state. The public handles, the count of calls inside and the
 * last error a handle asks for are in handle.c, errors recorded in
 * error.c, set-up between the bootstrap and a ready communicator in
 * setup.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "comm/lend.h"
#include "comm/rescue.h"
#include "comm/setup.h"
#include "comm/star.h"
#include "core/clock.h"
#include "core/env_config.h"
#include "core/fdlimit.h"
#include "core/log.h"
#include "core/mac.h"
#include "core/wake.h"

void tt_comm_fail(tt_comm_t *comm, tutti_status_t st)
{
    tt_comm_fail_in(comm, st, 0);
}

void tt_comm_fail_in(tt_comm_t *comm, tutti_status_t st, uint64_t from)
{
    if (comm->failed)
        return;
    comm->failed = st;
    tt_lend_taint(comm);
    /* The others learn why through rank 0 (they see the transports' abort
     * first, and wait a moment for this). */
    tt_bootstrap_fail(&comm->bs, st, from, comm->last_error);
    for (int i = 0; i < comm->nconnected; i++)
        comm->peers[comm->connected[i]].ops->abort(comm->peers[comm->connected[i]].conn);
    /* The device transport's abort raises one flag for all its peers. */
    for (int r = 0; comm->device_peers && r < comm->nranks; r++)
        if (comm->device_peers[r].ops) {
            comm->device_peers[r].ops->abort(comm->device_peers[r].conn);
            break;
        }
}

void *tt_comm_layer(tt_comm_t *comm, tt_layer_t layer)
{
    return comm->layers[layer].state;
}

void tt_comm_layer_set(tt_comm_t *comm, tt_layer_t layer, void *state, const tt_layer_ops_t *ops)
{
    comm->layers[layer].state = state;
    comm->layers[layer].ops = ops;
}

void *tt_comm_layer_make(tt_comm_t *comm, tt_layer_t layer, size_t bytes, const tt_layer_ops_t *ops,
                         const char *what)
{
    void *s = tt_comm_layer(comm, layer);
    if (!s && (s = calloc(1, bytes)) != NULL)
        tt_comm_layer_set(comm, layer, s, ops);
    if (!s)
        tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "no memory for %s", what);
    return s;
}

static void layers_free(tt_comm_t *comm)
{
    for (int l = TT_LAYER_COUNT - 1; l >= 0; l--) /* the device proxy uses the connections */
        if (comm->layers[l].state) {
            comm->layers[l].ops->destroy(comm, comm->layers[l].state);
            comm->layers[l].state = NULL;
        }
}

/* The host connections and what is left once no one borrows them; then
 * the lender's turn, when this was the last to borrow from it. */
static void comm_finish(tt_comm_t *comm)
{
    while (comm) {
        tt_comm_teardown_host(comm);
        tt_comm_t *lender = tt_lend_give_back(comm);
        free(comm->endpoints);
        free(comm->send_seq);
        free(comm->recv_seq);
        free(comm);
        comm = lender;
    }
}

/* local_only: in a forked child, whose copy shares the parent's sockets,
 * segments and device: close and unmap this process's copies, and tell no
 * one. The layers are left as they are (the child has no proxy thread). */
static void comm_free(tt_comm_t *comm, int local_only)
{
    int kept = tt_lend_kept(comm);
    if (!local_only)
        layers_free(comm);
    tt_comm_teardown(comm, local_only, kept);
    tt_rescue_close(comm, local_only);
    if (local_only)
        tt_bootstrap_forget(&comm->bs);
    else
        tt_bootstrap_close(&comm->bs);
    tt_wake_close(comm->wake_fd); /* the star's thread, which rings it, has stopped */
    comm->wake_fd = -1;
    if (!kept) /* else the last communicator borrowing its connections finishes it */
        comm_finish(comm);
}

/* For the who-is-stuck report: where this rank is (called by the star's thread). */
static void describe(void *arg, tt_stuck_state_t *out)
{
    tt_progress_read(&((tt_comm_t *)arg)->progress, out);
}

/* TUTTI_TIMEOUT, TUTTI_PIPELINE and the params (the variables' ranges are
 * their rules in config_table.h). */
static tutti_status_t comm_settings(tt_comm_t *comm, const tutti_comm_params_t *params, int *node_id)
{
    comm->timeout_ms = tt_config_int(TT_CFG_TIMEOUT) * 1000;
    comm->spin_ns = tt_config_int(TT_CFG_SPIN_US) * 1000;
    *node_id = (int)tt_config_int(TT_CFG_NODE_ID);
    if (params && (params->field_mask & TUTTI_PARAM_TIMEOUT_MS))
        comm->timeout_ms = params->timeout_ms;
    if (params && (params->field_mask & TUTTI_PARAM_NODE_ID))
        *node_id = params->node_id;
    comm->nchannels = (int)tt_config_int(TT_CFG_PIPELINE); /* in range: tt_config_check saw it */
    if (comm->timeout_ms <= 0)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "params: timeout_ms %lld is not > 0",
                             (long long)comm->timeout_ms);
    return TUTTI_SUCCESS;
}

/* Another rank revoked comm (on the star's thread): whatever waits stops. */
static void revoked_elsewhere(void *arg, int rank)
{
    tt_comm_t *comm = arg;
    int none = -1;
    atomic_compare_exchange_strong_explicit(&comm->revoked_by, &none, rank, memory_order_relaxed,
                                            memory_order_relaxed);
    tt_lend_taint(comm);
    tt_comm_interrupt(comm);
}

/* How a rank joins the bootstrap: through the roots' ids, or over
 * connections made already (ids NULL: up_fd, or rank 0's rank_fds). */
typedef struct {
    const tt_id_t *ids;
    int nids;
    int up_fd;
    int *rank_fds;
    const tt_lend_t *lend; /* the parent whose connections it may take, or NULL */
} join_t;

/* Connections handed over that no bootstrap took: closed here. */
static void join_close(const join_t *join, int nranks)
{
    if (join->ids)
        return;
    if (join->up_fd >= 0)
        close(join->up_fd);
    for (int r = 1; join->rank_fds && r < nranks; r++)
        if (join->rank_fds[r] >= 0)
            close(join->rank_fds[r]);
    free(join->rank_fds);
}

/* A communicator with its settings read and its arrays made, before the bootstrap. */
static tutti_status_t comm_new(tt_comm_t **out, int nranks, int rank, const tutti_comm_params_t *params,
                               int *node_id)
{
    char msg[512];
    tt_log_set_rank(rank);
    tt_fd_limit_raise();
    if (tt_config_check(tt_transport_configs(), msg, sizeof msg)) /* each bad variable is logged there */
        return tt_comm_error_logged(NULL, TUTTI_ERR_CONFIG, "%s", msg);
    tt_comm_t *comm = calloc(1, sizeof *comm);
    if (!comm)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for a communicator");
    comm->bs.up_fd = -1;
    comm->wake_fd = tt_wake_open();
    comm->device_tp = -1;
    comm->device_bound = -1;
    comm->revoked_by = -1;
    comm->rescue_fd = comm->rescue_local_fd = -1;
    comm->shrunk_out_by = -1;
    comm->rank = rank;
    comm->nranks = nranks;
    *out = comm;
    TT_TRY(comm_settings(comm, params, node_id));
    comm->endpoints = calloc((size_t)nranks, sizeof *comm->endpoints);
    comm->send_seq = calloc((size_t)nranks, sizeof(uint64_t));
    comm->recv_seq = calloc((size_t)nranks, sizeof(uint64_t));
    if (!comm->endpoints || !comm->send_seq || !comm->recv_seq)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "rank %d: no memory for %d ranks", rank, nranks);
    return TUTTI_SUCCESS;
}

static tutti_status_t comm_join(tutti_comm_t *out, int nranks, int rank, const unsigned char *key,
                                const join_t *join, const tutti_comm_params_t *params)
{
    char msg[512];
    int node_id = 0;
    int64_t t0 = tt_now_ms();
    tt_comm_t *comm = NULL;
    tutti_status_t st = comm_new(&comm, nranks, rank, params, &node_id);
    if (!st)
        st = tt_lend_take(comm, join->lend);
    if (st) {
        join_close(join, nranks);
        goto undo_alloc;
    }
    st = join->ids
             ? tt_bootstrap_init(&comm->bs, nranks, rank, join->ids, join->nids, comm->timeout_ms, msg, sizeof msg)
             : tt_bootstrap_adopt(&comm->bs, nranks, rank, key, join->up_fd, join->rank_fds, comm->timeout_ms,
                                  msg, sizeof msg);
    if (st) {
        /* CONFIG: what answers at the root's address is not the job's root. */
        tt_comm_error_in(NULL, st == TUTTI_ERR_CONFIG ? TT_SUB_CONFIG : TT_SUB_INIT, st, "%s", msg);
        goto undo_alloc;
    }
    if (comm->bs.star)
        tt_star_set_wake(comm->bs.star, comm->wake_fd);
    comm->env = (tt_tp_env_t){.rank = rank,
                              .nranks = nranks,
                              .nchannels = comm->nchannels,
                              .key_tag = tt_key_tag(key),
                              .timeout_ms = comm->timeout_ms,
                              .endpoints = comm->endpoints,
                              .barrier = tt_bootstrap_barrier,
                              .barrier_arg = &comm->bs,
                              .watch = tt_bootstrap_watch,
                              .watch_arg = &comm->bs,
                              .aborting = &comm->aborting,
                              .wake_fd = comm->wake_fd};
    memcpy(comm->env.key, key, TT_KEY_BYTES);
    st = tt_comm_setup(comm, node_id, t0); /* says why itself */
    if (st) {
        tt_bootstrap_fail(&comm->bs, st, 0,
                          tt_comm_thread_error()); /* the others stop waiting for this rank */
        goto undo_alloc;
    }
    tt_rescue_narrow(comm);
    if (comm->bs.star) {
        tt_star_set_view(comm->bs.star, comm->endpoints, describe, comm);
        tt_star_on_revoke(comm->bs.star, revoked_elsewhere, comm);
    }
    if (!tt_comm_handle_new(comm)) {
        st = tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "too many live communicators");
        goto undo_alloc;
    }
    *out = comm->handle;
    return TUTTI_SUCCESS;

undo_alloc:
    if (comm)
        comm_free(comm, 0);
    return st;
}

tutti_status_t tt_comm_create(tutti_comm_t *out, int nranks, int rank, const tt_id_t *ids, int nids,
                              const tutti_comm_params_t *params, const tt_lend_t *lend)
{
    join_t join = {.ids = ids, .nids = nids, .up_fd = -1, .lend = lend};
    return comm_join(out, nranks, rank, ids[0].key, &join, params);
}

tutti_status_t tt_comm_create_over(tutti_comm_t *out, int nranks, int rank, const unsigned char *key,
                                   int up_fd, int *rank_fds, const tutti_comm_params_t *params,
                                   const tt_lend_t *lend)
{
    join_t join = {.up_fd = up_fd, .rank_fds = rank_fds, .lend = lend};
    return comm_join(out, nranks, rank, key, &join, params);
}

tutti_comm_params_t tt_comm_inherited(tt_comm_t *comm)
{
    return (tutti_comm_params_t){.field_mask = TUTTI_PARAM_TIMEOUT_MS | TUTTI_PARAM_NODE_ID,
                                 .timeout_ms = comm->timeout_ms,
                                 .node_id = comm->endpoints[comm->rank].node_id};
}

/* The communicator behind handle for destroy and abort, taken out of the
 * registry (abort raises its flag there); NULL when handle is not live
 * (said why), or when this process is a fork of the one that made it:
 * then only this process's copy was released. */
static tt_comm_t *comm_take(tutti_comm_t handle, const char *name, int abort, int *forked)
{
    tt_comm_t *comm = tt_comm_handle_take(handle, abort, forked);
    if (!comm) {
        tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "%s: comm is NULL or already destroyed", name);
        return NULL;
    }
    if (*forked) {
        TT_INFO(TT_SUB_INIT, "%s in process %d, a fork of process %d: releasing only this process's copy",
                name, (int)getpid(), comm->owner_pid);
        comm_free(comm, 1);
        return NULL;
    }
    return comm;
}

TUTTI_API tutti_status_t tutti_comm_destroy(tutti_comm_t handle)
{
    int forked;
    tt_comm_t *comm = comm_take(handle, "tutti_comm_destroy", 0, &forked);
    if (!comm)
        return forked ? TUTTI_SUCCESS : TUTTI_ERR_INVALID_ARG;
    for (int l = TT_LAYER_COUNT - 1; l >= 0; l--)
        if (comm->layers[l].state && comm->layers[l].ops->quiesce)
            comm->layers[l].ops->quiesce(comm, comm->layers[l].state);
    /* Peers may still be draining the last collective's messages from us;
     * the barrier keeps our queues and sockets alive until they are done.
     * The others learn at once that this rank is here, after how many
     * collectives, so one still waiting for another call fails now. */
    tt_log_fault_mark();
    int revoked = atomic_load_explicit(&comm->revoked_by, memory_order_relaxed) >= 0;
    tutti_status_t st =
        comm->failed || revoked ? TUTTI_SUCCESS : tt_bootstrap_leave(&comm->bs, comm->coll_seq);
    if (st)
        tt_comm_context(NULL, st, "rank %d", comm->rank);
    comm_free(comm, 0);
    return st;
}

TUTTI_API tutti_status_t tutti_comm_abort(tutti_comm_t handle)
{
    int forked;
    tt_comm_t *comm = comm_take(handle, "tutti_comm_abort", 1, &forked);
    if (!comm)
        return forked ? TUTTI_SUCCESS : TUTTI_ERR_INVALID_ARG;
    /* Another thread may be inside a collective on comm: the flag makes it
     * return TUTTI_ERR_ABORTED; the connections are touched only once it
     * left and the device proxy (which sees the flag too) stopped. */
    tt_comm_wait_idle(comm, NULL);
    layers_free(comm);
    if (!comm->failed)
        snprintf(comm->last_error, sizeof comm->last_error, "it called tutti_comm_abort");
    tt_comm_fail(comm, TUTTI_ERR_ABORTED);
    comm_free(comm, 0);
    return TUTTI_SUCCESS;
}

/* Enters comm for a call that only reads it into out: a NULL out is
 * comm's error (said as what), and the call is left at once. */
static tutti_status_t enter_to_read(tutti_comm_t handle, const char *call, const void *out, const char *what,
                                    tt_comm_t **comm)
{
    TT_TRY(tt_comm_enter(handle, call, comm));
    if (out)
        return TUTTI_SUCCESS;
    tutti_status_t st = tt_comm_error(*comm, TUTTI_ERR_INVALID_ARG, "%s: NULL output pointer", what);
    tt_comm_leave(*comm);
    return st;
}

TUTTI_API tutti_status_t tutti_comm_rank(tutti_comm_t handle, int *rank)
{
    tt_comm_t *comm;
    TT_TRY(enter_to_read(handle, "tutti_comm_rank", rank, "rank", &comm));
    *rank = comm->rank;
    tt_comm_leave(comm);
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_comm_size(tutti_comm_t handle, int *size)
{
    tt_comm_t *comm;
    TT_TRY(enter_to_read(handle, "tutti_comm_size", size, "size", &comm));
    *size = comm->nranks;
    tt_comm_leave(comm);
    return TUTTI_SUCCESS;
}

uint64_t tt_comm_name(const unsigned char *key)
{
    static const unsigned char label[16] = "tutti comm name";
    unsigned char code[TT_MAC_BYTES];
    uint64_t name;
    tt_mac(key, label, sizeof label, code);
    memcpy(&name, code, sizeof name);
    return name ? name : 1; /* 0 stays free for "none" in the callers' records */
}

TUTTI_API tutti_status_t tutti_comm_id(tutti_comm_t handle, uint64_t *id)
{
    tt_comm_t *comm;
    TT_TRY(enter_to_read(handle, "tutti_comm_id", id, "id", &comm));
    *id = tt_comm_name(comm->env.key);
    tt_comm_leave(comm);
    return TUTTI_SUCCESS;
}
