/* SPDX-License-Identifier: MIT */
/*
 * Public communicator handles. A handle is a registry slot and a generation,
 * never the communicator's address: a destroyed handle stays invalid even
 * when a new communicator is allocated where the old one was. A handle also
 * knows the process that made it, so a forked child is refused instead of
 * acting as its parent's rank. The calls inside a communicator are counted
 * here, so an abort from another thread frees it only once they have left;
 * a call asleep inside is woken here; a handle's last error is read here.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/error.h"
#include "comm/handle.h"
#include "core/wake.h"

#define TT_MAX_COMMS 1024
#define SLOT_BITS 11 /* slot index and a tag bit below the generation */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static struct {
    tt_comm_t *comm;
    uintptr_t gen;
} slots[TT_MAX_COMMS];
static uintptr_t next_gen = 1;
/* Bumped in every child at fork(): a communicator made before the fork
 * carries an older value. */
static unsigned fork_epoch;

/* The registry stays usable in a child forked while another thread held it. */
static void before_fork(void)
{
    pthread_mutex_lock(&registry_lock);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&registry_lock);
}

static void after_fork_child(void)
{
    fork_epoch++;
    pthread_mutex_unlock(&registry_lock);
}

static void register_atfork(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* An odd value: no real pointer to a communicator looks like one. */
static tutti_comm_t encode(int slot, uintptr_t gen)
{
    return (tutti_comm_t)(gen << SLOT_BITS | (uintptr_t)slot << 1 | 1u);
}

static int decode(tutti_comm_t handle, uintptr_t *gen)
{
    uintptr_t v = (uintptr_t)handle;
    int slot = (int)(v >> 1 & ((1u << (SLOT_BITS - 1)) - 1));
    *gen = v >> SLOT_BITS;
    return (v & 1u) && slot < TT_MAX_COMMS ? slot : -1;
}

void tt_comm_fork_handlers(void)
{
    pthread_once(&atfork_once, register_atfork);
}

tutti_comm_t tt_comm_handle_new(tt_comm_t *comm)
{
    tt_comm_fork_handlers();
    tutti_comm_t handle = NULL;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < TT_MAX_COMMS && !handle; i++)
        if (!slots[i].comm) {
            slots[i].comm = comm;
            slots[i].gen = next_gen++;
            handle = encode(i, slots[i].gen);
        }
    pthread_mutex_unlock(&registry_lock);
    if (handle) {
        comm->handle = handle;
        comm->fork_epoch = fork_epoch;
        comm->owner_pid = (int)getpid();
    }
    return handle;
}

tt_comm_t *tt_comm_handle_take(tutti_comm_t handle, int abort, int *forked)
{
    uintptr_t gen;
    int slot = decode(handle, &gen);
    tt_comm_t *comm = NULL;
    pthread_mutex_lock(&registry_lock);
    if (slot >= 0 && slots[slot].comm && slots[slot].gen == gen) {
        comm = slots[slot].comm;
        slots[slot].comm = NULL;
        if (abort)
            tt_comm_interrupt(comm);
    }
    *forked = comm && comm->fork_epoch != fork_epoch;
    pthread_mutex_unlock(&registry_lock);
    return comm;
}

tt_comm_t *tt_comm_lookup(tutti_comm_t handle, int *forked)
{
    uintptr_t gen;
    int slot = decode(handle, &gen);
    tt_comm_t *comm = NULL;
    pthread_mutex_lock(&registry_lock);
    if (slot >= 0 && slots[slot].gen == gen)
        comm = slots[slot].comm;
    unsigned epoch = fork_epoch;
    pthread_mutex_unlock(&registry_lock);
    if (forked)
        *forked = comm && comm->fork_epoch != epoch;
    return comm;
}

tutti_status_t tt_comm_enter(tutti_comm_t handle, const char *name, tt_comm_t **out)
{
    uintptr_t gen;
    int slot = decode(handle, &gen);
    tt_comm_t *comm = NULL;
    pthread_mutex_lock(&registry_lock);
    if (slot >= 0 && slots[slot].gen == gen)
        comm = slots[slot].comm;
    int forked = comm && comm->fork_epoch != fork_epoch;
    if (comm && !forked)
        comm->busy++;
    pthread_mutex_unlock(&registry_lock);
    *out = NULL;
    if (!comm)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "%s: comm is NULL, destroyed or aborted", name);
    if (forked)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG,
                             "%s: comm belongs to process %d; this process (%d) is a fork of it and cannot "
                             "use it (make a new communicator here; see tutti_comm(3))",
                             name, comm->owner_pid, (int)getpid());
    *out = comm;
    return TUTTI_SUCCESS;
}

void tt_comm_leave(tt_comm_t *comm)
{
    pthread_mutex_lock(&registry_lock);
    comm->busy--;
    pthread_mutex_unlock(&registry_lock);
}

void tt_comm_interrupt(tt_comm_t *comm)
{
    atomic_store_explicit(&comm->aborting, 1, memory_order_relaxed);
    tt_comm_wake(comm); /* a call asleep in the engine sees the flag now */
}

/* The engine sees the flag of tt_comm_interrupt within one poll, so this is short. */
void tt_comm_wait_idle(tt_comm_t *comm, _Atomic int *keep)
{
    for (;;) {
        pthread_mutex_lock(&registry_lock);
        int busy = comm->busy;
        pthread_mutex_unlock(&registry_lock);
        if (busy <= (keep ? atomic_load_explicit(keep, memory_order_relaxed) : 0))
            return;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

TUTTI_API const char *tutti_comm_last_error(tutti_comm_t handle)
{
    int forked;
    tt_comm_t *comm = tt_comm_lookup(handle, &forked);
    return comm && !forked ? comm->last_error : tt_comm_thread_error();
}

void tt_comm_wake(tt_comm_t *comm)
{
    tt_wake_ring(comm->wake_fd);
}
