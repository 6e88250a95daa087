/* SPDX-License-Identifier: MIT */
/* hwloc, opened at run time where tutti was built with its headers. */
#ifndef TT_HWLOC_LIB_H
#define TT_HWLOC_LIB_H

#include <stddef.h>

#ifdef TT_HAVE_HWLOC
#include <hwloc.h>

/* The entry points tutti uses. */
typedef struct {
    unsigned (*get_api_version)(void);
    int (*topology_init)(hwloc_topology_t *topology);
    int (*set_io_types_filter)(hwloc_topology_t topology, enum hwloc_type_filter_e filter);
    int (*topology_load)(hwloc_topology_t topology);
    void (*topology_destroy)(hwloc_topology_t topology);
    int (*export_xmlbuffer)(hwloc_topology_t topology, char **xmlbuffer, int *buflen, unsigned long flags);
    void (*free_xmlbuffer)(hwloc_topology_t topology, char *xmlbuffer);
    char version[16]; /* the API version of the library opened, "API 2.8" */
} tt_hwloc_t;

/* hwloc's entry points (opened once per process), or NULL with why said. */
const tt_hwloc_t *tt_hwloc(char *why, size_t len);
#endif

#endif
