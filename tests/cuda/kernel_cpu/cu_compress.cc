/* SPDX-License-Identifier: MIT */
/* src/cuda/compress.cu, unmodified, compiled for the kernel stand-in. */
#include "cuda/compress.cu"
