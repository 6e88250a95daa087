/* SPDX-License-Identifier: MIT */
/* src/cuda/wait.cu, unmodified, compiled for the kernel stand-in. */
#include "cuda/wait.cu"
