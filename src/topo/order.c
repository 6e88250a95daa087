/* SPDX-License-Identifier: MIT */
/* The step every topology loader (xml.c, sysfs.c) ends with: the devices
 * put in order, GPUs before NICs, each in PCI bus order, and named. */
#include <stdio.h>
#include <string.h>

#include "topo/topo.h"

static int dev_order(const tt_topo_dev_t *a, const tt_topo_dev_t *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return strcmp(a->busid, b->busid);
}

void tt_topo_finish(tt_topo_t *t)
{
    /* Selection sort, moving the NVLink rows and columns along. */
    for (int i = 0; i < t->ndevs; i++) {
        int min = i;
        for (int j = i + 1; j < t->ndevs; j++)
            if (dev_order(&t->devs[j], &t->devs[min]) < 0)
                min = j;
        if (min == i)
            continue;
        tt_topo_dev_t d = t->devs[i];
        t->devs[i] = t->devs[min];
        t->devs[min] = d;
        for (int k = 0; k < t->ndevs; k++) {
            int v = t->nvlinks[i][k];
            t->nvlinks[i][k] = t->nvlinks[min][k];
            t->nvlinks[min][k] = v;
        }
        for (int k = 0; k < t->ndevs; k++) {
            int v = t->nvlinks[k][i];
            t->nvlinks[k][i] = t->nvlinks[k][min];
            t->nvlinks[k][min] = v;
        }
    }
    t->ngpus = t->nnics = 0;
    for (int i = 0; i < t->ndevs; i++) {
        tt_topo_dev_t *d = &t->devs[i];
        if (d->kind == TT_DEV_GPU)
            snprintf(d->name, sizeof d->name, "GPU%d", t->ngpus++);
        else
            snprintf(d->name, sizeof d->name, "NIC%d", t->nnics++);
    }
}
