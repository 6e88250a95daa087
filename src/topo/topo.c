/* SPDX-License-Identifier: MIT */
/* Paths between devices, this machine's topology, and the one the library shares. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"

#include "core/env_config.h"
#include "core/log.h"

#include "topo/hwloc_lib.h"

tt_path_t tt_topo_path(const tt_topo_t *t, int a, int b, int *links)
{
    const tt_topo_dev_t *x = &t->devs[a], *y = &t->devs[b];
    *links = 0;
    if (a == b)
        return TT_PATH_X;
    if (t->nvlinks[a][b] > 0) {
        *links = t->nvlinks[a][b];
        return TT_PATH_NV;
    }
    if (x->depth == 0 || y->depth == 0 || strcmp(x->bridges[0], y->bridges[0]) != 0)
        return x->numa == y->numa ? TT_PATH_NODE : TT_PATH_SYS;
    /* Same host bridge: how far below it do the two paths part? */
    int common = 1;
    while (common < x->depth && common < y->depth && strcmp(x->bridges[common], y->bridges[common]) == 0)
        common++;
    if (common == 1)
        return TT_PATH_PHB;
    /* A switch is an upstream port with downstream ports below it: two
     * devices each at most one bridge below the shared one cross one switch. */
    return x->depth - common <= 1 && y->depth - common <= 1 ? TT_PATH_PIX : TT_PATH_PXB;
}

void tt_topo_path_name(tt_path_t path, int links, char *out, size_t len)
{
    static const char *const names[] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};
    if (path == TT_PATH_NV)
        snprintf(out, len, "NV%d", links);
    else
        snprintf(out, len, "%s", names[path]);
}

int tt_topo_nearest_nic(const tt_topo_t *t, int d)
{
    int best = -1, links;
    tt_path_t best_path = TT_PATH_SYS;
    for (int i = 0; i < t->ndevs; i++) {
        if (t->devs[i].kind != TT_DEV_NIC || i == d)
            continue;
        tt_path_t p = tt_topo_path(t, d, i, &links);
        if (best < 0 || p < best_path) {
            best = i;
            best_path = p;
        }
    }
    return best;
}

int tt_topo_cpu_numa(int cpu)
{
    for (int node = 0; node < 4096; node++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/node%d", cpu, node);
        if (access(path, F_OK) == 0)
            return node;
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", node);
        if (access(path, F_OK) != 0)
            return -1; /* past the last node */
    }
    return -1;
}

tutti_status_t tt_topo_load_local(tt_topo_t *t, char *err, size_t errlen)
{
#ifdef TT_HAVE_HWLOC
    /* hwloc's view of this machine, read back through the XML reader so
     * that live machines and fixtures take the same path. The topology is
     * loaded once per process and kept: it does not change, and keeping it
     * keeps hwloc's plug-ins loaded (which leak-checkers can then name). */
    static hwloc_topology_t topo;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    char why[160];
    const tt_hwloc_t *hw = tt_hwloc(why, sizeof why);
    if (!hw)
        TT_DEBUG(TT_SUB_INIT, "topology from /sys: %s", why);
    char *xml = NULL;
    int len = 0;
    pthread_mutex_lock(&lock);
    if (hw && !topo && hw->topology_init(&topo) == 0) {
        hw->set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        if (hw->topology_load(topo) != 0) {
            hw->topology_destroy(topo);
            topo = NULL;
        }
    }
    int exported = topo && hw->export_xmlbuffer(topo, &xml, &len, 0) == 0;
    pthread_mutex_unlock(&lock);
    if (exported) {
        tutti_status_t st = tt_topo_parse_xml(t, xml, err, errlen);
        hw->free_xmlbuffer(topo, xml);
        if (st == TUTTI_SUCCESS)
            snprintf(t->source, sizeof t->source, "hwloc %s", hw->version);
        if (st == TUTTI_SUCCESS && !t->host[0])
            gethostname(t->host, sizeof t->host - 1);
        return st;
    }
#endif
    tutti_status_t st = tt_topo_load_sysfs(t, "/", err, errlen);
    if (st == TUTTI_SUCCESS)
        gethostname(t->host, sizeof t->host - 1);
    return st;
}

static tt_topo_t shared_topo;
static int shared_ok;

static void shared_load(void)
{
    char err[256];
    const char *file = tt_config_str(TT_CFG_TOPO_FILE);
    tutti_status_t st = *file ? tt_topo_load_xml(&shared_topo, file, err, sizeof err)
                              : tt_topo_load_local(&shared_topo, err, sizeof err);
    shared_ok = st == TUTTI_SUCCESS;
    if (!shared_ok)
        TT_INFO(TT_SUB_INIT, "no topology (%s): GPU links are priced as PCIe", err);
}

const tt_topo_t *tt_topo_shared(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, shared_load);
    return shared_ok ? &shared_topo : NULL;
}
