/* SPDX-License-Identifier: MIT */
/*
 * Why the CUDA runtime found no usable GPU, said as a user should read it.
 * The runtime answers "driver version is insufficient" when there is no
 * driver at all; every layer that asks (device buffers, cuda_ipc, the
 * tools) says the same thing through this.
 */
#ifndef TT_CUDA_WHY_H
#define TT_CUDA_WHY_H

#include <stddef.h>

/*
 * err is the cudaError_t of cudaGetDeviceCount and ndevices its count.
 * Writes "no NVIDIA driver or GPU found (...)", "no NVIDIA GPU found (...)",
 * a driver older than the runtime, or the runtime's own words into why.
 */
void tt_cuda_why(int err, int ndevices, char *why, size_t len);

#endif
