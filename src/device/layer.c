/* SPDX-License-Identifier: MIT */
/* The device layer's handle on a communicator: made on first use, and torn down with it. */
#include <stdlib.h>

#include "device/layer.h"

static void layer_quiesce(tutti_comm_t comm, void *state)
{
    (void)state;
    tt_device_drain(comm);
}

static void layer_destroy(tutti_comm_t comm, void *state)
{
    tt_device_layer_t *d = state;
    (void)comm;
    tt_device_queue_stop(d); /* the proxy finishes what is queued first, unless aborting */
    free(d->chunks_to); /* chunks_from with it */
    free(d);
}

static const tt_layer_ops_t device_layer_ops = {.quiesce = layer_quiesce, .destroy = layer_destroy};

tt_device_layer_t *tt_device_layer(tutti_comm_t comm, const char *name)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    if (d)
        return d;
    d = calloc(1, sizeof *d);
    if (d && (d->chunks_to = calloc(2 * (size_t)comm->nranks, sizeof *d->chunks_to)) != NULL)
        d->chunks_from = d->chunks_to + comm->nranks;
    if (!d || !d->chunks_to) {
        free(d);
        tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "%s: no memory for the device layer", name);
        return NULL;
    }
    d->comm = comm;
    tt_comm_layer_set(comm, TT_LAYER_DEVICE, d, &device_layer_ops);
    return d;
}
