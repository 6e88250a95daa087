/* SPDX-License-Identifier: MIT */
/* src/cuda/scale.cu, unmodified, compiled for the kernel stand-in. */
#include "cuda/scale.cu"
