/* SPDX-License-Identifier: MIT */
/* Marks code that runs on both the CPU and, compiled by nvcc, the GPU: the
 * two then give the same bits by construction. */
#ifndef TT_HD_H
#define TT_HD_H

#ifdef __CUDACC__
#define TT_HD __host__ __device__
#else
#define TT_HD
#endif

#endif
