/* SPDX-License-Identifier: MIT */
/*
 * Why the CUDA runtime found no usable GPU, said as a user should read it.
 * The runtime answers "driver version is insufficient" when there is no
 * driver at all; every layer that asks (device buffers, cuda_ipc, the
 * tools) says the same thing through this. And what a failed runtime call
 * of tutti's leaves behind, the same way in every layer.
 */
#ifndef TT_CUDA_WHY_H
#define TT_CUDA_WHY_H

#include <stddef.h>

#include "tutti.h"

/*
 * err is the cudaError_t of cudaGetDeviceCount and ndevices its count.
 * Writes "no NVIDIA driver or GPU found (...)", "no NVIDIA GPU found (...)",
 * a driver older than the runtime, or the runtime's own words into why.
 */
void tt_cuda_why(int err, int ndevices, char *why, size_t len);
/*
 * A failed CUDA runtime call of tutti's own (err, a cudaError_t, not 0):
 * its error taken off the thread's last-error state (the application's
 * cudaGetLastError must not report it as its own), the runtime's words for
 * it into said, and its status: TUTTI_ERR_NO_MEMORY, TUTTI_ERR_UNSUPPORTED
 * or TUTTI_ERR_SYSTEM. Only here does tutti read the last error: naming an
 * error later leaves whatever the application has pending.
 */
tutti_status_t tt_cuda_failed(int err, char *said, size_t len);

#endif
