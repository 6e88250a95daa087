/* SPDX-License-Identifier: MIT */
/*
 * Link classes: the kinds of connection between two ranks that tutti tells
 * apart. Transports say which class they provide, the topology which class
 * joins two GPUs, and the cost model prices each class.
 */
#ifndef TT_LINK_H
#define TT_LINK_H

/*
 * Every link class, one line each, and everything tutti knows of it:
 * X(ID, name, alpha_us, GB/s, reduce GB/s, cpu_copies, cpu_reduces)
 * - name: what tuning files, tutti-explain and the logs call it;
 * - alpha_us, GB/s, reduce GB/s: the cost model's defaults (a message's
 *   latency in microseconds, its bandwidth, and the bandwidth of reducing
 *   what arrived, 1e9 bytes a second) before tutti-bw --fit measures them:
 *   the host figures are what tutti measures on a small x86 VM
 *   (perf/RESULTS.md), the others typical of PCIe 4 x16, NVLink 3 and HDR
 *   InfiniBand;
 * - cpu_copies, cpu_reduces: 1 where the host's CPUs move, or reduce, the
 *   bytes (so ranks crowded onto fewer CPUs share that time), 0 where DMA
 *   engines or GPU kernels do.
 * A new class is one line here (the enum, names, defaults and the cost
 * model's crowding all follow), and a transport naming it.
 */
#define TT_LINK_LIST(X)                                                                                      \
    X(SHM, "shm", 1.0, 8.0, 10.0, 1, 1)           /* host memory shared on one host */                       \
    X(TCP, "tcp", 15.0, 3.0, 10.0, 1, 1)          /* sockets */                                              \
    X(PCIE, "pcie", 5.0, 20.0, 1000.0, 0, 0)      /* GPU to GPU through PCIe */                              \
    X(NVLINK, "nvlink", 3.0, 150.0, 1000.0, 0, 0) /* GPU to GPU through NVLink (or NVSwitch) */              \
    X(IB, "ib", 3.0, 23.0, 10.0, 0, 1)            /* RDMA: InfiniBand or RoCE */

#define TT_LINK_ENUM(id, ...) TT_LINK_##id,
typedef enum { TT_LINK_LIST(TT_LINK_ENUM) TT_LINK_COUNT } tt_link_t;
#undef TT_LINK_ENUM

/* What TT_LINK_LIST says of one class. */
typedef struct {
    const char *name;
    double alpha_us, gb_per_s, reduce_gb_per_s;
    int cpu_copies, cpu_reduces;
} tt_link_facts_t;

/* The facts of link (a valid class). */
const tt_link_facts_t *tt_link_facts(tt_link_t link);
/* "shm", "tcp", "pcie", "nvlink", "ib"; "unknown" otherwise. */
const char *tt_link_name(tt_link_t link);
/* The class with this name; -1 when none has it. */
int tt_link_named(const char *name, tt_link_t *out);

#endif
