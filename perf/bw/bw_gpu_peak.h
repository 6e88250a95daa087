/* SPDX-License-Identifier: MIT */
/*
 * What a GPU's links should carry, from what is detected: the PCIe link's
 * generation and width from sysfs, the active NVLinks and their version
 * from NVML (opened at run time, where the driver installs it).
 */
#ifndef TT_BW_GPU_PEAK_H
#define TT_BW_GPU_PEAK_H

#include <stddef.h>

typedef struct {
    int gen, width;  /* 0 when sysfs does not say */
    double gt_per_s; /* transfer rate per lane */
    double gbps;     /* data rate each way after line encoding, GB/s */
} tt_pcie_link_t;

/* The current PCIe link of the device at busid ("0000:17:00.0") under a
 * sysfs tree rooted at root ("/" for this machine). 0, or -1 if unknown. */
int tt_bw_pcie_link(const char *root, const char *busid, tt_pcie_link_t *out);

/* Active NVLinks of the GPU at busid and their combined rate each way in
 * GB/s, from NVML; 0 links (and why) where NVML is absent or says none. */
int tt_bw_nvlinks(const char *busid, double *gbps, int *version, char *why, size_t len);

#endif
