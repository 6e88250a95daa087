/* SPDX-License-Identifier: MIT */
/*
 * A tensor's error-feedback state: the worker error (what this rank did
 * not send of each element) and the server error (what the owner of a
 * chunk lost compressing the sum again). Calls queued on a stream hold the
 * state; every public call that reads or changes it waits until none does.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "compress/allreduce.h"
#include "device/queue.h"

TUTTI_API tutti_status_t tutti_ef_create(tutti_ef_state_t *state, size_t count, int nranks)
{
    if (!state || nranks < 1)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "tutti_ef_create: %s",
                             !state ? "state: NULL output pointer" : "nranks must be >= 1");
    *state = calloc(1, sizeof **state);
    if (!*state)
        return TUTTI_ERR_NO_MEMORY;
    (*state)->count = count;
    (*state)->nranks = nranks;
    pthread_mutex_init(&(*state)->lock, NULL);
    pthread_cond_init(&(*state)->idle, NULL);
    (*state)->worker = calloc(count ? count : 1, sizeof(float));
    (*state)->server = calloc(tt_block_count(count, nranks, 0) + 1, sizeof(float));
    if (!(*state)->worker || !(*state)->server) {
        tutti_ef_destroy(*state);
        *state = NULL;
        return TUTTI_ERR_NO_MEMORY;
    }
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_ef_reset(tutti_ef_state_t state)
{
    if (!state)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "tutti_ef_reset: state is NULL");
    tt_ef_wait_idle(state);
    memset(state->worker, 0, (state->count ? state->count : 1) * sizeof(float));
    memset(state->server, 0, (tt_block_count(state->count, state->nranks, 0) + 1) * sizeof(float));
    state->server_count = 0;
    state->worker_on_device = 0; /* the next device call copies the zeroes over */
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_ef_regroup(tutti_ef_state_t state, int nranks, tutti_op_t op)
{
    if (!state || nranks < 1)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "tutti_ef_regroup: %s",
                             !state ? "state is NULL" : "nranks must be >= 1");
    TT_TRY(tt_ef_worker_to_host(state));
    float *server = calloc(tt_block_count(state->count, nranks, 0) + 1, sizeof(float));
    if (!server)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_ef_regroup: no memory");
    /* The server error is owed to the result; this rank's contribution
     * reaches the result divided by nranks under avg. */
    float scale = op == TUTTI_AVG ? (float)nranks : 1.0f;
    for (size_t i = 0; i < state->server_count; i++)
        state->worker[state->server_off + i] += scale * state->server[i];
    free(state->server);
    state->server = server;
    state->server_count = 0;
    state->nranks = nranks;
    state->worker_on_device = 0; /* the next device call copies the worker error over */
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_ef_destroy(tutti_ef_state_t state)
{
    if (state) {
        tt_ef_wait_idle(state);
        tt_ef_free_device(state);
        pthread_cond_destroy(&state->idle);
        pthread_mutex_destroy(&state->lock);
        free(state->worker);
        free(state->server);
        free(state);
    }
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_ef_errors(tutti_ef_state_t state, const float **worker, size_t *worker_count,
                                         const float **server, size_t *server_count)
{
    if (!state || !worker || !worker_count || !server || !server_count)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "tutti_ef_errors: NULL argument");
    tt_ef_wait_idle(state); /* calls queued with it come first */
    TT_TRY(tt_ef_worker_to_host(state));
    *worker = state->worker;
    *worker_count = state->count;
    *server = state->server_count ? state->server : NULL;
    *server_count = state->server_count;
    return TUTTI_SUCCESS;
}

void tt_ef_call_queued(tutti_ef_state_t ef)
{
    pthread_mutex_lock(&ef->lock);
    ef->queued++;
    pthread_mutex_unlock(&ef->lock);
}

void tt_ef_call_finished(tutti_ef_state_t ef)
{
    pthread_mutex_lock(&ef->lock);
    if (--ef->queued == 0)
        pthread_cond_broadcast(&ef->idle);
    pthread_mutex_unlock(&ef->lock);
}

void tt_ef_wait_idle(tutti_ef_state_t ef)
{
    pthread_mutex_lock(&ef->lock);
    while (ef->queued)
        pthread_cond_wait(&ef->idle, &ef->lock);
    pthread_mutex_unlock(&ef->lock);
}
