/* SPDX-License-Identifier: MIT */
/*
 * Machine topology: packages, NUMA nodes, cores, and the GPUs and NICs on
 * the PCI tree, with how each pair is connected, in the classes of
 * `nvidia-smi topo -m`. Read from an hwloc XML export (a file, or hwloc's
 * view of this machine when tutti is built with hwloc), else from /sys.
 */
#ifndef TT_TOPO_H
#define TT_TOPO_H

#include <stddef.h>

#include "tutti.h"

#define TT_TOPO_MAX_DEVS 64
#define TT_TOPO_MAX_DEPTH 12 /* PCI bridges from the host bridge down */
#define TT_TOPO_LABEL 32

typedef enum { TT_DEV_GPU = 0, TT_DEV_NIC } tt_dev_kind_t;

/* Best first: the order in which a GPU prefers a NIC. */
typedef enum {
    TT_PATH_X = 0, /* the device itself */
    TT_PATH_NV,    /* NVLink (directly or through NVSwitches) */
    TT_PATH_PIX,   /* through at most one PCIe switch */
    TT_PATH_PXB,   /* through several PCIe switches, not the host bridge */
    TT_PATH_PHB,   /* through a PCIe host bridge */
    TT_PATH_NODE,  /* between host bridges of one NUMA node */
    TT_PATH_SYS    /* across the link between NUMA nodes */
} tt_path_t;

typedef struct {
    tt_dev_kind_t kind;
    char name[16];                                  /* GPU0, NIC1 */
    char os_name[TT_TOPO_LABEL];                    /* nvml0, mlx5_0, eth0; "" when unknown */
    char busid[TT_TOPO_LABEL];                      /* 0000:34:00.0 */
    unsigned vendor, pci_class;                     /* 0x10de, 0x0302 */
    int numa;                                       /* -1: unknown */
    char cpus[64];                                  /* CPUs of its NUMA node, "0-23,48-71" */
    int depth;                                      /* bridges below */
    char bridges[TT_TOPO_MAX_DEPTH][TT_TOPO_LABEL]; /* [0]: host bridge */
} tt_topo_dev_t;

typedef struct {
    char source[64];  /* where it came from */
    char machine[96]; /* product name (DMIProductName), "" if unknown */
    char host[64];    /* hostname (hwloc's HostName, or this machine's), "" if unknown */
    int npackages, nnuma, ncores, npus;
    int ndevs, ngpus, nnics;
    tt_topo_dev_t devs[TT_TOPO_MAX_DEVS]; /* GPUs first, then NICs, each in PCI order */
    int nvlinks[TT_TOPO_MAX_DEVS][TT_TOPO_MAX_DEVS];
} tt_topo_t;

/* From an hwloc XML export (hwloc 2 or 3 format). TUTTI_ERR_CONFIG with err
 * set when the file cannot be read or parsed. */
tutti_status_t tt_topo_load_xml(tt_topo_t *t, const char *path, char *err, size_t errlen);
/* From an XML text already in memory (hwloc's export of this machine). */
tutti_status_t tt_topo_parse_xml(tt_topo_t *t, const char *xml, char *err, size_t errlen);
/* This machine: through hwloc when built with it, else /sys. */
tutti_status_t tt_topo_load_local(tt_topo_t *t, char *err, size_t errlen);
/* From a sysfs tree (root "/" for this machine). */
tutti_status_t tt_topo_load_sysfs(tt_topo_t *t, const char *root, char *err, size_t errlen);

/* The topology the library uses, read once per process: TUTTI_TOPO_FILE
 * when set, else this machine's; NULL when neither can be read. */
const tt_topo_t *tt_topo_shared(void);
/* How devices a and b are connected; *links gets the NVLink count for NV. */
tt_path_t tt_topo_path(const tt_topo_t *t, int a, int b, int *links);
/* "X", "NV6", "PIX", ... */
void tt_topo_path_name(tt_path_t path, int links, char *out, size_t len);
/* The NIC nearest to device d (best path class, then lowest index); -1 if none. */
int tt_topo_nearest_nic(const tt_topo_t *t, int d);
/* The NUMA node of a CPU of this machine, from /sys; -1 if unknown. */
int tt_topo_cpu_numa(int cpu);
/* Puts GPUs before NICs, each in PCI bus order, and names them. */
void tt_topo_finish(tt_topo_t *t);

#endif
