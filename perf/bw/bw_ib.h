/* SPDX-License-Identifier: MIT */
/* The rate of this machine's RDMA ports, asked of libibverbs (opened with dlopen). */
#ifndef TT_BW_IB_H
#define TT_BW_IB_H

#include <stddef.h>

/* The fastest active port's data rate in GB/s (width x lane speed, after
 * encoding), with its name in what ("mlx5_0 port 1: 4x HDR"); 0 with the
 * reason in what when there is none. */
double tt_bw_ib_rate_gbps(char *what, size_t len);

#endif
