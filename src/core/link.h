/* SPDX-License-Identifier: MIT */
/*
 * Link classes: the kinds of connection between two ranks that tutti tells
 * apart. Transports say which class they provide, the topology which class
 * joins two GPUs, and the cost model prices each class.
 */
#ifndef TT_LINK_H
#define TT_LINK_H

typedef enum {
    TT_LINK_SHM = 0, /* host memory shared on one host */
    TT_LINK_TCP,     /* sockets */
    TT_LINK_PCIE,    /* GPU to GPU through PCIe */
    TT_LINK_NVLINK,  /* GPU to GPU through NVLink (or NVSwitch) */
    TT_LINK_IB,      /* RDMA: InfiniBand or RoCE */
    TT_LINK_COUNT
} tt_link_t;

/* "shm", "tcp", "pcie", "nvlink", "ib"; "unknown" otherwise. */
const char *tt_link_name(tt_link_t link);
/* The class with this name; -1 when none has it. */
int tt_link_named(const char *name, tt_link_t *out);

#endif
