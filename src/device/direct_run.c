/* SPDX-License-Identifier: MIT */
/*
 * Direct runs (see direct_run.h). The first one prices the GPU links:
 * each pair's class comes from the topology (NVLink where the GPUs of the
 * two ranks are joined by it, else the device transport's own class), and
 * a policy of its own keeps the tuner's picks for GPU links apart from
 * those for the host links.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "device/direct_run.h"
#include "device/layer.h"
#include "topo/topo.h"

int tt_direct_prepare(tutti_comm_t comm, int device)
{
    if (!tt_comm_device_bind(comm, device))
        return 0;
    const tt_device_ops_t *dev = comm->tp_ops[comm->device_tp]->device;
    return dev->open_peers(comm->tp_ctx[comm->device_tp]);
}

/* The topology's device index with this PCI bus id; -1 if absent. */
static int device_with_bus_id(const tt_topo_t *t, const char *bus_id)
{
    for (int i = 0; i < t->ndevs; i++)
        if (strcasecmp(t->devs[i].busid, bus_id) == 0)
            return i;
    return -1;
}

/* Every pair's GPU link class, from the bus ids every rank published. */
static tutti_status_t gpu_links(tutti_comm_t comm, tt_device_layer_t *d)
{
    int p = comm->nranks;
    const tt_transport_ops_t *ops = comm->tp_ops[comm->device_tp];
    void *ctx = comm->tp_ctx[comm->device_tp];
    d->direct_links = malloc((size_t)p * (size_t)p * sizeof *d->direct_links);
    int *dev = malloc((size_t)p * sizeof *dev);
    if (!d->direct_links || !dev) {
        free(dev);
        return tt_comm_error(comm, TUTTI_ERR_NO_MEMORY, "direct run: no memory for the GPU link classes");
    }
    const tt_topo_t *topo = tt_topo_shared();
    for (int r = 0; r < p; r++) {
        char bus[64];
        dev[r] =
            topo && ops->device->bus_id(ctx, r, bus, sizeof bus) == 0 ? device_with_bus_id(topo, bus) : -1;
    }
    for (int a = 0; a < p; a++)
        for (int b = 0; b < p; b++) {
            int links = 0;
            int nv = dev[a] >= 0 && dev[b] >= 0 && dev[a] != dev[b] &&
                     tt_topo_path(topo, dev[a], dev[b], &links) == TT_PATH_NV;
            d->direct_links[(size_t)a * (size_t)p + (size_t)b] = nv ? TT_LINK_NVLINK : ops->link;
        }
    free(dev);
    d->direct_policy = comm->policy;
    tt_cost_model_t *m = &d->direct_policy.tuner.model;
    memset(d->direct_policy.tuner.cache, 0, sizeof d->direct_policy.tuner.cache);
    m->crowding = 1; /* kernels and copy engines do the work, not the CPUs */
    tt_cost_use_links(m, &comm->hosts, d->direct_links, p);
    d->direct_tuned = 1;
    TT_DEBUG(TT_SUB_COLL, "direct runs: rank 0 to 1 over %s", tt_link_name(m->intra));
    return TUTTI_SUCCESS;
}

tutti_status_t tt_direct_run(tutti_comm_t comm, const tt_call_t *c, uint64_t seq)
{
    tt_device_layer_t *d = tt_device_layer(comm, tt_coll_name(c->coll));
    if (!d)
        return TUTTI_ERR_NO_MEMORY;
    if (!d->direct_tuned)
        TT_TRY(gpu_links(comm, d));
    const tt_device_ops_t *dev = comm->tp_ops[comm->device_tp]->device;
    tt_route_t route = {.peers = comm->device_peers,
                        .mem = dev->mem(comm->tp_ctx[comm->device_tp]),
                        .policy = &d->direct_policy};
    TT_TRY(tt_coll_run_at(comm, c, seq, &route));
    d->direct_runs++;
    return TUTTI_SUCCESS;
}

uint64_t tt_direct_runs(tutti_comm_t comm)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    return d ? d->direct_runs : 0;
}

int tt_direct_link(tutti_comm_t comm, int a, int b)
{
    tt_device_layer_t *d = tt_comm_layer(comm, TT_LAYER_DEVICE);
    return d && d->direct_tuned ? (int)d->direct_links[(size_t)a * (size_t)comm->nranks + (size_t)b] : -1;
}
