/* SPDX-License-Identifier: MIT */
/* src/cuda/preload.cu, unmodified, compiled for the kernel stand-in. */
#include "cuda/preload.cu"
