/* SPDX-License-Identifier: MIT */
/* src/cuda/compress_coll.cu, unmodified, compiled for the kernel stand-in. */
#include "cuda/compress_coll.cu"
