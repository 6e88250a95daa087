/* SPDX-License-Identifier: MIT */
/*
 * hwloc, opened at run time: libtutti.so and libnccl.so.2 link no hwloc, so
 * both load where it is absent (the topology then comes from /sys). Opened
 * with RTLD_GLOBAL because hwloc's own plug-ins (PCI devices among them)
 * resolve the core's symbols from the global scope.
 */
#ifdef TT_HAVE_HWLOC
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "core/dl.h"
#include "core/log.h"
#include "topo/hwloc_lib.h"

/* Every hwloc 2 release keeps this ABI, under this name. */
#define HWLOC_SONAME "libhwloc.so.15"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static tt_hwloc_t lib;
static int loaded;
static char lib_why[160];

static void load(void)
{
    const tt_dl_sym_t syms[] = {
        {(void **)&lib.get_api_version, "hwloc_get_api_version", 0},
        {(void **)&lib.topology_init, "hwloc_topology_init", 0},
        {(void **)&lib.set_io_types_filter, "hwloc_topology_set_io_types_filter", 0},
        {(void **)&lib.topology_load, "hwloc_topology_load", 0},
        {(void **)&lib.topology_destroy, "hwloc_topology_destroy", 0},
        {(void **)&lib.export_xmlbuffer, "hwloc_topology_export_xmlbuffer", 0},
        {(void **)&lib.free_xmlbuffer, "hwloc_free_xmlbuffer", 0},
    };
    if (!tt_dl_open(HWLOC_SONAME, RTLD_NOW | RTLD_GLOBAL, syms, sizeof syms / sizeof syms[0], "libhwloc15",
                    lib_why, sizeof lib_why))
        return;
    unsigned api = lib.get_api_version();
    if (api >> 16 != HWLOC_API_VERSION >> 16) {
        snprintf(lib_why, sizeof lib_why, "%s has API %#x, tutti was built for %#x", HWLOC_SONAME, api,
                 (unsigned)HWLOC_API_VERSION);
        return;
    }
    snprintf(lib.version, sizeof lib.version, "API %u.%u", api >> 16, (api >> 8) & 0xff);
    loaded = 1;
}

const tt_hwloc_t *tt_hwloc(char *why, size_t len)
{
    pthread_once(&once, load);
    if (!loaded)
        snprintf(why, len, "%s", lib_why);
    return loaded ? &lib : NULL;
}
#endif
