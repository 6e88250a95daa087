/* SPDX-License-Identifier: MIT */
/* src/cuda/reduce.cu, unmodified, compiled for the kernel stand-in. */
#include "cuda/reduce.cu"
